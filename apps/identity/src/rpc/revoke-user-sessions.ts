import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { SessionsService } from '../services/sessions';

export const revokeUserSessions =
  (sessions: SessionsService) =>
  async (req: identity.RevokeUserSessionsRequest, call: CallContext): Promise<identity.RevokeUserSessionsResponse> => ({
    revoked: await sessions.revokeAllOfUser(environmentOf(req.environment), req.userId, call, req.sessionId),
  });
