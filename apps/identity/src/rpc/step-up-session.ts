import type { identity } from '@secsvc/proto';
import { AppError, callerOf, environmentOf, type CallContext } from '@secsvc/shared';
import type { MfaService } from '../services/mfa';
import { proofOf, toSessionMessage } from './messages';

/** The session's own user steps it up (the gateway passes the session of the caller's credential). */
export const stepUpSession =
  (mfa: MfaService) =>
  async (req: identity.StepUpSessionRequest, call: CallContext): Promise<identity.Session> => {
    const { actor } = callerOf(call);
    if (actor.type !== 'user' || !actor.id) throw new AppError('forbidden', 'Only the session\'s own user can step it up');
    const userId = actor.id;
    const row = await mfa.stepUp(environmentOf(req.environment), { sessionId: req.sessionId, userId, proof: proofOf(req.proof), challengeId: req.challengeId, ip: req.ip }, call);
    return toSessionMessage(row);
  };
