import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { SessionsService } from '../services/sessions';

/** The gateway's authentication of a session token: the session's user, environment and roles. */
export const authenticateSession =
  (sessions: SessionsService) =>
  async (req: identity.AuthenticateSessionRequest, call: CallContext): Promise<identity.SessionPrincipal> => {
    const { session, user } = await sessions.authenticate(req.token, call);
    return {
      sessionId: session.id,
      userId: user.id,
      environment: session.environment,
      roles: user.roles,
      expiresAt: session.expires_at.toISOString(),
      email: user.email,
      amr: session.amr,
      acr: session.acr,
      mfaAt: session.mfa_at?.toISOString(),
    };
  };
