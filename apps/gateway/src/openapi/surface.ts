import { errorCodes, type ErrorCode } from '@secsvc/shared';
import type { SchemaSet, Json } from './schemas';

// The public HTTP routes that are not /v1 JSON routes: probes, the document itself, the authorization
// server (forms, HTML pages, redirects, RFC 6749 errors), the SAML endpoints (XML, browser redirects) and
// the download host. Written by hand because their bodies are forms, pages and files; the method checks
// (middleware/methods.ts) and the route-coverage test read these paths like the generated ones.

/** What a gateway serves beyond /v1's JSON routes. */
export interface Surface {
  /** The authorization server's endpoints (/oauth/*, discovery). */
  oauth: boolean;
  /** The SAML SP endpoints under /v1/sso/saml/{id}. */
  sso: boolean;
  /** The download host's URL (DOWNLOAD_BASE_URL), when this gateway serves it. */
  downloadBaseUrl?: string;
}

interface Common {
  headerRefs: (extra?: string[]) => Json;
  errorResponse: (code: ErrorCode, description?: string) => Json;
}

const str = (description: string, extra: Json = {}): Json => ({ type: 'string', description, ...extra });

/**
 * A form: string fields, each described; required ones are non-empty. Other fields are ignored (RFC 6749
 * 3.1), up to `maxFields` parameters in all (the parser's limit: more is 400).
 */
function fields(props: Record<string, string>, required: string[] = [], maxFields = OAUTH_FORM_FIELDS): Json {
  return {
    type: 'object',
    properties: Object.fromEntries(Object.entries(props).map(([k, d]) => [k, str(d, required.includes(k) ? { minLength: 1 } : {})])),
    ...(required.length ? { required } : {}),
    // One value per name: a name given twice is read as absent (parameters that matter are refused then).
    additionalProperties: { type: 'string' },
    maxProperties: maxFields,
  };
}

/** Query parameters: optional strings, unless `required` names them (then non-empty, or of `shapes`' schema). */
function queryParams(props: Record<string, string>, required: string[] = [], shapes: Record<string, Json> = {}): Json[] {
  return Object.entries(props).map(([name, description]) => ({
    name,
    in: 'query',
    required: required.includes(name),
    description,
    schema: shapes[name] ?? { type: 'string', ...(required.includes(name) ? { minLength: 1 } : {}) },
  }));
}

/** The form parsers' parameter limits (oauth/index.ts, sso/router.ts). */
export const OAUTH_FORM_FIELDS = 100;
export const SAML_FORM_FIELDS = 10;
/** The SAML MFA page's forms: its hidden fields and the answer. */
export const SAML_MFA_FORM_FIELDS = 20;

const ID_PARAM = { name: 'id', in: 'path', required: true, description: 'The SSO connection (sso_<id>)', schema: { type: 'string' } };

export function surfacePaths(o: Surface & { issuer: string }, set: SchemaSet, c: Common): Record<string, Record<string, Json>> {
  const h = c.headerRefs;
  const json = (description: string, schema: Json, extraHeaders: string[] = []): Json => ({ description, headers: h(extraHeaders), content: { 'application/json': { schema } } });
  const page = (description: string): Json => ({ description, headers: h(), content: { 'text/html': { schema: { type: 'string' } } } });
  const withPage = (r: Json): Json => ({ ...r, content: { ...(r.content as Json), 'text/html': { schema: { type: 'string' } } } });
  const redirect = (description: string): Json => ({ description, headers: { ...h(), Location: { required: true, schema: { type: 'string' } } } });
  const errors = (...codes: ErrorCode[]): Record<string, Json> => Object.fromEntries(codes.map((code) => [String(errorCodes[code].http), c.errorResponse(code)]));
  const open = (op: Json): Json => ({ security: [], ...op });
  const paths: Record<string, Record<string, Json>> = {};

  const anyObject = { type: 'object', additionalProperties: true };
  // The probes are not rate limited: their answers carry only X-Request-Id.
  const probe = (operationId: string, summary: string, ok: string, canFail: boolean): Json => {
    const headers = { 'X-Request-Id': { $ref: '#/components/headers/X-Request-Id' } };
    // /readyz also says each dependency's state (checks) and, when not ready, which are missing.
    const readiness = {
      checks: { type: 'object', additionalProperties: { type: 'boolean' }, description: 'each dependency (identity, policy, audit): reachable or not' },
      missing: { type: 'array', items: { type: 'string' }, description: 'the dependencies that are not reachable' },
    };
    const status = (description: string, values: string[]): Json => ({
      description,
      headers,
      content: { 'application/json': { schema: { type: 'object', properties: { status: { enum: values }, ...(canFail ? readiness : {}) }, required: ['status'], additionalProperties: false } } },
    });
    return open({ operationId, summary, tags: ['operations'], responses: { 200: status(ok, ['ok', 'ready']), ...(canFail ? { 503: status('Not ready: a dependency is unavailable', ['not ready']) } : {}) } });
  };
  paths['/healthz'] = { get: probe('healthz', 'Liveness', 'The process is up', false) };
  paths['/readyz'] = { get: probe('readyz', 'Readiness', 'Every dependency is reachable', true) };

  paths['/v1/openapi.json'] = {
    get: open({ operationId: 'getOpenApi', summary: 'This document (OpenAPI 3.1)', tags: ['meta'], responses: { 200: json('The document', anyObject), ...errors('invalid_request', 'rate_limited') } }),
  };
  paths['/.well-known/jwks.json'] = {
    get: open({
      operationId: 'getJwks',
      summary: 'Public keys of the access and ID token signers (RFC 7517)',
      tags: ['oauth'],
      responses: { 200: json('The key set', { type: 'object', properties: { keys: { type: 'array', items: anyObject } }, required: ['keys'] }), ...errors('invalid_request', 'rate_limited', 'internal_error', 'unavailable') },
    }),
  };

  if (o.oauth) {
    const discoveryOp = (operationId: string): Json =>
      open({ operationId, summary: 'Authorization server metadata (OpenID Connect Discovery 1.0, RFC 8414)', tags: ['oauth'], responses: { 200: json('The metadata', anyObject), ...errors('invalid_request', 'rate_limited') } });
    paths['/.well-known/openid-configuration'] = { get: discoveryOp('getOpenIdConfiguration') };
    paths['/.well-known/oauth-authorization-server'] = { get: discoveryOp('getOAuthServerMetadata') };
    paths['/oauth/assets/style.css'] = {
      get: open({ operationId: 'getLoginStylesheet', summary: 'The login pages\' stylesheet', tags: ['oauth'], responses: { 200: { description: 'CSS', headers: h(), content: { 'text/css': { schema: { type: 'string' } } } }, ...errors('invalid_request', 'rate_limited') } }),
    };
    paths['/oauth/assets/passkey.js'] = {
      get: open({
        operationId: 'getPasskeyScript',
        summary: 'The script of the login pages that offer a passkey (WebAuthn): the only script they run',
        tags: ['oauth'],
        responses: { 200: { description: 'JavaScript', headers: h(), content: { 'text/javascript': { schema: { type: 'string' } } } }, ...errors('invalid_request', 'rate_limited') },
      }),
    };
    set.add('OAuthError', {
      type: 'object',
      description: 'RFC 6749 5.2 error',
      properties: { error: { type: 'string' }, error_description: { type: 'string' } },
      required: ['error', 'error_description'],
    });
    const oauthError = (description: string, extra: string[] = []) => json(description, set.ref('OAuthError'), extra);
    // A query the input guard refuses is answered before the endpoint, in the API's error shape.
    const eitherError = (description: string) => json(description, { anyOf: [set.ref('OAuthError'), set.ref('Error')] });
    const authorizationParams = {
      client_id: 'The client (cli_<id>)',
      redirect_uri: 'One of the client\'s registered redirect URIs',
      response_type: 'code',
      scope: 'Space-separated scopes',
      state: 'Opaque value returned to the client',
      nonce: 'OpenID Connect nonce, copied into the ID token',
      code_challenge: 'PKCE S256 challenge (43 characters of base64url)',
      code_challenge_method: 'S256',
      prompt: 'none, login or consent',
      max_age: 'Seconds since the last authentication (login or MFA) after which the user must log in again',
      acr_values: 'urn:secsvc:acr:mfa asks for MFA: a login session without it is stepped up first (when the user has a factor)',
    };
    /** A browser-facing endpoint's 400: an error page, or the input guard's JSON refusal of the query or form. */
    const pageOrGuard400 = (description: string): Json => ({
      description: `${description} (an error page), or the input guard refused the query or form (JSON)`,
      headers: h(),
      content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: { anyOf: [set.ref('OAuthError'), set.ref('Error')] } } },
    });
    const pageResponses = {
      200: page('The login, MFA (second step or step-up) or consent page'),
      400: pageOrGuard400('The authorization request is invalid and cannot be sent back to the client'),
      ...errors('rate_limited', 'internal_error', 'unavailable'),
    };
    paths['/oauth/authorize'] = {
      get: open({
        operationId: 'authorize',
        summary: 'Authorization endpoint (RFC 6749 4.1, PKCE): the login page, the consent page, or back to the client',
        tags: ['oauth'],
        // An unknown client is 404 (an error page); with a known one, every other fault goes back to it.
        parameters: queryParams(authorizationParams, ['client_id', 'redirect_uri', 'response_type'], { client_id: { type: 'string', pattern: '^cli_[0-9a-z]{26}$' } }),
        responses: { ...pageResponses, 302: redirect('Back to the client\'s redirect_uri with a code or an error'), 404: page('No such client (an error page)') },
      }),
      post: open({
        operationId: 'authorizeForm',
        summary: 'The forms of the authorization pages: login, mfa (second step), passkey (passwordless), step_up, consent and sso',
        tags: ['oauth'],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: fields({
                ...authorizationParams,
                csrf_token: 'The page\'s CSRF token (double submit with its cookie)',
                action: 'login, mfa, passkey, step_up, consent or sso',
                email: 'Email (login, sso)',
                password: 'Password (login)',
                mfa_token: 'The login\'s second-step token (mfa)',
                mfa_type: 'totp, recovery_code or passkey (mfa, step_up)',
                code: 'The 6-digit authenticator code or a recovery code (mfa, step_up)',
                credential: 'The passkey\'s assertion, AuthenticationResponseJSON (passkey; mfa and step_up with mfa_type=passkey)',
                challenge_id: 'The passkey challenge of the page (passkey, step_up)',
                consent: 'allow or deny (consent)',
              }),
            },
          },
        },
        responses: {
          ...pageResponses,
          303: redirect('On to the client, the consent page or the SSO login'),
          401: page('Invalid email or password, or a second factor that was not accepted (the page again)'),
          403: page('The form\'s CSRF token is missing or invalid (an error page)'),
          413: eitherError('The form is larger than 64 KiB or has more than 100 parameters'),
          // Over the ip's rate limit (JSON), or too many failed sign-ins or second factors (the page again).
          429: withPage(c.errorResponse('rate_limited', 'Too many requests (JSON), or too many failed sign-ins or second factors: the page again (HTML); Retry-After')),
        },
      }),
    };
    const form = (props: Record<string, string>): Json => ({ required: true, content: { 'application/x-www-form-urlencoded': { schema: fields(props) } } });
    const clientAuth = { client_id: 'The client (public clients, or client_secret_post)', client_secret: 'The client secret (client_secret_post; or HTTP Basic)' };
    const tokenErrors = {
      400: eitherError('RFC 6749 5.2: invalid_request, invalid_grant, unsupported_grant_type, invalid_scope…'),
      401: oauthError('invalid_client', ['WWW-Authenticate']),
      413: eitherError('The form is larger than 64 KiB or has more than 100 parameters'),
      ...errors('rate_limited', 'internal_error', 'unavailable'),
    };
    paths['/oauth/token'] = {
      post: open({
        operationId: 'token',
        summary: 'Token endpoint: authorization_code (with PKCE), refresh_token (rotated), client_credentials',
        tags: ['oauth'],
        requestBody: form({ grant_type: 'authorization_code, refresh_token or client_credentials', code: 'The code (authorization_code)', redirect_uri: 'The redirect URI of the authorization request', code_verifier: 'PKCE verifier (43 to 128 characters)', refresh_token: 'The refresh token (refresh_token)', scope: 'Narrower scopes (refresh_token, client_credentials)', ...clientAuth }),
        responses: {
          200: json('Tokens', { type: 'object', properties: { access_token: { type: 'string' }, token_type: { type: 'string' }, expires_in: { type: 'integer' }, refresh_token: { type: 'string' }, id_token: { type: 'string' }, scope: { type: 'string' } }, required: ['access_token', 'token_type', 'expires_in'] }),
          ...tokenErrors,
        },
      }),
    };
    paths['/oauth/revoke'] = {
      post: open({
        operationId: 'revokeToken',
        summary: 'Revocation (RFC 7009): ends the grant of a refresh or access token',
        tags: ['oauth'],
        requestBody: form({ token: 'The token', token_type_hint: 'refresh_token or access_token', ...clientAuth }),
        responses: { 200: { description: 'Revoked (or unknown: RFC 7009 answers 200 either way)', headers: h() }, ...tokenErrors },
      }),
    };
    paths['/oauth/introspect'] = {
      post: open({
        operationId: 'introspectToken',
        summary: 'Introspection (RFC 7662) of access, refresh, session tokens and API keys, for an authenticated client',
        tags: ['oauth'],
        requestBody: form({ token: 'The token', token_type_hint: 'access_token, refresh_token…', ...clientAuth }),
        responses: { 200: json('active, and the token\'s claims when active', { type: 'object', properties: { active: { type: 'boolean' } }, required: ['active'] }), ...tokenErrors },
      }),
    };
    const userinfo = (operationId: string, body: boolean): Json =>
      open({
        operationId,
        summary: 'OpenID Connect UserInfo: sub, and name / email with the profile / email scopes (Authorization: Bearer <access token>)',
        tags: ['oauth'],
        ...(body ? { requestBody: { required: false, content: { 'application/x-www-form-urlencoded': { schema: fields({}) } } } } : {}),
        responses: {
          200: json('The claims', { type: 'object', properties: { sub: { type: 'string' } }, required: ['sub'] }),
          401: oauthError('No, an invalid or a revoked access token', ['WWW-Authenticate']),
          403: oauthError('The token lacks the openid scope', ['WWW-Authenticate']),
          503: oauthError('Revocation cannot be checked right now', ['Retry-After']),
          400: eitherError('The form or query was refused'),
          413: eitherError('The form is larger than 64 KiB or has more than 100 parameters'),
          ...errors('rate_limited', 'internal_error'),
        },
      });
    paths['/oauth/userinfo'] = { get: userinfo('userinfo', false), post: userinfo('userinfoForm', true) };
    const logoutParams = {
      id_token_hint: 'An ID token this server issued to the client (expired ones too): with the signed-in user\'s, no question is asked',
      client_id: 'The client (needed with post_logout_redirect_uri unless id_token_hint names it)',
      post_logout_redirect_uri: 'Where to go afterwards: one of the client\'s registered redirect URIs, exactly',
      state: 'Given back to post_logout_redirect_uri',
    };
    const logoutResponses = {
      200: page('Signed out, or the question whether to sign out (no id_token_hint of the signed-in user)'),
      303: redirect('Signed out: on to post_logout_redirect_uri (with state)'),
      400: pageOrGuard400('An invalid id_token_hint, client or post_logout_redirect_uri'),
      ...errors('rate_limited', 'internal_error', 'unavailable'),
    };
    paths['/oauth/logout'] = {
      get: open({
        operationId: 'endSession',
        summary: 'End-session endpoint (OpenID Connect RP-Initiated Logout 1.0): ends the login session of the authorization server',
        tags: ['oauth'],
        parameters: queryParams(logoutParams),
        responses: logoutResponses,
      }),
      post: open({
        operationId: 'endSessionForm',
        summary: 'The end-session endpoint by form (on to the same request by GET, 303), and its confirmation (action=confirm with the page\'s CSRF token)',
        tags: ['oauth'],
        // Every parameter is optional, so an empty form (or none) is a request too: on to GET /oauth/logout.
        requestBody: {
          required: false,
          content: { 'application/x-www-form-urlencoded': { schema: fields({ ...logoutParams, csrf_token: 'The confirmation page\'s CSRF token (action=confirm)', action: 'confirm (the confirmation page\'s form)' }) } },
        },
        responses: {
          ...logoutResponses,
          303: redirect('Signed out: on to post_logout_redirect_uri (with state); or, without action=confirm, on to the same request by GET'),
          403: page('The confirmation form\'s CSRF token is missing or invalid (an error page)'),
          413: eitherError('The form is larger than 64 KiB or has more than 100 parameters'),
        },
      }),
    };
  }

  if (o.sso) {
    const xml = (description: string, type: string): Json => ({ description, headers: h(), content: { [type]: { schema: { type: 'string' } } } });
    const refusals = errors('invalid_request', 'unauthorized', 'not_found', 'rate_limited', 'internal_error', 'unavailable');
    const samlForm = (props: Record<string, string>, required: string[] = [], extra: Json = {}): Json => ({
      required: true,
      content: { 'application/x-www-form-urlencoded': { schema: { ...fields(props, required, SAML_FORM_FIELDS), ...extra } } },
    });
    paths['/v1/sso/saml/{id}/metadata'] = {
      get: open({ operationId: 'getSamlSpMetadata', summary: 'SAML SP metadata of a connection (signed; the entity id, ACS, SLO and certificates)', tags: ['sso'], parameters: [ID_PARAM], responses: { 200: xml('The metadata', 'application/samlmetadata+xml'), ...refusals } }),
    };
    paths['/v1/sso/saml/{id}/login'] = {
      get: open({
        operationId: 'startSamlLogin',
        summary: 'SP-initiated login: a signed AuthnRequest to the IdP (HTTP-Redirect)',
        tags: ['sso'],
        parameters: [ID_PARAM, ...queryParams({ relayState: 'RelayState for the IdP (at most 80 bytes)', oauth: 'The OAuth authorization request to continue with (from the login page)' })],
        responses: { 302: redirect('To the IdP with the AuthnRequest'), ...refusals },
      }),
    };
    paths['/v1/sso/saml/{id}/acs'] = {
      post: open({
        operationId: 'samlAssertionConsumer',
        summary: 'Assertion consumer service (HTTP-POST): validates the IdP\'s response and signs the user in',
        tags: ['sso'],
        parameters: [ID_PARAM],
        requestBody: samlForm({ SAMLResponse: 'The base64 SAML Response', RelayState: 'RelayState' }, ['SAMLResponse']),
        responses: {
          200: withPage(json('Signed in (no browser binding): a session; or (text/html) the MFA page, when the connection requires MFA the IdP did not assert', anyObject)),
          303: redirect('On to the continuation, the OAuth login or the app\'s login initiation URL'),
          ...refusals,
          ...errors('payload_too_large'),
        },
      }),
    };
    paths['/v1/sso/saml/{id}/continue'] = {
      get: open({
        operationId: 'continueSamlLogin',
        summary: 'Finishes a browser\'s login in that browser (the binding cookie of /login)',
        tags: ['sso'],
        parameters: [ID_PARAM, ...queryParams({ state: 'The sealed state from the ACS' }, ['state'])],
        responses: { 200: withPage(json('Signed in: a session; or (text/html) the MFA page, when the connection requires MFA the IdP did not assert', anyObject)), 303: redirect('On to the OAuth login or the app'), ...refusals },
      }),
    };
    paths['/v1/sso/saml/{id}/mfa'] = {
      post: open({
        operationId: 'completeSamlMfa',
        summary: 'The MFA page\'s answer (a login through a connection that requires MFA the IdP did not assert): a TOTP code, a recovery code or a passkey; then on as the login would go',
        tags: ['sso'],
        parameters: [ID_PARAM],
        requestBody: {
          required: true,
          content: {
            'application/x-www-form-urlencoded': {
              schema: fields(
                {
                  csrf_token: 'The CSRF token of the page (double submit with its cookie)',
                  mfa_token: 'The login challenge\'s token (from the page)',
                  mfa_type: 'totp, recovery_code or passkey',
                  code: 'The TOTP or recovery code',
                  credential: 'A passkey\'s AuthenticationResponseJSON',
                },
                ['csrf_token', 'mfa_token', 'mfa_type'],
                SAML_MFA_FORM_FIELDS,
              ),
            },
          },
        },
        responses: {
          200: json('Signed in, when the login answers JSON: a session', anyObject),
          303: redirect('On to the OAuth login or the app\'s login initiation URL'),
          ...refusals,
          400: withPage(c.errorResponse('invalid_request', 'An unknown, used or expired mfa_token (JSON: sign in again), or a malformed answer (the page again, HTML)')),
          401: withPage(c.errorResponse('unauthorized', 'The second factor was not accepted: the page again (HTML)')),
          403: page('The CSRF token is missing or does not match its cookie (an error page)'),
          429: withPage(c.errorResponse('rate_limited', 'Too many requests (JSON), or too many failed second factors: the page again (HTML); Retry-After')),
          ...errors('payload_too_large'),
        },
      }),
    };
    const sloResponses = { 200: json('Sessions ended, or the logout finished', anyObject), 302: redirect('To the IdP with the signed LogoutResponse'), 303: redirect('To the returnTo of an SP-initiated logout'), ...refusals };
    const sloParams = { SAMLRequest: 'A LogoutRequest (HTTP-Redirect)', SAMLResponse: 'A LogoutResponse (HTTP-Redirect)', RelayState: 'RelayState', SigAlg: 'The signature algorithm', Signature: 'The signature' };
    paths['/v1/sso/saml/{id}/slo'] = {
      get: open({ operationId: 'samlLogoutRedirect', summary: 'Single logout, HTTP-Redirect binding (signed LogoutRequest or LogoutResponse)', tags: ['sso'], parameters: [ID_PARAM, ...queryParams(sloParams)], responses: sloResponses }),
      post: open({
        operationId: 'samlLogoutPost',
        summary: 'Single logout, HTTP-POST binding',
        tags: ['sso'],
        parameters: [ID_PARAM],
        requestBody: samlForm({ SAMLRequest: 'A LogoutRequest', SAMLResponse: 'A LogoutResponse', RelayState: 'RelayState' }, [], {
          anyOf: [
            { required: ['SAMLRequest'], properties: { SAMLRequest: { minLength: 1 } } },
            { required: ['SAMLResponse'], properties: { SAMLResponse: { minLength: 1 } } },
          ],
        }),
        responses: { ...sloResponses, ...errors('payload_too_large') },
      }),
    };
  }

  if (o.downloadBaseUrl) {
    const url = new URL(o.downloadBaseUrl);
    const sameOrigin = url.origin === new URL(o.issuer).origin;
    const path = `${url.pathname.replace(/\/+$/, '')}/{file}`;
    const download = (operationId: string, head: boolean): Json =>
      open({
        operationId,
        summary: `${head ? 'Headers of' : 'Download'} an export file by its signed link (the token is the credential; Range supported)`,
        tags: ['logs'],
        ...(sameOrigin ? {} : { servers: [{ url: url.origin }] }),
        parameters: [
          { name: 'file', in: 'path', required: true, description: '<exportId>.<format>', schema: { type: 'string' } },
          { name: 'token', in: 'query', required: true, description: 'The signed download token', schema: { type: 'string' } },
          { name: 'Range', in: 'header', required: false, description: 'One byte range: bytes=<from>-<to>', schema: { type: 'string' } },
        ],
        responses: {
          200: { description: 'The file', headers: h(), ...(head ? {} : { content: { 'application/octet-stream': { schema: { type: 'string' } } } }) },
          206: { description: 'The requested range', headers: h(), ...(head ? {} : { content: { 'application/octet-stream': { schema: { type: 'string' } } } }) },
          403: c.errorResponse('forbidden', 'The link is invalid, tampered with or expired'),
          416: c.errorResponse('range_not_satisfiable', 'The range is past the end of the file'),
          ...errors('invalid_request', 'not_found', 'rate_limited', 'internal_error', 'unavailable'),
        },
      });
    paths[path] = { get: download('downloadExport', false), head: download('headExport', true) };
  }
  return paths;
}
