import type { identity } from '@secsvc/proto';
import { newId, withTransaction, type CallContext } from '@secsvc/shared';
import type { IdentityContext } from '../context';
import { parseScope, pkceMatches, scopesOutside, USER_SCOPES } from '../domain/oauth';
import { looksLikeOpaqueToken } from '../domain/opaque-tokens';
import type { SigningKeyStore } from '../domain/signing-keys';
import { oauthCodesRepository, oauthGrantsRepository, oauthRefreshTokensRepository, type OAuthClientRow } from '../repositories/oauth';
import { usersRepository } from '../repositories/users';
import {
  actorOf,
  apiScopesOf,
  authenticateClient,
  CODE_PREFIX,
  failure,
  grantTarget,
  hashCode,
  hashRefreshToken,
  isFailure,
  oauthEvent,
  REFRESH_TOKEN_PREFIX,
  signTokens,
  storeRefreshToken,
  type Failure,
  type IssuedTokens,
} from './oauth-support';
import type { GrantRow } from '../repositories/oauth';
import type { UserRow } from '../repositories/users';

/** What a grant's transaction decided; its tokens are signed after the commit. */
interface Decided {
  grant: GrantRow;
  scopes: string[];
  user: UserRow | undefined;
  refreshToken: string;
  nonce?: string | null;
}

const sign = (ctx: IdentityContext, keys: SigningKeyStore, d: Decided | Failure) =>
  isFailure(d) ? d : signTokens(ctx, keys, d.grant, d.scopes, d.user, d.refreshToken, d.nonce);

type Response = identity.TokenResponse;

const answer = (r: Failure | IssuedTokens): Response =>
  isFailure(r)
    ? { error: r.error, errorDescription: r.errorDescription, status: r.status, retryAfterSeconds: r.retryAfterSeconds, accessToken: '', tokenType: '', expiresIn: 0, refreshToken: '', idToken: '', scope: '' }
    : { error: '', errorDescription: '', status: 200, retryAfterSeconds: 0, ...r };

const invalidGrant = (description: string) => failure('invalid_grant', description);

/**
 * The token endpoint (RFC 6749 4.1.3, 6 and 4.4). Codes work once, for 60 s, for the client, redirect URI
 * and PKCE verifier they were issued with; a second redemption ends every token issued from the first.
 * Refresh tokens rotate on every use; presenting one that was already used ends the whole grant.
 */
export const token =
  (ctx: IdentityContext, keys: SigningKeyStore) =>
  async (req: identity.TokenRequest, call: CallContext): Promise<Response> => {
    if (req.repeatedParams.length) return answer(failure('invalid_request', `${req.repeatedParams[0]}: given more than once`));
    const client = await authenticateClient(ctx, req, call);
    if (isFailure(client)) return answer(client);
    switch (req.grantType) {
      case 'authorization_code':
        return answer(await redeemCode(ctx, keys, client, req, call));
      case 'refresh_token':
        return answer(await refresh(ctx, keys, client, req, call));
      case 'client_credentials':
        return answer(await clientCredentials(ctx, keys, client, req, call));
      case '':
        return answer(failure('invalid_request', 'grant_type: is required'));
      default:
        return answer(failure('unsupported_grant_type', 'grant_type: authorization_code, refresh_token or client_credentials'));
    }
  };

async function redeemCode(ctx: IdentityContext, keys: SigningKeyStore, client: OAuthClientRow, req: identity.TokenRequest, call: CallContext) {
  if (!req.code) return failure('invalid_request', 'code: is required');
  if (!req.redirectUri) return failure('invalid_request', 'redirect_uri: is required');
  if (!looksLikeOpaqueToken(CODE_PREFIX, req.code)) return invalidGrant('code: unknown, expired or used');
  const hash = hashCode(req.code, ctx.config.SERVER_SECRET);
  const decided = await withTransaction(ctx.pool, async (db): Promise<Decided | Failure> => {
    const code = await oauthCodesRepository.lock(db, hash);
    // A code of another client is left alone: it is not this client's to spend.
    if (!code || code.client_id !== client.id) return invalidGrant('code: unknown, expired or used');
    if (code.used_at) {
      if (code.grant_id && (await oauthGrantsRepository.revoke(db, code.grant_id, 'code_reuse'))) {
        await oauthEvent(db, call, 'oauth.token.revoked', code.environment, { id: code.user_id, type: 'user' }, grantTarget(code.grant_id), 'success', {
          clientId: client.id,
          reason: 'code_reuse',
        });
      }
      return invalidGrant('code: already used; every token issued from it has been revoked');
    }
    // Any attempt spends the code, so a wrong verifier cannot be retried.
    const spend = () => oauthCodesRepository.markUsed(db, hash, null);
    if (code.expired) return spend().then(() => invalidGrant('code: expired (codes work for 60 seconds)'));
    if (req.redirectUri !== code.redirect_uri) return spend().then(() => invalidGrant('redirect_uri: does not match the authorization request'));
    if (code.code_challenge) {
      if (!req.codeVerifier) return spend().then(() => invalidGrant('code_verifier: is required (PKCE)'));
      if (!pkceMatches(req.codeVerifier, code.code_challenge)) return spend().then(() => invalidGrant('code_verifier: does not match the code challenge'));
    } else if (req.codeVerifier) {
      return spend().then(() => invalidGrant('code_verifier: the authorization request had no code challenge'));
    }
    const user = await usersRepository.get(db, code.environment, code.user_id);
    if (!user) return spend().then(() => invalidGrant('code: the user no longer exists'));
    const grant = await oauthGrantsRepository.insert(db, {
      id: newId('grt'),
      environment: code.environment,
      clientId: client.id,
      userId: user.id,
      scopes: code.scopes,
      authTime: code.auth_time,
    });
    await oauthCodesRepository.markUsed(db, hash, grant.id);
    const refreshToken = await storeRefreshToken(ctx, db, grant);
    await issuedEvent(db, call, grant, 'authorization_code', code.scopes, refreshToken);
    return { grant, scopes: code.scopes, user, refreshToken, nonce: code.nonce };
  });
  return sign(ctx, keys, decided);
}

async function refresh(ctx: IdentityContext, keys: SigningKeyStore, client: OAuthClientRow, req: identity.TokenRequest, call: CallContext) {
  if (!req.refreshToken) return failure('invalid_request', 'refresh_token: is required');
  if (!looksLikeOpaqueToken(REFRESH_TOKEN_PREFIX, req.refreshToken)) return invalidGrant('refresh_token: unknown, expired or revoked');
  const hash = hashRefreshToken(req.refreshToken, ctx.config.SERVER_SECRET);
  const decided = await withTransaction(ctx.pool, async (db): Promise<Decided | Failure> => {
    const rt = await oauthRefreshTokensRepository.lock(db, hash);
    if (!rt || rt.grant.client_id !== client.id) return invalidGrant('refresh_token: unknown, expired or revoked');
    const { grant } = rt;
    if (rt.used_at) {
      // Reuse of a rotated token: either the client or a thief holds a stale copy. End the whole family.
      const revoked = await oauthGrantsRepository.revoke(db, grant.id, 'refresh_reuse');
      await oauthEvent(db, call, 'oauth.refresh_reuse_detected', grant.environment, actorOf(grant), grantTarget(grant.id), 'failure', {
        clientId: client.id,
        grantRevoked: revoked,
      });
      return invalidGrant('refresh_token: already used; the whole grant has been revoked');
    }
    if (grant.revoked_at || rt.expired) return invalidGrant('refresh_token: unknown, expired or revoked');
    const scopes = req.scope ? parseScope(req.scope) : grant.scopes;
    const beyond = scopesOutside(scopes, grant.scopes);
    if (beyond.length) return failure('invalid_scope', `scope: beyond the original grant: ${beyond.join(' ')}`);
    if (!scopes.length) return failure('invalid_scope', 'scope: at least one scope is required');
    const user = grant.user_id ? await usersRepository.get(db, grant.environment, grant.user_id) : undefined;
    if (!user) return invalidGrant('refresh_token: the user no longer exists');
    await oauthRefreshTokensRepository.markUsed(db, hash);
    const refreshToken = await storeRefreshToken(ctx, db, grant);
    await issuedEvent(db, call, grant, 'refresh_token', scopes, refreshToken);
    return { grant, scopes, user, refreshToken };
  });
  return sign(ctx, keys, decided);
}

async function clientCredentials(ctx: IdentityContext, keys: SigningKeyStore, client: OAuthClientRow, req: identity.TokenRequest, call: CallContext) {
  if (client.type !== 'confidential') return failure('unauthorized_client', 'client_credentials is for confidential clients');
  const requested = req.scope ? parseScope(req.scope) : apiScopesOf(client.scopes);
  const userScopes = requested.filter((s) => USER_SCOPES.has(s));
  if (userScopes.length) return failure('invalid_scope', `scope: ${userScopes.join(' ')} need a user; client_credentials tokens act as the client`);
  const beyond = scopesOutside(requested, client.scopes);
  if (beyond.length) return failure('invalid_scope', `scope: not allowed for this client: ${beyond.join(' ')}`);
  if (!requested.length) return failure('invalid_scope', 'scope: the client has no API scopes');
  const decided = await withTransaction(ctx.pool, async (db): Promise<Decided> => {
    const grant = await oauthGrantsRepository.insert(db, {
      id: newId('grt'),
      environment: client.environment,
      clientId: client.id,
      userId: null,
      scopes: requested,
      authTime: null,
    });
    await issuedEvent(db, call, grant, 'client_credentials', requested, '');
    return { grant, scopes: requested, user: undefined, refreshToken: '' };
  });
  return sign(ctx, keys, decided);
}

function issuedEvent(
  db: Parameters<typeof oauthEvent>[0],
  call: CallContext,
  grant: { id: string; environment: string; client_id: string; user_id: string | null },
  grantType: string,
  scopes: string[],
  refreshToken: string,
) {
  return oauthEvent(db, call, 'oauth.token.issued', grant.environment, actorOf(grant), grantTarget(grant.id), 'success', {
    clientId: grant.client_id,
    grantType,
    scopes,
    refreshToken: refreshToken !== '',
    idToken: grant.user_id !== null && scopes.includes('openid'),
  });
}
