import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { SessionsService } from '../services/sessions';

export const revokeSession =
  (sessions: SessionsService) =>
  async (req: identity.RevokeSessionRequest, call: CallContext): Promise<identity.RevokeSessionResponse> =>
    sessions.revoke(environmentOf(req.environment), req.token, call);
