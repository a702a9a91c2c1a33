import express, { type Request, type Response } from 'express';
import type { identity } from '@secsvc/proto';
import { AppError } from '@secsvc/shared';
import { formBody } from '../middleware/input';
import { SAML_FORM_FIELDS, SAML_MFA_FORM_FIELDS } from '../openapi/surface';
import { setCookie } from '../http/cookies';
import { assertionFacts, checkResponseRoot, decodeResponse, firstString, SamlRefusal } from './assertion';
import { bindingCookie, bindingOf, browserNonce, openState, sameBrowser, sealState, stateKey, STATE_TTL_MS, type PendingLogin } from './binding';
import { callOptions, connectionOf, handler, keysOf, RELAY_STATE_MAX, store, type SsoDeps } from './context';
import { samlMfaHandler, showSamlMfa, stateOfChallenge } from './mfa';
import { signIn } from './sign-in';
import { sha1Policy } from './signatures';
import { sloHandler } from './slo';
import { ANY_REQUEST, requestIdCache, samlFor, spMetadataXml, spUrls, validateResponse } from './sp';
import { requestOrigin } from '../http/origin';

export type { SsoDeps } from './context';

/** The OAuth authorization request a login from the OAuth login page continues with (its query string). */
const OAUTH_QUERY_MAX = 4096;

/** A refused response or continuation: user.login failure with the reason, then 401 naming SAMLResponse. */
async function refuse(deps: SsoDeps, req: Request, connectionId: string, reason: string): Promise<never> {
  await deps.clients.identity.reportSamlLoginFailure(
    { connectionId, reason, email: '', ...requestOrigin(req) },
    callOptions(deps, req),
  );
  throw new AppError('unauthorized', 'The SAML response was refused', [{ field: 'SAMLResponse', message: reason }]);
}

/**
 * A validated response becomes a login: user found or created, session opened, and on as signIn says (the
 * OAuth authorization request it started from, the app's login initiation URL, or the JSON answer). When the
 * connection requires MFA the IdP did not assert, identity answers with a challenge instead: the MFA page,
 * whose answer (POST /mfa) opens the session and goes on the same way.
 */
async function completeLogin(
  deps: SsoDeps,
  req: Request,
  res: Response,
  connection: identity.SsoConnection,
  login: Omit<PendingLogin, 'binding' | 'expires'>,
  initiateLoginUrl = '',
): Promise<void> {
  const out = await deps.clients.identity.completeSamlLogin(
    {
      connectionId: login.connectionId,
      assertionId: login.assertionId,
      assertionExpiresAt: login.assertionExpiresAt,
      nameId: login.nameId,
      email: login.email,
      name: login.name,
      ...requestOrigin(req),
      expiresInSeconds: 0,
      sessionIndex: login.sessionIndex,
      nameIdFormat: login.nameIdFormat,
      authnContextClassRefs: login.authnContextClassRefs ?? [],
    },
    callOptions(deps, req),
  );
  const next = { connectionId: login.connectionId, returnTo: login.returnTo, relayState: login.relayState, initiateLoginUrl, userId: out.userId, provisioned: out.provisioned };
  if (out.mfa) return showSamlMfa(deps, res, connection, stateOfChallenge(out.mfa, next));
  if (!out.session) throw new AppError('internal_error', 'CompleteSamlLogin answered neither a session nor a challenge');
  signIn(deps, req, res, { token: out.session.token, expiresAt: out.session.session?.expiresAt }, next);
}

/**
 * The SAML 2.0 service provider endpoints of each connection (no credential: browsers and IdPs call them):
 * SP metadata, SP-initiated login (HTTP-Redirect, signed AuthnRequest) and the assertion consumer (HTTP-POST).
 */
export function ssoRouter(deps: SsoDeps): express.Router {
  const router = express.Router();
  // Sealed with the active key; opened with it or the rollover key.
  const stateKeys = deps.keys ? [deps.keys, ...(deps.keys.rollover ? [deps.keys.rollover] : [])].map((k) => stateKey(k.privateKey)) : [];
  const secure = deps.baseUrl.startsWith('https:');
  const cookie = bindingCookie(secure);
  const form = formBody('512kb', SAML_FORM_FIELDS);

  router.get(
    '/:id/metadata',
    handler(async (req, res) => {
      const keys = keysOf(deps);
      const connection = await connectionOf(deps, req);
      res.type('application/samlmetadata+xml').send(spMetadataXml(connection, { ...deps, keys }));
    }),
  );

  router.get(
    '/:id/login',
    handler(async (req, res) => {
      const keys = keysOf(deps);
      const relayState = req.query.relayState ?? req.query.RelayState ?? '';
      if (typeof relayState !== 'string' || Buffer.byteLength(relayState) > RELAY_STATE_MAX) {
        throw AppError.field('relayState', `must be one string of at most ${RELAY_STATE_MAX} bytes`);
      }
      // From the OAuth login page: the authorization request to continue with after the ACS.
      const oauth = req.query.oauth ?? '';
      if (typeof oauth !== 'string' || oauth.length > OAUTH_QUERY_MAX) throw AppError.field('oauth', `must be one string of at most ${OAUTH_QUERY_MAX} characters`);
      const connection = await connectionOf(deps, req);
      // The browser's nonce (HttpOnly cookie below /v1/sso/saml/): only this browser can finish the login.
      const nonce = browserNonce(req, cookie.name);
      const cache = requestIdCache(store(deps, req), connection.id, deps.requestTtlSeconds, { returnTo: oauth, binding: bindingOf(nonce) });
      const saml = samlFor(connection, { ...deps, keys }, cache);
      setCookie(res, cookie.name, nonce, { secure, sameSite: 'Lax', maxAgeSeconds: deps.requestTtlSeconds, path: cookie.path });
      res.setHeader('Cache-Control', 'no-store');
      res.redirect(302, await saml.getAuthorizeUrlAsync(relayState, undefined, {}));
    }),
  );

  router.post(
    '/:id/acs',
    form,
    handler(async (req, res) => {
      const keys = keysOf(deps);
      const body = (req.body ?? {}) as Record<string, unknown>;
      if (typeof body.SAMLResponse !== 'string' || !body.SAMLResponse) throw AppError.field('SAMLResponse', 'is required (HTTP-POST binding)');
      const relayState = typeof body.RelayState === 'string' ? body.RelayState.slice(0, RELAY_STATE_MAX) : '';
      const connection = await connectionOf(deps, req);
      const { acsUrl, continueUrl } = spUrls(deps.baseUrl, connection.id);
      let login: Omit<PendingLogin, 'binding' | 'expires'>;
      const cache = requestIdCache(store(deps, req), connection.id, deps.requestTtlSeconds);
      try {
        const xml = decodeResponse(body.SAMLResponse);
        const { inResponseTo } = checkResponseRoot(xml, acsUrl);
        // node-saml looks InResponseTo up before it checks the signature: it gets a cache that knows every id,
        // and the request is taken from the real one only once the response proved genuine (a forged
        // response naming a pending request cannot use it up).
        const sha1 = sha1Policy(connection, deps.logger, req.requestId);
        const { profile } = await validateResponse(connection, { ...deps, keys }, ANY_REQUEST, body.SAMLResponse, xml, sha1);
        if (!profile) throw new SamlRefusal('no_assertion');
        if (inResponseTo && !(await cache.getAsync(inResponseTo))) throw new Error('InResponseTo is not valid');
        const facts = assertionFacts(profile.getAssertionXml!(), { acsUrl, issuer: connection.idpEntityId }, deps.clockSkewMs);
        const mapping = JSON.parse(connection.attributeMappingJson || '{}') as { email?: string; name?: string };
        login = {
          connectionId: connection.id,
          assertionId: facts.id,
          assertionExpiresAt: facts.expiresAt.toISOString(),
          nameId: profile.nameID,
          nameIdFormat: profile.nameIDFormat ?? '',
          sessionIndex: typeof profile.sessionIndex === 'string' ? profile.sessionIndex : '',
          email: mapping.email ? firstString(profile[mapping.email]) : profile.nameID,
          name: mapping.name ? firstString(profile[mapping.name]) : '',
          returnTo: cache.taken()?.returnTo ?? '',
          relayState,
          authnContextClassRefs: facts.authnContextClassRefs,
        };
      } catch (err) {
        if (err instanceof SamlRefusal) return refuse(deps, req, connection.id, err.reason);
        if (err instanceof AppError) throw err;
        // node-saml's message says which check failed (signature, audience, conditions, InResponseTo...).
        deps.logger.info({ requestId: req.requestId, connectionId: connection.id, why: (err as Error).message.slice(0, 200) }, 'SAML response refused');
        return refuse(deps, req, connection.id, `invalid_response: ${(err as Error).message.slice(0, 160)}`);
      }
      const binding = cache.taken()?.binding;
      if (binding) {
        // Started by a browser: finish in that browser only. The POST came cross-site without the Lax
        // cookie; a 303 turns it into a top-level GET that carries it.
        const state = sealState(stateKeys[0]!, { ...login, binding, expires: Date.now() + STATE_TTL_MS });
        res.setHeader('Cache-Control', 'no-store');
        res.redirect(303, `${continueUrl}?state=${state}`);
        return;
      }
      await completeLogin(deps, req, res, connection, login, connection.initiateLoginUrl);
    }),
  );

  router.get(
    '/:id/continue',
    handler(async (req, res) => {
      keysOf(deps);
      const connection = await connectionOf(deps, req);
      const token = req.query.state;
      if (typeof token !== 'string' || !token) throw AppError.field('state', 'is required (the ACS sends the browser here)');
      const state = openState(stateKeys, token, connection.id);
      if (typeof state === 'string') return refuse(deps, req, connection.id, state);
      // Login CSRF: a response obtained in another browser (or a link to this page) has no matching nonce.
      if (!sameBrowser(req, cookie.name, state.binding)) return refuse(deps, req, connection.id, 'browser_mismatch');
      await completeLogin(deps, req, res, connection, state);
    }),
  );
  // The second step of a login through a connection that requires MFA the IdP did not assert (mfa.ts).
  router.post('/:id/mfa', formBody('64kb', SAML_MFA_FORM_FIELDS), samlMfaHandler(deps));

  const slo = sloHandler(deps);
  router.get('/:id/slo', slo);
  router.post('/:id/slo', form, slo);

  return router;
}
