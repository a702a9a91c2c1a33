import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toFactorMessage } from './messages';

export const updateMfaFactor =
  (mfa: MfaService) =>
  async (req: identity.UpdateMfaFactorRequest, call: CallContext): Promise<identity.MfaFactor> =>
    toFactorMessage(await mfa.rename(environmentOf(req.environment), req.userId, req.factorId, req.name, call));
