import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { toCreatedSession } from './messages';

export const completePasskeyLogin =
  (mfa: MfaService) =>
  async (req: identity.CompletePasskeyLoginRequest, call: CallContext): Promise<identity.CreatedSession> =>
    toCreatedSession(await mfa.completePasskeyLogin(environmentOf(req.environment), req, call));
