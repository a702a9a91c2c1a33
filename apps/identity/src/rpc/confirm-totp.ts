import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toFactorMessage } from './messages';

export const confirmTotp =
  (mfa: MfaService) =>
  async (req: identity.ConfirmTotpRequest, call: CallContext): Promise<identity.MfaFactor> =>
    toFactorMessage(await mfa.confirmTotp(environmentOf(req.environment), req.userId, req.factorId, req.code, req.ip, call));
