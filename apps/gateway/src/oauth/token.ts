import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { activeAccessToken, fromGrpcError } from '@secsvc/shared';
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
 * Client authentications for introspection, cached like API keys: only while identity's change stream is
 * live, dropped when the client changes (or the stream is lost), never past `ttlMs`. Keys are SHA-256 digests.
 */
class ClientAuthCache {
  private readonly entries = new Map<string, { clientId: string; environment: string; until: number }>();
  private generation = 0;

  constructor(
    private readonly deps: OAuthDeps,
    private readonly ttlMs = 60_000,
  ) {
    deps.authCache?.onChange((id) => {
      this.generation++;
      if (id === undefined) this.entries.clear();
      else for (const [k, e] of this.entries) if (e.clientId === id) this.entries.delete(k);
    });
  }

  async authenticate(req: Request, creds: ClientCredentials) {
    const key = createHash('sha256').update(`${creds.clientAuthMethod}\n${creds.clientId}\n${creds.clientSecret}`).digest('base64url');
    const live = this.deps.authCache?.isLive === true;
    const hit = live ? this.entries.get(key) : undefined;
    if (hit && hit.until > Date.now()) return hit;
    const generation = this.generation;
    const r = await this.deps.clients.identity.authenticateOAuthClient(creds, callOptions(this.deps, req));
    if (failed(r)) return r;
    const entry = { clientId: r.clientId, environment: r.environment, until: Date.now() + this.ttlMs };
    if (live && generation === this.generation && this.deps.authCache?.isLive) {
      if (this.entries.size >= 10_000) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, entry);
    }
    return entry;
  }
}

/**
 * POST /oauth/introspect (RFC 7662). Access tokens (JWTs) are answered here without a call: the signature,
 * iss, aud and exp are checked locally, and revocation is known from identity's change stream (revoked
 * grants and sessions), exactly as the gateway decides for API calls. While the stream is down, and for
 * every other credential (refresh tokens, session tokens, API keys), identity answers.
 */
export function introspectEndpoint(deps: OAuthDeps) {
  const clientCache = new ClientAuthCache(deps);
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const parsed = readRequest(req, res);
    if (!parsed) return;
    const { p, creds } = parsed;
    const token = p.get('token');
    const basic = creds.clientAuthMethod === 'client_secret_basic';
    try {
      res.setHeader('Cache-Control', 'no-store');
      if (deps.jwt && deps.authCache?.isLive && JWT.test(token)) {
        const client = await clientCache.authenticate(req, creds);
        if ('error' in client) return sendOAuthError(res, client, basic);
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
