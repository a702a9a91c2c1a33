import type { NextFunction, Request, Response } from 'express';
import { fromGrpcError } from '@secsvc/shared';
import { callOptions, type OAuthDeps } from './deps';

/** RFC 6750 3: a Bearer challenge with the error, and the error as JSON. */
function refuse(res: Response, status: number, error: string, description: string): void {
  res.setHeader('WWW-Authenticate', `Bearer realm="secsvc", error="${error}", error_description="${description}"`);
  res.setHeader('Cache-Control', 'no-store');
  res.status(status).json({ error, error_description: description });
}

/**
 * GET or POST /oauth/userinfo (OpenID Connect Core 5.3): the claims an access token with `openid` may see:
 * sub always, name and updated_at with `profile`, email and email_verified with `email`. The token is
 * verified like any API call's (signature, audience, expiry, and not revoked per identity's change stream).
 */
export function userinfoEndpoint(deps: OAuthDeps) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const m = /^Bearer ([A-Za-z0-9_.-]{1,4096})$/.exec(req.get('authorization') ?? '');
    if (!m) return refuse(res, 401, 'invalid_request', 'an access token is required (Authorization: Bearer)');
    if (!deps.jwt || !deps.authCache?.isLive) {
      res.setHeader('Retry-After', '1');
      return refuse(res, 503, 'temporarily_unavailable', 'access tokens cannot be checked for revocation right now');
    }
    let claims;
    try {
      claims = await deps.jwt.verify(m[1]!);
    } catch {
      return refuse(res, 401, 'invalid_token', 'the access token is invalid or expired');
    }
    if (deps.authCache.isSessionRevoked(claims.sid)) return refuse(res, 401, 'invalid_token', 'the access token has been revoked');
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : [];
    if (!scopes.includes('openid')) return refuse(res, 403, 'insufficient_scope', 'the openid scope is required');
    try {
      const user = await deps.clients.identity.getUser({ environment: claims.env, id: claims.sub }, callOptions(deps, req));
      res.setHeader('Cache-Control', 'no-store');
      res.json({
        sub: user.id,
        ...(scopes.includes('profile') ? { name: user.name, updated_at: Math.floor(Date.parse(user.updatedAt!) / 1000) } : {}),
        ...(scopes.includes('email') ? { email: user.email, email_verified: user.emailVerified } : {}),
      });
    } catch (err) {
      const e = fromGrpcError(err);
      if (e.code === 'not_found') return refuse(res, 401, 'invalid_token', 'the user no longer exists');
      next(e);
    }
  };
}
