import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { SessionsService } from '../services/sessions';
import { toSessionMessage } from './messages';

export const listUserSessions =
  (sessions: SessionsService) =>
  async (req: identity.ListUserSessionsRequest): Promise<identity.ListUserSessionsResponse> => ({
    sessions: (await sessions.listOfUser(environmentOf(req.environment), req.userId)).map(toSessionMessage),
  });
