import type { identity } from '@secsvc/proto';
import { AppError, type CallContext } from '@secsvc/shared';
import type { IdentityContext } from '../context';
import { hashSessionToken, looksLikeSessionToken } from '../domain/sessions';
import { signJwt, type SigningKeyStore } from '../domain/signing-keys';
import { recordAuthFailure } from '../repositories/outbox';
import { sessionsRepository } from '../repositories/sessions';
import { usersRepository } from '../repositories/users';

/**
 * A short-lived ES256 JWT for an active session: iss, sub (user id), aud, iat, exp, jti, sid, env, roles, email
 * (the holder's own; audit entries name the actor by it). It never outlives its session.
 */
export const issueAccessToken =
  (ctx: IdentityContext, keys: SigningKeyStore) =>
  async (req: identity.IssueAccessTokenRequest): Promise<identity.AccessToken> => {
    // The session token is the credential of this exchange: an unknown, expired or revoked one is 401.
    const refused = new AppError('unauthorized', 'Invalid or expired session token', [{ field: 'sessionToken', message: 'invalid or expired session token' }]);
    if (!looksLikeSessionToken(req.sessionToken)) throw refused;
    const session = await sessionsRepository.findActiveByHash(ctx.pool, null, hashSessionToken(req.sessionToken, ctx.config.SERVER_SECRET));
    if (!session) throw refused;
    // The user's roles at issue time: the gateway authorizes JWT callers with them (stale at most one lifetime).
    const user = await usersRepository.get(ctx.pool, session.environment, session.user_id);
    if (!user) throw refused;
    const now = Math.floor(Date.now() / 1000);
    const exp = Math.min(now + ctx.config.ACCESS_TOKEN_TTL_SECONDS, Math.floor(session.expires_at.getTime() / 1000));
    const accessToken = await signJwt(
      keys,
      'at+jwt',
      { sid: session.id, env: session.environment, roles: user.roles, email: user.email },
      { issuer: ctx.config.ISSUER, subject: session.user_id, audience: ctx.config.JWT_AUDIENCE, issuedAt: now, expiresAt: exp },
    );
    return { accessToken, expiresIn: exp - now, sessionId: session.id };
  };

export const getJwks = (keys: SigningKeyStore) => async (): Promise<identity.Jwks> => ({ jwksJson: JSON.stringify((await keys.get()).jwks) });

/** auth.failed for a JWT the gateway refused (the reason is a short code from a fixed set; nothing else). */
export const reportAuthFailure =
  (ctx: IdentityContext) =>
  async (req: identity.ReportAuthFailureRequest, call: CallContext): Promise<identity.ReportAuthFailureResponse> => {
    const reason = /^[a-z_]{1,40}$/.test(req.reason) ? req.reason : 'other';
    await recordAuthFailure(ctx.pool, call, 'jwt', '', reason, ctx.logger);
    return {};
  };
