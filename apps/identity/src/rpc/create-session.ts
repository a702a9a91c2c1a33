import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { SessionsService } from '../services/sessions';
import { toCreatedSession } from './messages';

export const createSession =
  (sessions: SessionsService) =>
  async (req: identity.CreateSessionRequest, call: CallContext): Promise<identity.CreatedSession> =>
    toCreatedSession(await sessions.create(environmentOf(req.environment), req, call));
