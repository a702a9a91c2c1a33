import type { NextFunction, Request, Response } from 'express';
import { AppError, fromGrpcError } from '@secsvc/shared';
import type { identity } from '@secsvc/proto';
import { readCookie, SESSION_COOKIE, setLoginSession } from '../http/cookies';
import { callOptions, type OAuthDeps } from './deps';
import { csrfFor, csrfValid, paramsOf } from './http';
import { errorPage, logoutPage, sendPage, signedOutPage } from './pages';

// The end-session endpoint (OpenID Connect RP-Initiated Logout 1.0): ends the login session the authorization
// server keeps in its cookie, then sends the browser back to the client's post_logout_redirect_uri (with state)
// or shows that the user is signed out. With an id_token_hint of the session's user the logout happens at once;
// otherwise the user confirms it on a page (a link elsewhere cannot sign anyone out). Tokens the client holds
// are its own to revoke (/oauth/revoke); an access token of this session's grants stays valid until it expires.

const LOGOUT_PATH = '/oauth/logout';
/** The parameters carried from the request through the confirmation form. */
const CARRIED = ['id_token_hint', 'client_id', 'post_logout_redirect_uri', 'state'] as const;

type Params = ReturnType<typeof paramsOf>;

/** What the request asks, checked: the client and where to go afterwards, and whose ID token it presented. */
interface Checked {
  hintSubject?: string;
  redirect?: URL;
}

/** An OAuth client of either environment (an ID token names its client, not its environment). */
async function findClient(deps: OAuthDeps, req: Request, id: string): Promise<identity.OAuthClient | undefined> {
  if (!/^cli_[0-9a-z]{26}$/.test(id)) return undefined;
  for (const environment of ['live', 'test']) {
    try {
      return await deps.clients.identity.getOAuthClient({ environment, id }, callOptions(deps, req));
    } catch (err) {
      if (fromGrpcError(err).code !== 'not_found') throw fromGrpcError(err);
    }
  }
  return undefined;
}

/** The request's parameters checked (an error page's text otherwise). */
async function check(deps: OAuthDeps, req: Request, p: Params): Promise<Checked | string> {
  const repeated = p.repeated.filter((n) => (CARRIED as readonly string[]).includes(n));
  if (repeated.length) return `${repeated.join(', ')}: given more than once`;
  const tooLong = CARRIED.filter((n) => p.get(n).length > 8192);
  if (tooLong.length) return `${tooLong.join(', ')}: at most 8192 characters`;
  const hintToken = p.get('id_token_hint');
  const hint = hintToken ? await deps.jwt?.idTokenHint(hintToken) : undefined;
  if (hintToken && !hint) return 'id_token_hint: not an ID token this server issued';
  const clientId = p.get('client_id') || hint?.clientId || '';
  if (hint && p.get('client_id') && p.get('client_id') !== hint.clientId) return 'client_id: not the audience of id_token_hint';
  const target = p.get('post_logout_redirect_uri');
  if (!target) return { hintSubject: hint?.sub };
  if (!clientId) return 'post_logout_redirect_uri: needs client_id or id_token_hint to say which client registered it';
  const client = await findClient(deps, req, clientId);
  if (!client) return 'client_id: no such client';
  // Exactly one of the client's registered redirect URIs (as the authorization endpoint matches them).
  if (!client.redirectUris.includes(target)) return 'post_logout_redirect_uri: not a redirect URI registered for this client';
  return { hintSubject: hint?.sub, redirect: new URL(target) };
}

/** The login session of the cookie, when it is one still active. */
async function loginSession(deps: OAuthDeps, req: Request): Promise<{ token: string; principal: identity.SessionPrincipal } | undefined> {
  const token = readCookie(req, SESSION_COOKIE) ?? '';
  if (!token.startsWith('sst_') || token.length > 256) return undefined;
  try {
    return { token, principal: await deps.clients.identity.authenticateSession({ token }, callOptions(deps, req)) };
  } catch (err) {
    // Refused (expired, revoked, its user deleted): nobody is signed in. Only an outage is an error.
    const e = fromGrpcError(err);
    if (e.code === 'unavailable' || e.code === 'internal_error') throw e;
    return undefined;
  }
}

/** Ends the login session (user.logout, as POST /v1/sessions/revoke by its holder) and forgets its cookie. */
async function end(deps: OAuthDeps, req: Request, res: Response, session: { token: string; principal: identity.SessionPrincipal } | undefined) {
  if (session) await deps.clients.identity.revokeSession({ environment: session.principal.environment, token: session.token }, callOptions(deps, req));
  setLoginSession(res, '', deps.issuer.startsWith('https:'));
}

/** After the logout: back to the client (with its state), or the signed-out page. */
function finish(res: Response, p: Params, checked: Checked): void {
  res.setHeader('Cache-Control', 'no-store');
  if (!checked.redirect) return sendPage(res, 200, signedOutPage());
  const url = new URL(checked.redirect);
  if (p.get('state')) url.searchParams.set('state', p.get('state'));
  res.redirect(303, url.href);
}

const carried = (p: Params) => Object.fromEntries(CARRIED.map((n) => [n, p.get(n)]));

/** GET or POST /oauth/logout: the end-session endpoint; a POST with action=confirm is the confirmation form. */
export function logoutEndpoint(deps: OAuthDeps) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    try {
      const p = paramsOf(req.method === 'POST' ? req.body : req.query);
      const confirmed = req.method === 'POST' && p.get('action') === 'confirm';
      if (req.method === 'POST' && !confirmed) {
        // A relying party's form post comes from its own site, and the login session's cookie (SameSite=Lax)
        // is not sent with a cross-site POST: on to the same request by GET, which a top-level navigation
        // sends it with (otherwise the session would look absent and stay alive).
        const query = new URLSearchParams(Object.entries(carried(p)).filter(([, v]) => v !== '')).toString();
        res.setHeader('Cache-Control', 'no-store');
        return res.redirect(303, `${LOGOUT_PATH}${query ? `?${query}` : ''}`);
      }
      if (confirmed && !csrfValid(req, p.get('csrf_token'))) {
        return sendPage(res, 403, errorPage('invalid_request', 'The form expired or its CSRF token is missing or invalid; sign out again from the application'));
      }
      const checked = await check(deps, req, p);
      if (typeof checked === 'string') return sendPage(res, 400, errorPage('invalid_request', checked));
      const session = await loginSession(deps, req);
      // Signing out needs no question when nobody is signed in, when the user confirmed, or when the client
      // shows it acts for the signed-in user (their ID token).
      if (!session || confirmed || (checked.hintSubject !== undefined && checked.hintSubject === session.principal.userId)) {
        await end(deps, req, res, session);
        return finish(res, p, checked);
      }
      sendPage(res, 200, logoutPage({ params: carried(p), csrf: csrfFor(res, deps), email: session.principal.email, action: LOGOUT_PATH }), checked.redirect?.href);
    } catch (err) {
      next(err instanceof AppError ? err : fromGrpcError(err));
    }
  };
}
