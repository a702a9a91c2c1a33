import express, { type NextFunction, type Request, type Response } from 'express';
import { authorizeGet, authorizePost } from './authorize';
import type { OAuthDeps } from './deps';
import { discovery } from './discovery';
import { AppError } from '@secsvc/shared';
import { formBody } from '../middleware/input';
import { OAUTH_FORM_FIELDS } from '../openapi/surface';
import { sendOAuthError } from './http';
import { PASSKEY_SCRIPT_PATH, STYLESHEET } from './pages';
import { PASSKEY_SCRIPT } from './passkey-script';
import { logoutEndpoint } from './logout';
import { introspectEndpoint, revokeEndpoint, tokenEndpoint } from './token';
import { userinfoEndpoint } from './userinfo';

export type { OAuthDeps } from './deps';

/**
 * The OAuth 2.0 authorization server's HTTP surface (unversioned paths, as the standards name them):
 * discovery, the authorization endpoint with its login, MFA and consent pages (their stylesheet and passkey
 * script), token, revocation, introspection, userinfo and end-session (logout). Every form body is urlencoded and at most 64 KiB.
 */
export function oauthRouter(deps: OAuthDeps): express.Router {
  const router = express.Router();
  const form = formBody('64kb', OAUTH_FORM_FIELDS);
  router.get(['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'], discovery(deps.issuer));
  router.get('/oauth/assets/style.css', (_req: Request, res: Response) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.type('text/css').send(STYLESHEET);
  });
  // The passkey pages' one script (their CSP allows script-src 'self'; see passkey-script.ts).
  router.get(PASSKEY_SCRIPT_PATH, (_req: Request, res: Response) => {
    res.setHeader('Cache-Control', 'public, max-age=3600');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.type('text/javascript').send(PASSKEY_SCRIPT);
  });
  router.get('/oauth/authorize', authorizeGet(deps));
  router.post('/oauth/authorize', form, authorizePost(deps));
  router.post('/oauth/token', form, tokenEndpoint(deps));
  router.post('/oauth/revoke', form, revokeEndpoint(deps));
  router.post('/oauth/introspect', form, introspectEndpoint(deps));
  router.get('/oauth/logout', logoutEndpoint(deps));
  router.post('/oauth/logout', form, logoutEndpoint(deps));
  router.get('/oauth/userinfo', userinfoEndpoint(deps));
  router.post('/oauth/userinfo', form, userinfoEndpoint(deps));
  // A form body the parser refused (too large, too many parameters, bad charset) is the client's fault: a
  // 4xx in the RFC 6749 shape, never a 500.
  router.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    if (err instanceof AppError && err.code === 'invalid_request') {
      const fields = err.details.map((d) => `${d.field} ${d.message}`).join('; ');
      return sendOAuthError(res, { error: 'invalid_request', errorDescription: fields || err.message, status: 400 });
    }
    const e = err as { type?: string; status?: number };
    if (typeof e?.type !== 'string' || typeof e.status !== 'number' || e.status >= 500) return next(err);
    sendOAuthError(res, { error: 'invalid_request', errorDescription: `the form body was refused (${e.type})`, status: e.type === 'entity.too.large' ? 413 : 400 });
  });
  return router;
}
