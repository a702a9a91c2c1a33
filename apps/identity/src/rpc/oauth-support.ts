import { callerOf, withTransaction, type CallContext, type Pool, type PoolClient } from '@secsvc/shared';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import type { IdentityContext } from '../context';
import { sameHash, hashOpaqueToken, generateOpaqueToken } from '../domain/opaque-tokens';
import { atHash, USER_SCOPES } from '../domain/oauth';
import { signJwt, type SigningKeyStore } from '../domain/signing-keys';
import { appendEvent } from '../repositories/outbox';
import { oauthClientsRepository, oauthGrantsRepository, oauthRefreshTokensRepository, type GrantRow, type OAuthClientRow } from '../repositories/oauth';
import { passwordsRepository } from '../repositories/passwords';
import type { UserRow } from '../repositories/users';
import { ACCOUNT_FAILURE_LIMIT, IP_FAILURE_LIMIT } from './passwords';

type Db = Pool | PoolClient;

// What the token, revocation and introspection endpoints share: client authentication (throttled like
// logins), the issuing of tokens and the OAuth events.

export const CLIENT_SECRET_PREFIX = 'ocs_';
export const CODE_PREFIX = 'ocd_';
export const REFRESH_TOKEN_PREFIX = 'ort_';

export const hashClientSecret = (secret: string, serverSecret: string) => hashOpaqueToken('oauth-client-secret', secret, serverSecret);
export const hashCode = (code: string, serverSecret: string) => hashOpaqueToken('oauth-code', code, serverSecret);
export const hashRefreshToken = (token: string, serverSecret: string) => hashOpaqueToken('oauth-refresh', token, serverSecret);

/** An OAuth error answer: RFC 6749 error code, description and the HTTP status to send. */
export interface Failure {
  error: string;
  errorDescription: string;
  status: number;
  retryAfterSeconds: number;
}

export const failure = (error: string, errorDescription: string, status = 400, retryAfterSeconds = 0): Failure => ({
  error,
  errorDescription,
  status,
  retryAfterSeconds,
});

export const isFailure = (x: unknown): x is Failure => typeof x === 'object' && x !== null && 'error' in x && 'status' in x;

/** The key failed client authentications are counted under, per client (as failed logins are per account). */
const throttleKey = (clientId: string) => `oauth-client:${clientId.slice(0, 64)}`;

/**
 * RFC 6749 2.3: confidential clients authenticate with their secret (HTTP Basic or in the body), public
 * clients with their client_id alone; a public client presenting a secret is refused. Failures are counted
 * per client and per ip like failed logins: past 5 per client or 20 per ip in 15 minutes a failure is
 * answered 429 instead of 401. A correct secret is always accepted: secrets are 256 random bits, so the
 * throttle only stops noise, and nobody can lock a client out by sending it wrong secrets.
 */
export async function authenticateClient(
  ctx: IdentityContext,
  req: { clientId: string; clientSecret: string; clientAuthMethod: string },
  call: CallContext,
): Promise<OAuthClientRow | Failure> {
  const client = /^cli_[0-9a-z]{26}$/.test(req.clientId) ? await oauthClientsRepository.get(ctx.pool, null, req.clientId) : undefined;
  const refuse = async (description: string): Promise<Failure> => {
    const ip = callerOf(call).context.ip || 'unknown';
    const environment = client?.environment ?? 'live';
    const key = throttleKey(req.clientId);
    await passwordsRepository.recordFailure(ctx.pool, environment, key, ip);
    const f = await passwordsRepository.failures(ctx.pool, environment, key, ip);
    if (f.account > ACCOUNT_FAILURE_LIMIT || f.by_ip > IP_FAILURE_LIMIT) {
      const wait = Math.max(1, f.account > ACCOUNT_FAILURE_LIMIT ? (f.account_wait ?? 1) : 0, f.by_ip > IP_FAILURE_LIMIT ? (f.ip_wait ?? 1) : 0);
      return failure('temporarily_unavailable', 'Too many failed client authentications; try again later', 429, wait);
    }
    return failure('invalid_client', description, 401);
  };
  if (!req.clientId) return refuse('client_id: is required (client authentication failed)');
  if (!client) return refuse('client_id: unknown client');
  if (client.type === 'public') {
    if (req.clientSecret || req.clientAuthMethod !== 'none') return refuse('a public client authenticates with its client_id alone; it has no secret');
    return client;
  }
  if (!req.clientSecret || req.clientAuthMethod === 'none') return refuse('client authentication is required for a confidential client');
  const presented = hashClientSecret(req.clientSecret, ctx.config.SERVER_SECRET);
  if (!client.secret_hash || !sameHash(client.secret_hash, presented)) return refuse('invalid client credentials');
  return client;
}

/** An OAuth event (oauth.*), in the caller's transaction when given one. */
export function oauthEvent(
  db: Db,
  call: CallContext,
  type: string,
  environment: string,
  actor: { id?: string; email?: string; type: string },
  target: { id: string; type: string } | undefined,
  result: 'success' | 'failure',
  metadata: Record<string, unknown>,
): Promise<string> {
  return appendEvent(db, {
    actor,
    context: callerOf(call).context,
    environment,
    type,
    target,
    result,
    traceId: call.requestId,
    metadata: { authMethod: 'oauth', ...metadata },
  });
}

export const grantTarget = (grantId: string) => ({ id: grantId, type: 'oauth_grant' });
export const actorOf = (grant: Pick<GrantRow, 'user_id' | 'client_id'>) =>
  grant.user_id ? { id: grant.user_id, type: 'user' } : { id: grant.client_id, type: 'oauth_client' };

export interface IssuedTokens {
  accessToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  scope: string;
  refreshToken: string;
  idToken: string;
}

/** A new refresh token of the grant (in the caller's transaction) when it holds offline_access, else ''. */
export async function storeRefreshToken(ctx: IdentityContext, db: Db, grant: GrantRow): Promise<string> {
  if (!grant.scopes.includes('offline_access')) return '';
  const refreshToken = generateOpaqueToken(REFRESH_TOKEN_PREFIX);
  await oauthRefreshTokensRepository.insert(db, hashRefreshToken(refreshToken, ctx.config.SERVER_SECRET), grant.id, ctx.config.OAUTH_REFRESH_TOKEN_TTL_SECONDS);
  return refreshToken;
}

/**
 * Signs the tokens of one grant (after its transaction committed, so no row stays locked meanwhile): an
 * access token (JWT, aud = the API, `scope`, `client_id`, sid = the grant) and an ID token when `scopes`
 * hold openid.
 */
export async function signTokens(
  ctx: IdentityContext,
  keys: SigningKeyStore,
  grant: GrantRow,
  scopes: string[],
  user: UserRow | undefined,
  refreshToken: string,
  nonce?: string | null,
): Promise<IssuedTokens> {
  const now = Math.floor(Date.now() / 1000);
  const exp = now + ctx.config.ACCESS_TOKEN_TTL_SECONDS;
  const scope = scopes.join(' ');
  const subject = grant.user_id ?? grant.client_id;
  // The email only when the client was granted it (scope email): it names the actor of audit entries.
  const claims = {
    sid: grant.id,
    env: grant.environment,
    scope,
    client_id: grant.client_id,
    ...(user ? { roles: user.roles } : {}),
    ...(user && scopes.includes('email') ? { email: user.email } : {}),
  };
  const std = { issuer: ctx.config.ISSUER, subject, issuedAt: now, expiresAt: exp };
  const accessToken = await signJwt(keys, 'at+jwt', claims, { ...std, audience: ctx.config.JWT_AUDIENCE });
  let idToken = '';
  if (user && scopes.includes('openid')) {
    const idClaims: Record<string, unknown> = { azp: grant.client_id, at_hash: atHash(accessToken) };
    if (nonce) idClaims.nonce = nonce;
    if (grant.auth_time) idClaims.auth_time = Math.floor(grant.auth_time.getTime() / 1000);
    Object.assign(idClaims, userClaims(user, scopes));
    idToken = await signJwt(keys, 'JWT', idClaims, { ...std, audience: grant.client_id });
  }
  return { accessToken, tokenType: 'Bearer', expiresIn: exp - now, scope, refreshToken, idToken };
}

/** The OpenID Connect claims `scopes` release about a user (profile: name, updated_at; email: email, email_verified). */
export function userClaims(user: Pick<UserRow, 'name' | 'email' | 'email_verified' | 'updated_at'>, scopes: string[]): Record<string, unknown> {
  return {
    ...(scopes.includes('profile') ? { name: user.name, updated_at: Math.floor(user.updated_at.getTime() / 1000) } : {}),
    ...(scopes.includes('email') ? { email: user.email, email_verified: user.email_verified } : {}),
  };
}

/** Scopes of a client_credentials token must be API scopes: the user ones have no user to speak of. */
export const apiScopesOf = (scopes: string[]) => scopes.filter((s) => !USER_SCOPES.has(s));

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** The claims of one of our access tokens (signature, iss, aud and exp checked), or undefined. */
export async function verifyAccessToken(ctx: IdentityContext, keys: SigningKeyStore, token: string): Promise<AccessClaims | undefined> {
  if (!JWT_SHAPE.test(token) || token.length > 4096) return undefined;
  try {
    const { payload } = await jwtVerify(token, createLocalJWKSet((await keys.get()).jwks as JSONWebKeySet), {
      issuer: ctx.config.ISSUER,
      audience: ctx.config.JWT_AUDIENCE,
      algorithms: ['ES256'],
      typ: 'at+jwt',
    });
    if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || typeof payload.env !== 'string') return undefined;
    return payload as AccessClaims;
  } catch {
    return undefined;
  }
}

export type AccessClaims = JWTPayload & { sub: string; sid: string; env: string; scope?: string; client_id?: string };

/** Ends the grant behind `grantId` (idempotent) and records oauth.token.revoked when it was active. */
export async function revokeGrant(ctx: IdentityContext, call: CallContext, grant: Pick<GrantRow, 'id' | 'environment' | 'client_id' | 'user_id'>, reason: string): Promise<boolean> {
  return withTransaction(ctx.pool, async (db) => {
    const revoked = await oauthGrantsRepository.revoke(db, grant.id, reason);
    if (revoked) await oauthEvent(db, call, 'oauth.token.revoked', grant.environment, actorOf(grant), grantTarget(grant.id), 'success', { clientId: grant.client_id, reason });
    return revoked;
  });
}
