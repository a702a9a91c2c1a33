import type { NextFunction, Request, Response } from 'express';
import type { identity } from '@secsvc/proto';
import { AppError, fromGrpcError } from '@secsvc/shared';
import { readCookie, SESSION_COOKIE, setCookie } from '../http/cookies';
import { AUTHORIZATION_PARAMS, authorizationRequest, CSRF_COOKIE, csrfValid, newCsrfToken, paramsOf } from './http';
import { consentPage, continuePage, errorPage, loginPage, sendPage } from './pages';
import { callOptions, type OAuthDeps } from './deps';
import { requestOrigin } from '../http/origin';

/** The login session at the authorization server lasts as long as a session from POST /v1/auth/login. */
const LOGIN_SESSION_SECONDS = 24 * 3600;

type Params = ReturnType<typeof paramsOf>;

const carried = (p: Params) => Object.fromEntries(AUTHORIZATION_PARAMS.map((n) => [n, p.get(n)]));

/** The page, redirect or error an identity decision calls for. */
function respond(req: Request, res: Response, deps: OAuthDeps, p: Params, d: identity.AuthorizeResponse, extra: { error?: string; email?: string; status?: number } = {}): void {
  const secure = deps.issuer.startsWith('https:');
  switch (d.outcome) {
    case 'redirect':
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(req.method === 'POST' ? 303 : 302, d.redirectTo);
      return;
    case 'login':
    case 'consent': {
      const csrf = newCsrfToken();
      setCookie(res, CSRF_COOKIE, csrf, { secure, sameSite: 'Strict' });
      const page =
        d.outcome === 'login'
          ? loginPage({ clientName: d.clientName, params: carried(p), csrf, error: extra.error, email: extra.email, sso: deps.sso })
          : consentPage({ clientName: d.clientName, params: carried(p), csrf, scopes: d.scopes, userEmail: d.userEmail });
      sendPage(res, extra.status ?? 200, page, d.redirectUri);
      return;
    }
    default:
      // An unknown client is a resource that does not exist (404); any other fault of the request is 400.
      sendPage(res, d.error === 'invalid_client' ? 404 : 400, errorPage(d.error || 'invalid_request', d.errorDescription || 'invalid authorization request'));
  }
}

const ask = (deps: OAuthDeps, req: Request, p: Params, over: Partial<identity.AuthorizeRequest> = {}) =>
  deps.clients.identity.authorize(
    { ...authorizationRequest(p), sessionToken: readCookie(req, SESSION_COOKIE) ?? '', freshLogin: false, consent: '', ...over },
    callOptions(deps, req),
  );

/**
 * "Sign in with SSO": the email's domain names the SAML connection of the client's environment; the browser
 * goes to its SP-initiated login, which keeps this authorization request and resumes it after the ACS.
 */
async function startSso(deps: OAuthDeps, req: Request, res: Response, p: Params): Promise<void> {
  const before = await ask(deps, req, p, { sessionToken: '' });
  if (before.outcome !== 'login' && before.outcome !== 'consent') return respond(req, res, deps, p, before);
  const email = p.get('email').slice(0, 320);
  const domain = email.includes('@') ? email.slice(email.lastIndexOf('@') + 1).toLowerCase() : '';
  if (!domain) return respond(req, res, deps, p, before, { error: 'Enter your work email to sign in with SSO', email, status: 400 });
  let connectionId: string;
  try {
    connectionId = (await deps.clients.identity.findSsoConnection({ environment: before.environment, domain }, callOptions(deps, req))).id;
  } catch (err) {
    const e = fromGrpcError(err);
    if (e.code === 'not_found') return respond(req, res, deps, p, before, { error: 'Single sign-on is not set up for this email domain', email, status: 400 });
    throw e;
  }
  const query = new URLSearchParams(Object.entries(carried(p)).filter(([, v]) => v !== '')).toString();
  const url = `${deps.issuer.replace(/\/+$/, '')}/v1/sso/saml/${connectionId}/login?oauth=${encodeURIComponent(query)}`;
  sendPage(res, 200, continuePage(url, 'Signing in with your organisation'));
}

/** GET /oauth/authorize: the login page, the consent page, or straight back to the client. */
export function authorizeGet(deps: OAuthDeps) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const p = paramsOf(req.query);
    ask(deps, req, p).then((d) => respond(req, res, deps, p, d), next);
  };
}

/**
 * POST /oauth/authorize: the login form (action=login) or the consent form (action=consent). Both need the
 * CSRF token of the page they came from; the request's parameters travel in hidden fields and are checked
 * again by identity, so a tampered form can do no more than a crafted GET.
 */
export function authorizePost(deps: OAuthDeps) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const p = paramsOf(req.body);
      if (!csrfValid(req, p.get('csrf_token'))) {
        sendPage(res, 403, errorPage('invalid_request', 'The form expired or its CSRF token is missing or invalid; go back to the application and start again'));
        return;
      }
      const action = p.get('action');
      if (action === 'consent') {
        const consent = p.get('consent') === 'allow' ? 'allow' : 'deny';
        respond(req, res, deps, p, await ask(deps, req, p, { consent }));
        return;
      }
      if (action === 'sso' && deps.sso) return await startSso(deps, req, res, p);
      if (action !== 'login') {
        sendPage(res, 400, errorPage('invalid_request', 'action: must be login or consent'));
        return;
      }
      // The request must be valid (and tells the client's environment) before any password is checked.
      const before = await ask(deps, req, p, { sessionToken: '' });
      if (before.outcome !== 'login' && before.outcome !== 'consent') return respond(req, res, deps, p, before);
      const email = p.get('email');
      const password = p.get('password');
      if (!email || !password || email.length > 320 || password.length > 256) {
        return respond(req, res, deps, p, before, { error: 'Enter your email and password', email: email.slice(0, 320), status: 400 });
      }
      let token: string;
      try {
        const created = await deps.clients.identity.login(
          {
            environment: before.environment,
            email,
            password,
            ...requestOrigin(req),
            expiresInSeconds: LOGIN_SESSION_SECONDS,
            oauthClientId: p.get('client_id'),
          },
          callOptions(deps, req),
        );
        token = created.token;
      } catch (err) {
        const e = fromGrpcError(err);
        if (e.code === 'unauthorized') return respond(req, res, deps, p, before, { error: 'Invalid email or password', email, status: 401 });
        if (e.code === 'rate_limited') {
          res.setHeader('Retry-After', String(e.retryAfterSeconds ?? 60));
          return respond(req, res, deps, p, before, { error: 'Too many failed sign-ins; try again later', email, status: 429 });
        }
        throw e;
      }
      setCookie(res, SESSION_COOKIE, token, { secure: deps.issuer.startsWith('https:'), sameSite: 'Lax', maxAgeSeconds: LOGIN_SESSION_SECONDS });
      respond(req, res, deps, p, await ask(deps, req, p, { sessionToken: token, freshLogin: true }));
    } catch (err) {
      next(err instanceof AppError ? err : fromGrpcError(err));
    }
  };
}
