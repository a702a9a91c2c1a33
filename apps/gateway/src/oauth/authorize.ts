import { isIP } from 'node:net';
import type { NextFunction, Request, Response } from 'express';
import type { identity } from '@secsvc/proto';
import { ACR_MFA, AppError, fromGrpcError } from '@secsvc/shared';
import { LOGIN_SESSION_SECONDS, readCookie, SESSION_COOKIE, setLoginSession } from '../http/cookies';
import { MAX_CREDENTIAL_CHARS, mfaStateOfChallenge, mfaStateOfForm, proofOf, refusalOf, type MfaFormState } from './mfa-answers';
import { AUTHORIZATION_PARAMS, authorizationRequest, csrfFor, csrfValid, paramsOf } from './http';
import { consentPage, continuePage, errorPage, loginPage, mfaPage, sendPage, type MfaMethods, type PasskeyOffer } from './pages';
import { callOptions, type OAuthDeps } from './deps';
import { requestOrigin } from '../http/origin';

/** The login page's message when the second step's token or the passkey challenge is unknown, used or expired. */
export const SIGN_IN_EXPIRED = 'Your sign-in expired; start again';

/** The longest answers the forms take: a WebAuthn assertion (JSON) and a code. */

type Params = ReturnType<typeof paramsOf>;
type Extra = { error?: string; email?: string; status?: number };

const carried = (p: Params) => Object.fromEntries(AUTHORIZATION_PARAMS.map((n) => [n, p.get(n)]));

/**
 * Whether a browser can use passkeys with this issuer: WebAuthn needs a domain as the relying party id
 * (identity's defaults to ISSUER's host), so not an IP address; localhost is a domain.
 */
export function passkeysUsable(issuer: string): boolean {
  let host: string;
  try {
    host = new URL(issuer).hostname;
  } catch {
    return false;
  }
  return host !== '' && !host.startsWith('[') && isIP(host) === 0;
}


/** A passwordless passkey challenge for the login page, or none (an IP issuer, or identity could not give one). */
async function passwordlessOffer(deps: OAuthDeps, req: Request, environment: string): Promise<PasskeyOffer | undefined> {
  if (!passkeysUsable(deps.issuer) || !environment) return undefined;
  try {
    const c = await deps.clients.identity.startPasskeyAuthentication({ environment, userId: '' }, callOptions(deps, req));
    return { optionsJson: c.optionsJson, challengeId: c.challengeId };
  } catch (err) {
    // The password form works without it: the page is shown without the passkey button.
    deps.logger.warn({ err: { message: fromGrpcError(err).message }, requestId: req.requestId }, 'no passkey challenge for the login page');
    return undefined;
  }
}

/** The page, redirect or error an identity decision calls for. */
async function respond(req: Request, res: Response, deps: OAuthDeps, p: Params, d: identity.AuthorizeResponse, extra: Extra = {}): Promise<void> {
  switch (d.outcome) {
    case 'redirect':
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(req.method === 'POST' ? 303 : 302, d.redirectTo);
      return;
    case 'login': {
      const passkey = await passwordlessOffer(deps, req, d.environment);
      const page = loginPage({ clientName: d.clientName, params: carried(p), csrf: csrfFor(res, deps), error: extra.error, email: extra.email, sso: deps.sso, passkey });
      sendPage(res, extra.status ?? 200, page, d.redirectUri);
      return;
    }
    case 'consent': {
      const page = consentPage({ clientName: d.clientName, params: carried(p), csrf: csrfFor(res, deps), scopes: d.scopes, userEmail: d.userEmail });
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

/** The request checked without any login session: its client's name and environment, or the error to show. */
const check = (deps: OAuthDeps, req: Request, p: Params) => ask(deps, req, p, { sessionToken: '' });

const isPage = (d: identity.AuthorizeResponse) => d.outcome === 'login' || d.outcome === 'consent';

// --- The second step: a factor's proof ------------------------------------------------------------------

/** The MFA page of a login's second step (action=mfa), for the request `before` checked. */
function showLoginMfa(res: Response, deps: OAuthDeps, p: Params, before: identity.AuthorizeResponse, state: MfaFormState, extra: Extra = {}): void {
  const methods: MfaMethods = {
    totp: state.methods.includes('totp'),
    recoveryCode: state.methods.includes('recovery_code'),
    passkey: state.passkeyOptionsJson && passkeysUsable(deps.issuer) ? { optionsJson: state.passkeyOptionsJson } : undefined,
  };
  const page = mfaPage({
    clientName: before.clientName,
    params: carried(p),
    csrf: csrfFor(res, deps),
    action: 'mfa',
    state: { mfa_token: state.mfaToken, mfa_methods: state.methods.join(' '), passkey_options: state.passkeyOptionsJson },
    methods,
    error: extra.error,
  });
  sendPage(res, extra.status ?? 200, page, before.redirectUri);
}

/** POST action=mfa: the second step of a password login on this page (CompleteMfaLogin). */
async function completeLoginMfa(deps: OAuthDeps, req: Request, res: Response, p: Params): Promise<void> {
  const before = await check(deps, req, p);
  if (!isPage(before)) return respond(req, res, deps, p, before);
  const state = mfaStateOfForm(p);
  if (!state.mfaToken) return respond(req, res, deps, p, before, { error: SIGN_IN_EXPIRED, status: 400 });
  const proof = proofOf(p);
  if ('error' in proof) return showLoginMfa(res, deps, p, before, state, { error: proof.error, status: 400 });
  let created: identity.CreatedSession;
  try {
    created = await deps.clients.identity.completeMfaLogin(
      { environment: before.environment, mfaToken: state.mfaToken, proof, ...requestOrigin(req) },
      callOptions(deps, req),
    );
  } catch (err) {
    const e = fromGrpcError(err);
    // An unknown, used or expired token (5 minutes, 5 wrong answers): the whole login again.
    if (e.code === 'invalid_request' && e.details.some((d) => d.field === 'mfaToken')) return respond(req, res, deps, p, before, { error: SIGN_IN_EXPIRED, status: 400 });
    const refusal = refusalOf(e, proof.type, res);
    if (refusal) return showLoginMfa(res, deps, p, before, state, refusal);
    throw e;
  }
  return signedIn(deps, req, res, p, created.token);
}

// --- Step-up: acr_values=urn:secsvc:acr:mfa with a login session that has no MFA --------------------------

const asksForMfa = (p: Params) => p.get('acr_values').split(' ').includes(ACR_MFA);

/** The login session of `token` in the client's environment (VerifySession: a bad token is no event), or none. */
async function sessionOf(deps: OAuthDeps, req: Request, environment: string, token: string): Promise<{ session: identity.Session; user: identity.User } | undefined> {
  if (!token || !environment) return undefined;
  const v = await deps.clients.identity.verifySession({ environment, token }, callOptions(deps, req));
  return v.valid && v.session && v.user ? { session: v.session, user: v.user } : undefined;
}

/**
 * What the user can step up with: TOTP, a passkey (when the issuer allows passkeys) and recovery codes as a
 * fallback. None without TOTP or a usable passkey: then the request goes on with the session's acr
 * (acr_values is a wish, OpenID Connect Core 3.1.2.1; the client sees the acr claim).
 */
async function stepUpFactors(
  deps: OAuthDeps,
  req: Request,
  environment: string,
  userId: string,
): Promise<{ kinds: { totp: boolean; passkey: boolean; recoveryCode: boolean } | undefined; mfaRequired: boolean }> {
  const listed = await deps.clients.identity.listMfaFactors({ environment, userId }, callOptions(deps, req));
  const factors = listed.factors.filter((f) => f.confirmed);
  const kinds = {
    totp: factors.some((f) => f.type === 'totp'),
    passkey: factors.some((f) => f.type === 'passkey') && passkeysUsable(deps.issuer),
    recoveryCode: factors.some((f) => f.type === 'recovery_codes' && f.remainingCodes > 0),
  };
  return { kinds: kinds.totp || kinds.passkey ? kinds : undefined, mfaRequired: listed.mfaRequired };
}

/** The step-up page for the session's user (action=step_up), with a fresh passkey challenge when they have passkeys. False: nothing to step up with. */
async function showStepUp(deps: OAuthDeps, req: Request, res: Response, p: Params, before: identity.AuthorizeResponse, userId: string, extra: Extra = {}): Promise<boolean> {
  const environment = before.environment;
  const { kinds, mfaRequired } = await stepUpFactors(deps, req, environment, userId);
  if (!kinds && !mfaRequired) return false;
  if (!kinds) {
    // The environment requires MFA of the user, who has nothing to do it with: no code is issued.
    const page = mfaPage({ clientName: before.clientName, params: carried(p), csrf: csrfFor(res, deps), action: 'step_up', state: {}, methods: { totp: false, recoveryCode: false }, error: extra.error });
    sendPage(res, 403, page, before.redirectUri);
    return true;
  }
  let passkey: PasskeyOffer | undefined;
  if (kinds.passkey) {
    const c = await deps.clients.identity.startPasskeyAuthentication({ environment, userId }, callOptions(deps, req));
    passkey = { optionsJson: c.optionsJson, challengeId: c.challengeId };
  }
  const methods: MfaMethods = { totp: kinds.totp, recoveryCode: kinds.recoveryCode, passkey };
  const page = mfaPage({ clientName: before.clientName, params: carried(p), csrf: csrfFor(res, deps), action: 'step_up', state: {}, methods, error: extra.error });
  sendPage(res, extra.status ?? 200, page, before.redirectUri);
  return true;
}

/**
 * When the login session has no MFA and the client asks for it (acr_values) or the environment requires it of
 * the user: the step-up page instead of a code. True when it answered (the page, or the error a request
 * without interaction gets).
 */
async function stepUpInstead(deps: OAuthDeps, req: Request, res: Response, p: Params, sessionToken: string): Promise<boolean> {
  const before = await check(deps, req, p);
  const found = await sessionOf(deps, req, before.environment, sessionToken);
  if (!found || found.session.amr.includes('mfa')) return false;
  const { kinds, mfaRequired } = await stepUpFactors(deps, req, before.environment, found.session.userId);
  if (!asksForMfa(p) && !mfaRequired) return false;
  if (before.outcome === 'redirect' && p.get('prompt').split(' ').includes('none')) {
    // No page may be shown: identity's answer for a request without a (sufficient) login is login_required.
    if (!kinds && !mfaRequired) return false;
    await respond(req, res, deps, p, before);
    return true;
  }
  if (!isPage(before)) return false;
  return showStepUp(deps, req, res, p, before, found.session.userId);
}

/**
 * On with the authorization request for a login session: a step-up first when the session lacks MFA the
 * client asks for (acr_values) or the environment requires of the user (not with prompt=login unless the user just logged in: identity shows the login page), then
 * identity's decision (consent, or back to the client with a code).
 */
async function proceed(deps: OAuthDeps, req: Request, res: Response, p: Params, sessionToken: string, freshLogin: boolean): Promise<void> {
  if (sessionToken && (freshLogin || !p.get('prompt').split(' ').includes('login'))) {
    if (await stepUpInstead(deps, req, res, p, sessionToken)) return;
  }
  await respond(req, res, deps, p, await ask(deps, req, p, { sessionToken, freshLogin }));
}

/** POST action=step_up: a factor's proof for the login session (StepUpSession, as the session's user). */
async function stepUp(deps: OAuthDeps, req: Request, res: Response, p: Params): Promise<void> {
  const before = await check(deps, req, p);
  if (!isPage(before)) return respond(req, res, deps, p, before);
  const token = readCookie(req, SESSION_COOKIE) ?? '';
  const found = await sessionOf(deps, req, before.environment, token);
  if (!found) return respond(req, res, deps, p, before, { error: SIGN_IN_EXPIRED, status: 400 });
  const { session, user } = found;
  const again = async (extra: Extra) => {
    if (!(await showStepUp(deps, req, res, p, before, user.id, extra))) await respond(req, res, deps, p, before, { error: SIGN_IN_EXPIRED, status: 400 });
  };
  const proof = proofOf(p);
  if ('error' in proof) return again({ error: proof.error, status: 400 });
  const options = callOptions(deps, req);
  try {
    await deps.clients.identity.stepUpSession(
      { environment: before.environment, sessionId: session.id, proof, challengeId: proof.type === 'passkey' ? p.get('challenge_id').slice(0, 64) : '', ip: requestOrigin(req).ip },
      { ...options, headers: { ...options.headers, 'x-actor-id': user.id, 'x-actor-type': 'user', 'x-actor-email': user.email } },
    );
  } catch (err) {
    const e = fromGrpcError(err);
    const refusal = refusalOf(e, proof.type, res);
    if (refusal) return again(refusal);
    throw e;
  }
  await respond(req, res, deps, p, await ask(deps, req, p, { sessionToken: token }));
}

// --- Logins ----------------------------------------------------------------------------------------------

/** A login succeeded: the login session's cookie, then on with the request. */
async function signedIn(deps: OAuthDeps, req: Request, res: Response, p: Params, token: string): Promise<void> {
  setLoginSession(res, token, deps.issuer.startsWith('https:'));
  await proceed(deps, req, res, p, token, true);
}

/** POST action=login: email and password; a session, or the MFA page of the login's second step. */
async function passwordLogin(deps: OAuthDeps, req: Request, res: Response, p: Params): Promise<void> {
  // The request must be valid (and tells the client's environment) before any password is checked.
  const before = await check(deps, req, p);
  if (!isPage(before)) return respond(req, res, deps, p, before);
  const email = p.get('email');
  const password = p.get('password');
  if (!email || !password || email.length > 320 || password.length > 256) {
    return respond(req, res, deps, p, before, { error: 'Enter your email and password', email: email.slice(0, 320), status: 400 });
  }
  let result: identity.LoginResponse;
  try {
    result = await deps.clients.identity.login(
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
  } catch (err) {
    const e = fromGrpcError(err);
    if (e.code === 'unauthorized') return respond(req, res, deps, p, before, { error: 'Invalid email or password', email, status: 401 });
    if (e.code === 'rate_limited') {
      res.setHeader('Retry-After', String(e.retryAfterSeconds ?? 60));
      return respond(req, res, deps, p, before, { error: 'Too many failed sign-ins; try again later', email, status: 429 });
    }
    throw e;
  }
  if (result.mfa) return showLoginMfa(res, deps, p, before, mfaStateOfChallenge(result.mfa));
  if (!result.session) throw new AppError('internal_error', 'login answered neither a session nor a challenge');
  return signedIn(deps, req, res, p, result.session.token);
}

/** POST action=passkey: a passwordless login with the page's passkey challenge (CompletePasskeyLogin). */
async function passkeyLogin(deps: OAuthDeps, req: Request, res: Response, p: Params): Promise<void> {
  const before = await check(deps, req, p);
  if (!isPage(before)) return respond(req, res, deps, p, before);
  const challengeId = p.get('challenge_id');
  const credential = p.get('credential');
  const unusable = { error: 'Your passkey could not be used; try again or sign in with your password', status: 400 };
  if (!challengeId || challengeId.length > 64 || !credential || credential.length > MAX_CREDENTIAL_CHARS) return respond(req, res, deps, p, before, unusable);
  let created: identity.CreatedSession;
  try {
    created = await deps.clients.identity.completePasskeyLogin(
      {
        environment: before.environment,
        challengeId,
        credentialJson: credential,
        ...requestOrigin(req),
        expiresInSeconds: LOGIN_SESSION_SECONDS,
        oauthClientId: p.get('client_id'),
      },
      callOptions(deps, req),
    );
  } catch (err) {
    const e = fromGrpcError(err);
    if (e.code === 'invalid_request' && e.details.some((d) => d.field === 'challengeId')) return respond(req, res, deps, p, before, { error: SIGN_IN_EXPIRED, status: 400 });
    const refusal = refusalOf(e, 'passkey', res);
    if (refusal) return respond(req, res, deps, p, before, refusal.status === 400 ? unusable : refusal);
    throw e;
  }
  return signedIn(deps, req, res, p, created.token);
}

/**
 * "Sign in with SSO": the email's domain names the SAML connection of the client's environment; the browser
 * goes to its SP-initiated login, which keeps this authorization request and resumes it after the ACS.
 */
async function startSso(deps: OAuthDeps, req: Request, res: Response, p: Params): Promise<void> {
  const before = await check(deps, req, p);
  if (!isPage(before)) return respond(req, res, deps, p, before);
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

/** GET /oauth/authorize: the login page, the step-up page, the consent page, or straight back to the client. */
export function authorizeGet(deps: OAuthDeps) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const p = paramsOf(req.query);
    proceed(deps, req, res, p, readCookie(req, SESSION_COOKIE) ?? '', false).catch((err: unknown) => next(err instanceof AppError ? err : fromGrpcError(err)));
  };
}

const ACTIONS: Record<string, (deps: OAuthDeps, req: Request, res: Response, p: Params) => Promise<void>> = {
  login: passwordLogin,
  mfa: completeLoginMfa,
  passkey: passkeyLogin,
  step_up: stepUp,
};

/**
 * POST /oauth/authorize: the forms of the pages. action=login (email and password), mfa (a login's second
 * step), passkey (a passwordless login), step_up (MFA for the login session when the client asks for it),
 * consent, sso. Every form needs the CSRF token of the page it came from; the request's parameters travel in
 * hidden fields and are checked again by identity, so a tampered form can do no more than a crafted GET.
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
        // A consent form cannot skip the step-up that acr_values=urn:secsvc:acr:mfa asks for or the environment
        // requires of the user (stepUpInstead decides both).
        const session = readCookie(req, SESSION_COOKIE) ?? '';
        if (consent === 'allow' && session && (await stepUpInstead(deps, req, res, p, session))) return;
        await respond(req, res, deps, p, await ask(deps, req, p, { consent }));
        return;
      }
      if (action === 'sso' && deps.sso) return await startSso(deps, req, res, p);
      const handler = Object.hasOwn(ACTIONS, action) ? ACTIONS[action] : undefined;
      if (!handler) {
        sendPage(res, 400, errorPage('invalid_request', `action: must be login, mfa, passkey, step_up, consent${deps.sso ? ' or sso' : ''}`));
        return;
      }
      await handler(deps, req, res, p);
    } catch (err) {
      next(err instanceof AppError ? err : fromGrpcError(err));
    }
  };
}
