import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { SessionsService } from '../services/sessions';
import { toSessionMessage, toUserMessage } from './messages';

export const verifySession =
  (sessions: SessionsService) =>
  async (req: identity.VerifySessionRequest): Promise<identity.VerifySessionResponse> => {
    const verified = await sessions.verify(environmentOf(req.environment), req.token);
    if (!verified) return { valid: false };
    return { valid: true, user: toUserMessage(verified.user), session: toSessionMessage(verified.session) };
  };
