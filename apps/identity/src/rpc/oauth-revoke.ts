import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { IdentityContext } from '../context';
import { looksLikeOpaqueToken } from '../domain/opaque-tokens';
import type { SigningKeyStore } from '../domain/signing-keys';
import { oauthGrantsRepository, oauthRefreshTokensRepository } from '../repositories/oauth';
import { authenticateClient, hashRefreshToken, isFailure, REFRESH_TOKEN_PREFIX, revokeGrant, verifyAccessToken } from './oauth-support';

const ok: identity.RevokeTokenResponse = { error: '', errorDescription: '', status: 200, retryAfterSeconds: 0 };

/**
 * RFC 7009. Revoking a refresh token or an access token ends its whole grant: the refresh token family and
 * every access token of it (gateways learn it on the credential change stream). A token that is unknown,
 * already revoked, or issued to another client is answered the same 200, so the endpoint tells nothing.
 */
export const revokeToken =
  (ctx: IdentityContext, keys: SigningKeyStore) =>
  async (req: identity.RevokeTokenRequest, call: CallContext): Promise<identity.RevokeTokenResponse> => {
    const client = await authenticateClient(ctx, req, call);
    if (isFailure(client)) return client;
    if (!req.token) return { ...ok, error: 'invalid_request', errorDescription: 'token: is required', status: 400 };
    if (looksLikeOpaqueToken(REFRESH_TOKEN_PREFIX, req.token)) {
      const rt = await oauthRefreshTokensRepository.find(ctx.pool, hashRefreshToken(req.token, ctx.config.SERVER_SECRET));
      if (rt && rt.client_id === client.id) {
        await revokeGrant(ctx, call, { id: rt.grant_id, environment: rt.environment, client_id: rt.client_id, user_id: rt.user_id }, 'revoked_by_client');
      }
      return ok;
    }
    const claims = await verifyAccessToken(ctx, keys, req.token);
    if (claims?.client_id === client.id && claims.sid.startsWith('grt_')) {
      const grant = await oauthGrantsRepository.get(ctx.pool, claims.sid);
      if (grant) await revokeGrant(ctx, call, grant, 'revoked_by_client');
    }
    return ok;
  };

/** Client authentication alone: the gateway answers introspection of access tokens itself and caches this. */
export const authenticateOAuthClient =
  (ctx: IdentityContext) =>
  async (req: identity.AuthenticateOAuthClientRequest, call: CallContext): Promise<identity.AuthenticateOAuthClientResponse> => {
    const client = await authenticateClient(ctx, req, call);
    if (isFailure(client)) return { ...client, clientId: '', environment: '', type: '' };
    return { ...ok, clientId: client.id, environment: client.environment, type: client.type };
  };
