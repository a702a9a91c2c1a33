import type { identity } from '@secsvc/proto';
import { activeAccessToken, type CallContext } from '@secsvc/shared';
import type { IdentityContext } from '../context';
import { hashesEqual, hashKey, looksLikeKey } from '../domain/api-keys';
import { looksLikeOpaqueToken } from '../domain/opaque-tokens';
import { hashSessionToken, looksLikeSessionToken } from '../domain/sessions';
import type { SigningKeyStore } from '../domain/signing-keys';
import { apiKeysRepository } from '../repositories/api-keys';
import { oauthGrantsRepository, oauthRefreshTokensRepository, type OAuthClientRow } from '../repositories/oauth';
import { sessionsRepository } from '../repositories/sessions';
import { authenticateClient, hashRefreshToken, isFailure, REFRESH_TOKEN_PREFIX, verifyAccessToken } from './oauth-support';

type Result = Record<string, unknown>;
const INACTIVE: Result = { active: false };
const seconds = (d: Date) => Math.floor(d.getTime() / 1000);

/**
 * RFC 7662 token introspection for any credential, so resource servers have one way to check them: access
 * tokens (ours, also session JWTs), refresh tokens (only their own client's), session tokens and API keys.
 * Only credentials of the client's own environment can be active; anything else is {"active": false}.
 */
export const introspectToken =
  (ctx: IdentityContext, keys: SigningKeyStore) =>
  async (req: identity.IntrospectTokenRequest, call: CallContext): Promise<identity.IntrospectTokenResponse> => {
    const client = await authenticateClient(ctx, req, call);
    if (isFailure(client)) return { ...client, resultJson: '' };
    const result = req.token ? await inspect(ctx, keys, client, req.token) : INACTIVE;
    return { error: '', errorDescription: '', status: 200, retryAfterSeconds: 0, resultJson: JSON.stringify(result) };
  };

async function inspect(ctx: IdentityContext, keys: SigningKeyStore, client: OAuthClientRow, token: string): Promise<Result> {
  const env = client.environment;
  const claims = await verifyAccessToken(ctx, keys, token);
  if (claims) {
    if (claims.env !== env) return INACTIVE;
    const grant = claims.sid.startsWith('grt_') ? await oauthGrantsRepository.get(ctx.pool, claims.sid) : undefined;
    const live = grant ? !grant.revoked_at : (await sessionsRepository.findActiveById(ctx.pool, claims.sid)) !== undefined;
    if (!live) return INACTIVE;
    return activeAccessToken(claims);
  }
  if (looksLikeOpaqueToken(REFRESH_TOKEN_PREFIX, token)) {
    const rt = await oauthRefreshTokensRepository.find(ctx.pool, hashRefreshToken(token, ctx.config.SERVER_SECRET));
    if (!rt || rt.client_id !== client.id || rt.used_at || rt.expired || rt.revoked_at) return INACTIVE;
    return { active: true, token_type: 'refresh_token', scope: rt.scopes.join(' '), client_id: rt.client_id, sub: rt.user_id, exp: seconds(rt.expires_at), iat: seconds(rt.created_at) };
  }
  if (looksLikeSessionToken(token)) {
    const s = await sessionsRepository.findActiveByHash(ctx.pool, env, hashSessionToken(token, ctx.config.SERVER_SECRET));
    if (!s) return INACTIVE;
    return { active: true, token_type: 'session', sub: s.user_id, sid: s.id, exp: seconds(s.expires_at), iat: seconds(s.created_at) };
  }
  if (looksLikeKey(token)) {
    const hash = hashKey(token, ctx.config.SERVER_SECRET);
    const k = await apiKeysRepository.findByHash(ctx.pool, hash);
    if (!k || k.environment !== env || k.revoked_at || (k.expires_at && k.expires_at.getTime() <= Date.now())) return INACTIVE;
    if (!hashesEqual(k.key_hash, hash) && !(k.previous_key_hash && hashesEqual(k.previous_key_hash, hash))) return INACTIVE;
    return { active: true, token_type: 'api_key', sub: k.id, key_type: k.type, iat: seconds(k.created_at), ...(k.expires_at ? { exp: seconds(k.expires_at) } : {}) };
  }
  return INACTIVE;
}
