import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { proofOf, toCreatedSession } from './messages';

export const completeMfaLogin =
  (mfa: MfaService) =>
  async (req: identity.CompleteMfaLoginRequest, call: CallContext): Promise<identity.CreatedSession> =>
    toCreatedSession(await mfa.completeLogin(environmentOf(req.environment), req.mfaToken, proofOf(req.proof), { ip: req.ip, userAgent: req.userAgent }, call));
