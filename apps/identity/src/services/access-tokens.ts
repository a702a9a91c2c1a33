import { AppError } from '@secsvc/shared';
import type { IdentityConfig } from '../config';
import { authenticationClaims, authenticationOfSession } from '../domain/oauth';
import { hashSessionToken, looksLikeSessionToken } from '../domain/sessions';
import { signJwt, type SigningKeyStore } from '../domain/signing-keys';
import type { Database } from './ports';
import type { SessionsRepository } from './sessions';
import type { UsersRepository } from './users';

export interface AccessTokensDeps {
  db: Database;
  sessions: Pick<SessionsRepository, 'findActiveByHash'>;
  users: Pick<UsersRepository, 'get'>;
  keys: Pick<SigningKeyStore, 'get'>;
  config: Pick<IdentityConfig, 'SERVER_SECRET' | 'ISSUER' | 'JWT_AUDIENCE' | 'ACCESS_TOKEN_TTL_SECONDS'>;
}

/** Access tokens (JWTs) for sessions, and the public keys that verify them. */
export class AccessTokensService {
  constructor(private readonly deps: AccessTokensDeps) {}

  /**
   * A short-lived ES256 JWT for an active session: iss, sub (user id), aud, iat, exp, jti, sid, env, roles, email
   * (the holder's own; audit entries name the actor by it), and how the user authenticated: amr, acr and
   * auth_time (the session's latest MFA, else its login; RFC 9068 2.2.1). It never outlives its session.
   */
  async issue(sessionToken: string): Promise<{ accessToken: string; expiresIn: number; sessionId: string }> {
    const { db, sessions, users, keys, config } = this.deps;
    // The session token is the credential of this exchange: an unknown, expired or revoked one is 401.
    const refused = new AppError('unauthorized', 'Invalid or expired session token', [{ field: 'sessionToken', message: 'invalid or expired session token' }]);
    if (!looksLikeSessionToken(sessionToken)) throw refused;
    const session = await sessions.findActiveByHash(db.pool, null, hashSessionToken(sessionToken, config.SERVER_SECRET));
    if (!session) throw refused;
    // The user's roles at issue time: the gateway authorizes JWT callers with them (stale at most one lifetime).
    const user = await users.get(db.pool, session.environment, session.user_id);
    if (!user) throw refused;
    const now = Math.floor(Date.now() / 1000);
    const exp = Math.min(now + config.ACCESS_TOKEN_TTL_SECONDS, Math.floor(session.expires_at.getTime() / 1000));
    const accessToken = await signJwt(
      keys,
      'at+jwt',
      { sid: session.id, env: session.environment, roles: user.roles, email: user.email, ...authenticationClaims(authenticationOfSession(session)) },
      { issuer: config.ISSUER, subject: session.user_id, audience: config.JWT_AUDIENCE, issuedAt: now, expiresAt: exp },
    );
    return { accessToken, expiresIn: exp - now, sessionId: session.id };
  }

  /** The JWKS of every key still published, as JSON text. */
  async jwksJson(): Promise<string> {
    return JSON.stringify((await this.deps.keys.get()).jwks);
  }
}
