import type { NextFunction, Request, Response } from 'express';
import type { identity } from '@secsvc/proto';
import { activeAccessToken, fromGrpcError } from '@secsvc/shared';
import { FeedCache, tokenDigest } from '../auth/feed-cache';
import { callOptions, type OAuthDeps } from './deps';
import { clientCredentialsOf, isForm, paramsOf, sendOAuthError, type ClientCredentials } from './http';

// The token, revocation and introspection endpoints: form-encoded requests, client authentication, JSON
// answers with Cache-Control: no-store (RFC 6749 5.1).

type Params = ReturnType<typeof paramsOf>;

/** Parses the form and the client credentials; answers the error itself and returns undefined on failure. */
function readRequest(req: Request, res: Response): { p: Params; creds: ClientCredentials } | undefined {
  if (!isForm(req)) {
    sendOAuthError(res, { error: 'invalid_request', errorDescription: 'the body must be application/x-www-form-urlencoded', status: 400 });
    return undefined;
  }
  const p = paramsOf(req.body);
  const creds = clientCredentialsOf(req, p);
  if ('error' in creds) {
    if (creds.invalidClient) sendOAuthError(res, { error: 'invalid_client', errorDescription: creds.error, status: 401 }, true);
    else sendOAuthError(res, { error: 'invalid_request', errorDescription: creds.error, status: 400 });
    return undefined;
  }
  return { p, creds };
}

const failed = (r: { error: string }) => r.error !== '';

/** POST /oauth/token (RFC 6749 4.1.3, 6, 4.4). */
export function tokenEndpoint(deps: OAuthDeps) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const parsed = readRequest(req, res);
    if (!parsed) return;
    const { p, creds } = parsed;
    const names = ['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope'];
    deps.clients.identity
      .token(
        {
          grantType: p.get('grant_type'),
          code: p.get('code'),
          redirectUri: p.get('redirect_uri'),
          codeVerifier: p.get('code_verifier'),
          refreshToken: p.get('refresh_token'),
          scope: p.get('scope'),
          ...creds,
          repeatedParams: p.repeated.filter((n) => names.includes(n)),
        },
        callOptions(deps, req),
      )
      .then((r) => {
        if (failed(r)) return sendOAuthError(res, r, creds.clientAuthMethod === 'client_secret_basic');
        res.setHeader('Cache-Control', 'no-store');
        res.setHeader('Pragma', 'no-cache');
        res.json({
          access_token: r.accessToken,
          token_type: r.tokenType,
          expires_in: r.expiresIn,
          scope: r.scope,
          ...(r.refreshToken ? { refresh_token: r.refreshToken } : {}),
          ...(r.idToken ? { id_token: r.idToken } : {}),
        });
      }, next);
  };
}

/** POST /oauth/revoke (RFC 7009): 200 with an empty body for any token, known or not. */
export function revokeEndpoint(deps: OAuthDeps) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const parsed = readRequest(req, res);
    if (!parsed) return;
    const { p, creds } = parsed;
    deps.clients.identity
      .revokeToken({ token: p.get('token'), tokenTypeHint: p.get('token_type_hint'), ...creds }, callOptions(deps, req))
      .then((r) => {
        if (failed(r)) return sendOAuthError(res, r, creds.clientAuthMethod === 'client_secret_basic');
        res.setHeader('Cache-Control', 'no-store');
        res.status(200).end();
      }, next);
  };
}

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/**
 * Client authentications for introspection, cached like API keys (auth/feed-cache.ts): only while identity's
 * change stream is live, dropped when the client changes (or the stream is lost), never past `ttlMs`.
 */
function clientAuthenticator(deps: OAuthDeps, ttlMs = 60_000) {
  const cache = deps.authCache && new FeedCache<identity.AuthenticateOAuthClientResponse>(deps.authCache, { ttlMs, maxEntries: 10_000, changedBy: (id, c) => c.clientId === id });
  return (req: Request, creds: ClientCredentials): Promise<identity.AuthenticateOAuthClientResponse> => {
    const fetch = () => deps.clients.identity.authenticateOAuthClient(creds, callOptions(deps, req));
    if (!cache) return fetch();
    // Refusals are not kept: the next attempt asks identity again.
    return cache.get(tokenDigest(`${creds.clientAuthMethod}\n${creds.clientId}\n${creds.clientSecret}`), fetch, (r) => (failed(r) ? false : Infinity));
  };
}

/**
 * POST /oauth/introspect (RFC 7662). Access tokens (JWTs) are answered here without a call: the signature,
 * iss, aud and exp are checked locally, and revocation is known from identity's change stream (revoked
 * grants and sessions), exactly as the gateway decides for API calls. While the stream is down, and for
 * every other credential (refresh tokens, session tokens, API keys), identity answers.
 */
export function introspectEndpoint(deps: OAuthDeps) {
  const authenticateClient = clientAuthenticator(deps);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const parsed = readRequest(req, res);
    if (!parsed) return;
    const { p, creds } = parsed;
    const token = p.get('token');
    const basic = creds.clientAuthMethod === 'client_secret_basic';
    try {
      res.setHeader('Cache-Control', 'no-store');
      if (deps.jwt && deps.authCache?.isLive && JWT.test(token)) {
        const client = await authenticateClient(req, creds);
        if (failed(client)) return sendOAuthError(res, client, basic);
        res.json(await localIntrospection(deps, token, client.environment));
        return;
      }
      const r = await deps.clients.identity.introspectToken({ token, tokenTypeHint: p.get('token_type_hint'), ...creds }, callOptions(deps, req));
      if (failed(r)) return sendOAuthError(res, r, basic);
      res.type('application/json').send(r.resultJson);
    } catch (err) {
      next(fromGrpcError(err));
    }
  };
}

async function localIntrospection(deps: OAuthDeps, token: string, environment: string): Promise<Record<string, unknown>> {
  let claims;
  try {
    claims = await deps.jwt!.verify(token);
  } catch {
    return { active: false };
  }
  // Checked after verification: the stream must still be live for "not revoked" to be known.
  if (claims.env !== environment || !deps.authCache!.isLive || deps.authCache!.isSessionRevoked(claims.sid)) return { active: false };
  const exp = claims.exp ?? 0;
  if (exp * 1000 <= Date.now()) return { active: false };
  return activeAccessToken(claims);
}
