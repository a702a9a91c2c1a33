import type { Response } from 'express';
import type { identity } from '@secsvc/proto';
import { AppError, fromGrpcError } from '@secsvc/shared';
import { setCookie } from '../http/cookies';
import { requestOrigin } from '../http/origin';
import { passkeysUsable } from '../oauth/authorize';
import { csrfValid, newCsrfToken, paramsOf } from '../oauth/http';
import { mfaStateOfChallenge, mfaStateOfForm, proofOf, refusalOf, type MfaFormState } from '../oauth/mfa-answers';
import { errorPage, jsonDataBlock, mfaPage, sendPage, type MfaMethods } from '../oauth/pages';
import { callOptions, connectionOf, handler, RELAY_STATE_MAX, type SsoDeps } from './context';
import { signIn, type LoginContinuation } from './sign-in';

// The second step of a SAML login through a connection that requires MFA the IdP did not assert: identity
// answered CompleteSamlLogin with a challenge instead of a session. The browser gets the OAuth pages' MFA page
// (mfaPage: TOTP, recovery code, passkey), whose forms post here, to POST /v1/sso/saml/{id}/mfa; its answer
// (CompleteMfaLogin) opens the session, and the login goes on exactly as one without the second step would
// (sign-in.ts). Double-submit CSRF protection as on the OAuth pages, with a cookie of the SAML endpoints.

/** The forms of the SAML MFA page post here. */
export const mfaPath = (connectionId: string) => `/v1/sso/saml/${connectionId}/mfa`;

/**
 * The CSRF cookie of the MFA page. Under https a `__Host-` cookie (Secure, Path=/, no Domain: a sibling
 * subdomain cannot plant its own token); over plain http (local profile) scoped to the SAML endpoints.
 * SameSite=Strict: only this site's forms send it.
 */
export function csrfCookie(secure: boolean): { name: string; path: string } {
  return secure ? { name: '__Host-secsvc_saml_csrf', path: '/' } : { name: 'secsvc_saml_csrf', path: '/v1/sso/saml/' };
}
/** As long as a login challenge lives (5 minutes), with room. */
const CSRF_COOKIE_SECONDS = 600;

const MAX_RETURN_TO = 4096;

/**
 * What the MFA page carries in hidden fields, so that a refused answer can show it again and the login can go
 * on afterwards. Nothing here is worth tampering with: the token is the challenge's own (only this browser has
 * it), the OAuth request goes to a fixed path where identity checks it again, and the app's URL is the
 * connection's.
 */
export interface SamlMfaState extends MfaFormState {
  returnTo: string;
  relayState: string;
  /** IdP-initiated into the app (the connection's initiateLoginUrl). */
  idpInitiated: boolean;
  provisioned: boolean;
}

/** The state of a challenge CompleteSamlLogin answered, for the login `next` describes. */
export function stateOfChallenge(c: identity.MfaChallenge, next: Omit<LoginContinuation, 'userId' | 'connectionId'>): SamlMfaState {
  return {
    ...mfaStateOfChallenge(c),
    returnTo: next.returnTo,
    relayState: next.relayState,
    idpInitiated: next.initiateLoginUrl !== '',
    provisioned: next.provisioned,
  };
}

type Params = ReturnType<typeof paramsOf>;

function stateOfForm(p: Params): SamlMfaState {
  const returnTo = p.get('return_to');
  return {
    ...mfaStateOfForm(p),
    // A query string as the login page wrote it: printable ASCII only.
    returnTo: returnTo.length <= MAX_RETURN_TO && /^[\x21-\x7e]*$/.test(returnTo) ? returnTo : '',
    relayState: Buffer.byteLength(p.get('relay_state')) <= RELAY_STATE_MAX ? p.get('relay_state') : '',
    idpInitiated: p.get('idp_initiated') === '1',
    provisioned: p.get('provisioned') === '1',
  };
}

const hiddenOf = (s: SamlMfaState): Record<string, string> => ({
  mfa_token: s.mfaToken,
  mfa_methods: s.methods.join(' '),
  passkey_options: s.passkeyOptionsJson,
  return_to: s.returnTo,
  relay_state: s.relayState,
  idp_initiated: s.idpInitiated ? '1' : '',
  provisioned: s.provisioned ? '1' : '',
});

/** Sends the MFA page of a SAML login's second step (a fresh CSRF token in its cookie). */
export function showSamlMfa(
  deps: SsoDeps,
  res: Response,
  connection: Pick<identity.SsoConnection, 'id' | 'name'>,
  state: SamlMfaState,
  extra: { error?: string; status?: number } = {},
): void {
  const secure = deps.baseUrl.startsWith('https:');
  const cookie = csrfCookie(secure);
  const csrf = newCsrfToken();
  setCookie(res, cookie.name, csrf, { secure, sameSite: 'Strict', maxAgeSeconds: CSRF_COOKIE_SECONDS, path: cookie.path });
  const methods: MfaMethods = {
    totp: state.methods.includes('totp'),
    recoveryCode: state.methods.includes('recovery_code'),
    passkey: state.passkeyOptionsJson && jsonDataBlock(state.passkeyOptionsJson) !== undefined && passkeysUsable(deps.baseUrl) ? { optionsJson: state.passkeyOptionsJson } : undefined,
  };
  const page = mfaPage({ clientName: connection.name, params: {}, csrf, action: 'mfa', state: hiddenOf(state), methods, error: extra.error, formAction: mfaPath(connection.id) });
  sendPage(res, extra.status ?? 200, page);
}

/**
 * POST /v1/sso/saml/{id}/mfa: the MFA page's answer. Refused answers show the page again (401 wrong code,
 * 429 throttled, 400 unusable input); a missing or wrong CSRF token is a 403 page; an unknown, used or
 * expired token (5 minutes, 5 wrong answers) is a 400 naming mfa_token: the SAML login starts again. Success:
 * the session, and on as the login would have gone without the second step.
 */
export function samlMfaHandler(deps: SsoDeps) {
  return handler(async (req, res) => {
    const connection = await connectionOf(deps, req);
    const p = paramsOf(req.body);
    if (!csrfValid(req, p.get('csrf_token'), csrfCookie(deps.baseUrl.startsWith('https:')).name)) {
      sendPage(res, 403, errorPage('invalid_request', 'The form expired or its CSRF token is missing or invalid; sign in again'));
      return;
    }
    const state = stateOfForm(p);
    if (!state.mfaToken) throw AppError.field('mfa_token', 'is required (the MFA page carries it)');
    const proof = proofOf(p);
    if ('error' in proof) return showSamlMfa(deps, res, connection, state, { error: proof.error, status: 400 });
    let created: identity.CreatedSession;
    try {
      created = await deps.clients.identity.completeMfaLogin({ environment: connection.environment, mfaToken: state.mfaToken, proof, ...requestOrigin(req) }, callOptions(deps, req));
    } catch (err) {
      const e = fromGrpcError(err);
      if (e.code === 'invalid_request' && e.details.some((d) => d.field === 'mfaToken')) {
        throw AppError.field('mfa_token', 'unknown, used or expired: sign in with your identity provider again');
      }
      const refusal = refusalOf(e, proof.type, res);
      if (refusal) return showSamlMfa(deps, res, connection, state, refusal);
      throw e;
    }
    signIn(
      deps,
      req,
      res,
      { token: created.token, expiresAt: created.session?.expiresAt },
      {
        connectionId: connection.id,
        returnTo: state.returnTo,
        relayState: state.relayState,
        initiateLoginUrl: state.idpInitiated ? connection.initiateLoginUrl : '',
        userId: created.session?.userId ?? '',
        provisioned: state.provisioned,
      },
      true,
    );
  });
}
