/**
 * The OAuth 2.0 authorization server end to end, driven by the certified relying-party library
 * openid-client over the whole stack: discovery, PKCE, code exchange, ID token validation, refresh, userinfo,
 * revocation, introspection, client credentials; and every negative case of the issue as its own test.
 */
import type * as Oidc from 'openid-client' with { 'resolution-mode': 'import' };
import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { parseMetricsText } from '@secsvc/shared';
import { eventually, pipelined } from './support';
import { authorizationRequest, authorizeInteractively, get, hiddenInputs, Jar, json, PASSWORD, postForm, registerClient, startOAuthStack, userWithPassword, type OAuthStack } from './oauth-support';

jest.setTimeout(120_000);

const KEY = 'svc_sk_' + 'oauthE2eTests'.repeat(3);
const REDIRECT = 'http://127.0.0.1:9/callback';
const ALL = 'openid profile email offline_access read:users';

let s: OAuthStack;
/** openid-client is an ES module: loaded once (Jest's transform makes it CommonJS). */
let oidc: typeof Oidc;
let user: { id: string; email: string; name: string };
let publicClient: { clientId: string };
let confidential: { clientId: string; clientSecret?: string };

beforeAll(async () => {
  oidc = await import('openid-client');
  s = await startOAuthStack('oauth', KEY);
  user = await userWithPassword(s.api, 'ada.oauth@example.com', ['role_staff']);
  // Users act under the policies: staff may read users (the token's scopes narrow it further).
  await s.api('POST', '/policies', { name: 'staff read users', effect: 'allow', principals: ['role:staff'], actions: ['read', 'create'], resources: ['/users', '/users/*'] });
  publicClient = await registerClient(s.api, { name: 'SPA', type: 'public', redirectUris: [REDIRECT], scopes: ALL.split(' '), firstParty: true });
  confidential = await registerClient(s.api, {
    name: 'Partner app',
    type: 'confidential',
    redirectUris: [REDIRECT],
    scopes: [...ALL.split(' '), 'read:logs'],
  });
});

afterAll(() => s?.stop());

// The stack speaks http on 127.0.0.1: the library refuses that unless told.
const insecure = () => ({ execute: [oidc.allowInsecureRequests] });
const publicConfig = () => oidc.discovery(new URL(s.issuer), publicClient.clientId, undefined, oidc.None(), insecure());
const confidentialConfig = () => oidc.discovery(new URL(s.issuer), confidential.clientId, undefined, oidc.ClientSecretBasic(confidential.clientSecret!), insecure());

/** Authorization with PKCE as an app would do it: the URL, the user's login (and consent), the callback. */
async function authorizeWithPkce(config: Oidc.Configuration, scope = ALL, email = user.email) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT,
    scope,
    state,
    nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const callback = await authorizeInteractively(url, email);
  return { verifier, state, nonce, callback };
}

async function tokensFor(config: Oidc.Configuration, scope = ALL) {
  const a = await authorizeWithPkce(config, scope);
  return oidc.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce, idTokenExpected: scope.includes('openid') });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const apiWith = (token: string, method = 'GET', path = `/users/${user.id}`, body?: unknown) =>
  fetch(`${s.stack.baseUrl}${path}`, { method, headers: { ...bearer(token), ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
const tokenPost = (fields: Record<string, string>, headers: Record<string, string> = {}) => postForm(`${s.issuer}/oauth/token`, fields, undefined, headers);
const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}` });

/** A code for the public client, with its verifier (no exchange yet). */
async function publicCode(scope = ALL) {
  const { url, verifier } = authorizationRequest(s.issuer, { client_id: publicClient.clientId, redirect_uri: REDIRECT, scope, state: 'st' });
  const callback = await authorizeInteractively(url, user.email);
  return { code: callback.searchParams.get('code')!, verifier };
}
const exchangePublic = (code: string, verifier: string, over: Record<string, string> = {}) =>
  tokenPost({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier, client_id: publicClient.clientId, ...over });

/** The response once it has `status` (a revocation reaches every gateway through the change stream). */
const untilStatus = (fn: () => Promise<Response>, status: number) => eventually(fn, (r) => r.status === status, 10_000);

describe('discovery', () => {
  it('publishes OpenID Connect and RFC 8414 metadata that openid-client accepts', async () => {
    const config = await publicConfig();
    const meta = config.serverMetadata();
    expect(meta).toMatchObject({
      issuer: s.issuer,
      authorization_endpoint: `${s.issuer}/oauth/authorize`,
      token_endpoint: `${s.issuer}/oauth/token`,
      jwks_uri: `${s.issuer}/.well-known/jwks.json`,
      code_challenge_methods_supported: ['S256'],
    });
    expect(meta.scopes_supported).toEqual(expect.arrayContaining(['openid', 'offline_access', 'read:users', 'export:logs']));
    const rfc8414 = await json(await fetch(`${s.issuer}/.well-known/oauth-authorization-server`));
    expect(rfc8414).toEqual(meta);
  });
});

describe('authorization code with PKCE (public client, openid-client)', () => {
  it('logs in, exchanges the code, validates the ID token, reads userinfo and calls the API with the token', async () => {
    const config = await publicConfig();
    const tokens = await tokensFor(config);
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: s.issuer, sub: user.id, aud: publicClient.clientId, email: user.email, name: user.name });
    expect(tokens.refresh_token).toMatch(/^ort_/);
    expect(tokens.expiresIn()).toBeGreaterThan(800);
    const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(info).toMatchObject({ sub: user.id, email: user.email, email_verified: false, name: user.name });

    // The access token acts as the user, within its scopes and the policies.
    const read = await apiWith(tokens.access_token);
    expect(read.status).toBe(200);
    expect((await json(read)).data.id).toBe(user.id);
    const write = await apiWith(tokens.access_token, 'POST', '/users', { email: 'new@example.com', name: 'New' });
    expect(write.status).toBe(403);
    expect(write.headers.get('www-authenticate')).toContain('insufficient_scope');
    const body = await json(write);
    expect(body.error).toMatchObject({ code: 'forbidden', details: [{ field: 'scope', message: 'write:users is required' }] });
    expect((await apiWith(tokens.access_token, 'GET', '/api-keys')).status).toBe(403);
  });

  it('a token without the email scope still names its user by email in the audit log (authz.denied)', async () => {
    const tokens = await tokensFor(await publicConfig(), 'openid read:users');
    expect(tokens.scope).toBe('openid read:users');
    // Within the token's scope, but a policy denies it: refused, and recorded.
    const deny = await s.api('POST', '/policies', { name: 'no session list', effect: 'deny', principals: [`user:${user.id}`], actions: ['read'], resources: [`/users/${user.id}/sessions`] });
    try {
      const denied = await untilStatus(() => apiWith(tokens.access_token, 'GET', `/users/${user.id}/sessions`), 403);
      expect((await json(denied)).error.message).toBe('Denied by policy');
    } finally {
      await s.api('DELETE', `/policies/${deny.body.data.id}`);
    }
    const entries = await eventually(
      async () => ((await s.api('GET', '/logs?events=authz.denied&limit=100')).body.data as { actor: { id?: string }; target?: { id: string } }[]).filter((e) => e.actor.id === user.id && e.target?.id === `/users/${user.id}/sessions`),
      (es) => es.length > 0,
    );
    expect(entries[0]!.actor).toEqual({ id: user.id, email: user.email, type: 'user' });
  });

  it('refreshes (rotation), introspects and revokes', async () => {
    const config = await publicConfig();
    const first = await tokensFor(config);
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.claims()!.sub).toBe(user.id);

    const conf = await confidentialConfig();
    const active = await oidc.tokenIntrospection(conf, second.access_token);
    expect(active).toMatchObject({ active: true, sub: user.id, client_id: publicClient.clientId, scope: ALL });
    // public clients introspect their own refresh tokens too (client_id only)
    expect((await oidc.tokenIntrospection(config, second.refresh_token!)).active).toBe(true);

    await oidc.tokenRevocation(config, second.refresh_token!);
    expect((await oidc.tokenIntrospection(conf, second.access_token)).active).toBe(false);
    expect((await untilStatus(() => apiWith(second.access_token), 401)).status).toBe(401);
    await expect(oidc.refreshTokenGrant(config, second.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('introspection also answers for session tokens and API keys', async () => {
    const conf = await confidentialConfig();
    const login = await s.api('POST', '/auth/login', { email: user.email, password: PASSWORD });
    expect(await oidc.tokenIntrospection(conf, login.body.data.token)).toMatchObject({ active: true, token_type: 'session', sub: user.id });
    expect(await oidc.tokenIntrospection(conf, KEY)).toMatchObject({ active: true, token_type: 'api_key' });
    expect(await oidc.tokenIntrospection(conf, 'svc_sk_' + 'x'.repeat(40))).toEqual({ active: false });
  });
});

describe('confidential client', () => {
  it('shows the consent page once, then remembers it; client_secret_basic', async () => {
    const config = await confidentialConfig();
    const jar = new Jar();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid email', state: 'x' });
    let res = await get(url.href, jar);
    jar.take(res);
    let fields = hiddenInputs(await res.text());
    expect(fields.action).toBe('login');
    res = await postForm(`${s.issuer}/oauth/authorize`, { ...fields, email: user.email, password: PASSWORD }, jar);
    jar.take(res);
    expect(res.status).toBe(200);
    const consent = await res.text();
    expect(consent).toContain('Partner app wants to access your account');
    expect(consent).toContain('See your email address');
    fields = hiddenInputs(consent);
    res = await postForm(`${s.issuer}/oauth/authorize`, { ...fields, consent: 'allow' }, jar);
    expect(res.status).toBe(303);
    const cb = new URL(res.headers.get('location')!);
    expect(cb.searchParams.get('iss')).toBe(s.issuer);
    const tokens = await oidc.authorizationCodeGrant(config, cb, { expectedState: 'x', idTokenExpected: true });
    expect(tokens.claims()!.email).toBe(user.email);
    // remembered: the logged-in browser goes straight back with a code
    const again = await get(url.href, jar);
    expect(again.status).toBe(302);
    expect(new URL(again.headers.get('location')!).searchParams.get('code')).toMatch(/^ocd_/);
  });

  it('client_credentials: a token that acts as the client within its scopes', async () => {
    const config = await confidentialConfig();
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'read:users read:logs' });
    expect(tokens.scope).toBe('read:users read:logs');
    expect(tokens.refresh_token).toBeUndefined();
    expect((await apiWith(tokens.access_token, 'GET', '/users?limit=1')).status).toBe(200);
    expect((await apiWith(tokens.access_token, 'POST', '/users', { email: 'cc@example.com', name: 'C' })).status).toBe(403);
  });

  it('client_credentials requested together (one TokenBatch call to identity): each its own token, event, user agent and trace', async () => {
    const n = 30;
    // Pipelined on one connection: the gateway reads them together, so they reach identity as batches.
    const res = await pipelined(
      s.issuer,
      Array.from({ length: n }, (_, i) => ({
        path: '/oauth/token',
        headers: { ...basic(confidential.clientId, confidential.clientSecret!), 'content-type': 'application/x-www-form-urlencoded', 'user-agent': `batch-e2e/${i}` },
        body: 'grant_type=client_credentials&scope=read%3Ausers',
      })),
    );
    expect(res.map((r) => r.status)).toEqual(Array(n).fill(200));
    const tokens = res.map((r) => JSON.parse(r.body) as { access_token: string; scope: string });
    expect(new Set(tokens.map((t) => t.access_token)).size).toBe(n);
    expect(tokens.every((t) => t.scope === 'read:users')).toBe(true);
    expect((await apiWith(tokens[n - 1].access_token, 'GET', '/users?limit=1')).status).toBe(200);
    // The requests reached identity in batches, not one call each.
    const batches = parseMetricsText(await (await fetch(`${s.stack.admin.identity}/metrics`)).text()).filter(
      (m) => m.name === 'grpc_server_handled_total' && m.labels.grpc_method === 'TokenBatch' && m.labels.grpc_code === 'OK',
    );
    expect(batches.reduce((sum, m) => sum + m.value, 0)).toBeGreaterThan(0);
    const traceOf = new Map(res.map((r, i) => [`batch-e2e/${i}`, r.headers.traceparent!.split('-')[1]]));
    const entries = await eventually(
      async () => ((await s.api('GET', '/logs?events=oauth.token.issued&limit=100')).body.data as { id: string; context: { userAgent: string } }[]).filter((e) => traceOf.has(e.context.userAgent)),
      (found) => found.length >= n,
      20_000,
    );
    expect(entries.map((e) => e.context.userAgent).sort()).toEqual([...traceOf.keys()].sort());
    for (const e of entries.slice(0, 5)) expect((await s.api('GET', `/logs/${e.id}`)).body.data.traceId).toBe(traceOf.get(e.context.userAgent));
  });

  it('expired JWTs refused together (one ReportAuthFailureBatch call to identity): each refusal its own auth.failed event', async () => {
    const { access_token } = await json(await tokenPost({ grant_type: 'client_credentials', scope: 'read:users' }, basic(confidential.clientId, confidential.clientSecret!)));
    const [h, p] = access_token.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString()) as { exp: number };
    // Expired past the leeway (refused before any signature work), each a token of its own.
    const expired = (i: number) => `${h}.${Buffer.from(JSON.stringify({ ...claims, exp: claims.exp - 3_600 - i })).toString('base64url')}.${randomBytes(64).toString('base64url')}`;
    const n = 20;
    const res = await pipelined(
      s.issuer,
      Array.from({ length: n }, (_, i) => ({ method: 'GET', path: '/v1/users?limit=1', headers: { authorization: `Bearer ${expired(i)}`, 'user-agent': `refused-e2e/${i}` } })),
    );
    expect(res.map((r) => r.status)).toEqual(Array(n).fill(401));
    // Reported after answering (fire and forget): the batch call shows up shortly.
    const batched = await eventually(
      async () =>
        parseMetricsText(await (await fetch(`${s.stack.admin.identity}/metrics`)).text())
          .filter((m) => m.name === 'grpc_server_handled_total' && m.labels.grpc_method === 'ReportAuthFailureBatch' && m.labels.grpc_code === 'OK')
          .reduce((sum, m) => sum + m.value, 0),
      (calls) => calls > 0,
      10_000,
    );
    expect(batched).toBeGreaterThan(0);
    const entries = await eventually(
      async () =>
        ((await s.api('GET', '/logs?events=auth.failed&limit=100')).body.data as { id: string; context: { userAgent: string } }[]).filter((e) =>
          e.context.userAgent.startsWith('refused-e2e/'),
        ),
      (found) => found.length >= n,
      20_000,
    );
    expect(entries.map((e) => e.context.userAgent).sort()).toEqual(Array.from({ length: n }, (_, i) => `refused-e2e/${i}`).sort());
    for (const e of entries.slice(0, 3)) expect((await s.api('GET', `/logs/${e.id}`)).body.data.metadata).toMatchObject({ credential: 'jwt', reason: 'expired' });
  });

  it('manages API keys and clients with their scopes, never a client stronger than the token, nor a first-party one', async () => {
    // Administrative scopes are for first-party clients only.
    const thirdParty = await s.api('POST', '/oauth/clients', { name: 'Not first party', type: 'confidential', redirectUris: [REDIRECT], scopes: ['read:users', 'write:clients'] });
    expect([thirdParty.status, thirdParty.body.error.details]).toEqual([400, [{ field: 'scopes[1]', message: 'write:clients is an administrative scope: only a first-party client may have it' }]]);
    const c = await registerClient(s.api, { name: 'Manager', type: 'confidential', redirectUris: [REDIRECT], scopes: ['read:api_keys', 'read:clients', 'write:clients', 'read:users'], firstParty: true });
    expect((await s.api('PATCH', `/oauth/clients/${c.clientId}`, { firstParty: false })).body.error.details).toEqual([
      { field: 'firstParty', message: expect.stringContaining('must stay true while the client has write:clients') },
    ]);
    const { access_token } = await json(await tokenPost({ grant_type: 'client_credentials' }, basic(c.clientId, c.clientSecret!)));
    expect((await apiWith(access_token, 'GET', '/api-keys')).status).toBe(200);
    const key = await apiWith(access_token, 'POST', '/api-keys', { name: 'nope', type: 'secret' });
    expect([key.status, key.headers.get('www-authenticate')]).toEqual([403, expect.stringContaining('scope="write:api_keys"')]);
    expect((await apiWith(access_token, 'GET', '/sso/connections')).status).toBe(403);
    // A client it makes may ask for what this token has, nothing more (write:api_keys twice, by index).
    const beyond = await apiWith(access_token, 'POST', '/oauth/clients', { name: 'Escalation', type: 'confidential', redirectUris: [REDIRECT], scopes: ['read:users', 'write:api_keys', 'read:logs'] });
    expect(beyond.status).toBe(403);
    expect((await json(beyond)).error.details).toEqual([
      { field: 'scopes[1]', message: 'your access token does not have write:api_keys, so it cannot give it to a client' },
      { field: 'scopes[2]', message: 'your access token does not have read:logs, so it cannot give it to a client' },
    ]);
    const firstParty = await apiWith(access_token, 'POST', '/oauth/clients', { name: 'Silent', type: 'confidential', redirectUris: [REDIRECT], scopes: ['read:users'], firstParty: true });
    expect([firstParty.status, (await json(firstParty)).error.details.map((d: { field: string }) => d.field)]).toEqual([403, ['firstParty']]);
    const within = await apiWith(access_token, 'POST', '/oauth/clients', { name: 'Within', type: 'confidential', redirectUris: [REDIRECT], scopes: ['read:users'] });
    expect(within.status).toBe(201);
    const id = (await json(within)).data.clientId as string;
    expect((await apiWith(access_token, 'PATCH', `/oauth/clients/${id}`, { scopes: ['read:users', 'write:users'] })).status).toBe(403);
    expect((await apiWith(access_token, 'PATCH', `/oauth/clients/${id}`, { firstParty: true })).status).toBe(403);
    expect((await s.api('GET', `/oauth/clients/${id}`)).body.data).toMatchObject({ scopes: ['read:users'], firstParty: false });
    expect((await apiWith(access_token, 'PATCH', `/oauth/clients/${id}`, { redirectUris: ['https://app.example.com/cb'] })).status).toBe(200);
    // Not a first-party client (it skips consent: its redirect URIs would collect other users' codes), nor one stronger than the token.
    const hijack = await apiWith(access_token, 'PATCH', `/oauth/clients/${publicClient.clientId}`, { redirectUris: ['https://evil.example/cb'] });
    expect([hijack.status, (await json(hijack)).error.details.map((d: { field: string }) => d.field)]).toEqual([403, ['id', 'id']]);
    expect((await s.api('GET', `/oauth/clients/${publicClient.clientId}`)).body.data.redirectUris).toEqual([REDIRECT]);
    expect((await apiWith(access_token, 'DELETE', `/oauth/clients/${confidential.clientId}`)).status).toBe(403); // it has read:logs, the token has not
    expect((await apiWith(access_token, 'DELETE', `/oauth/clients/${id}`)).status).toBe(204);
  });

  it('deleting the client revokes its tokens at once', async () => {
    const c = await registerClient(s.api, { name: 'Doomed', type: 'confidential', redirectUris: [REDIRECT], scopes: ['read:users'] });
    const res = await tokenPost({ grant_type: 'client_credentials' }, basic(c.clientId, c.clientSecret!));
    const { access_token } = await json(res);
    expect((await apiWith(access_token, 'GET', '/users?limit=1')).status).toBe(200);
    expect((await s.api('DELETE', `/oauth/clients/${c.clientId}`)).status).toBe(204);
    expect((await untilStatus(() => apiWith(access_token, 'GET', '/users?limit=1'), 401)).status).toBe(401);
  });
});

describe('end session (OpenID Connect RP-Initiated Logout, openid-client)', () => {
  /** A browser (its cookie jar) signed in at the authorization server, the tokens its login gave, and a fresh authorization URL. */
  async function signedInBrowser(config: Oidc.Configuration) {
    const jar = new Jar();
    const a = await authorizeWithPkceIn(config, jar);
    const tokens = await oidc.authorizationCodeGrant(config, a.callback, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce, idTokenExpected: true });
    const again = authorizationRequest(s.issuer, { client_id: publicClient.clientId, redirect_uri: REDIRECT, scope: 'openid', state: 'again' }).url;
    return { jar, tokens, again };
  }
  async function authorizeWithPkceIn(config: Oidc.Configuration, jar: Jar) {
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: ALL, state, nonce, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    return { verifier, state, nonce, callback: await authorizeInteractively(url, user.email, PASSWORD, jar) };
  }
  /** Whether the browser is still signed in: the authorization endpoint goes straight back with a code, or shows the login page. */
  async function signedIn(jar: Jar, url: URL): Promise<boolean> {
    const res = await get(url.href, jar);
    if (res.status === 302) return new URL(res.headers.get('location')!).searchParams.has('code');
    expect([res.status, hiddenInputs(await res.text()).action]).toEqual([200, 'login']);
    return false;
  }

  it('ends the login session at once with its user\'s ID token and goes back to the client with state', async () => {
    const config = await publicConfig();
    expect(config.serverMetadata().end_session_endpoint).toBe(`${s.issuer}/oauth/logout`);
    const { jar, tokens, again } = await signedInBrowser(config);
    await expect(signedIn(jar, again)).resolves.toBe(true);
    const end = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: REDIRECT, state: 'bye' });
    const res = await get(end.href, jar);
    expect([res.status, res.headers.get('location')]).toEqual([303, `${REDIRECT}?state=bye`]);
    expect(res.headers.getSetCookie().join('\n')).toMatch(/secsvc_oauth_session=; Path=\/oauth; HttpOnly; SameSite=Lax; Max-Age=0/);
    jar.take(res);
    await expect(signedIn(jar, again)).resolves.toBe(false);
    // Nobody signed in any more: the same request just goes back.
    const twice = await get(end.href, jar);
    expect([twice.status, twice.headers.get('location')]).toEqual([303, `${REDIRECT}?state=bye`]);
    // A relying party's form post (cross-site: the Lax cookie would not come) goes on to the same request by GET.
    const posted = await postForm(`${s.issuer}/oauth/logout`, { client_id: publicClient.clientId, post_logout_redirect_uri: REDIRECT, state: 'p' });
    expect([posted.status, posted.headers.get('location')]).toEqual([303, `/oauth/logout?client_id=${publicClient.clientId}&post_logout_redirect_uri=${encodeURIComponent(REDIRECT)}&state=p`]);
    // Without anywhere to go: a page says so.
    const plain = await get(`${s.issuer}/oauth/logout`);
    expect([plain.status, await plain.text()]).toEqual([200, expect.stringContaining('You are signed out')]);
  });

  it('asks the user without an ID token hint of theirs, and refuses unregistered destinations and forged hints', async () => {
    const config = await publicConfig();
    const { jar, again } = await signedInBrowser(config);
    const logout = (q: Record<string, string>) => get(`${s.issuer}/oauth/logout?${new URLSearchParams(q)}`, jar);
    const elsewhere = await logout({ client_id: publicClient.clientId, post_logout_redirect_uri: 'https://evil.example/' });
    expect([elsewhere.status, await elsewhere.text()]).toEqual([400, expect.stringContaining('not a redirect URI registered for this client')]);
    expect((await logout({ post_logout_redirect_uri: REDIRECT })).status).toBe(400); // which client's?
    const [header, payload] = (await signedInBrowser(config)).tokens.id_token!.split('.');
    const forged = await logout({ id_token_hint: `${header}.${payload}.${Buffer.alloc(64).toString('base64url')}` });
    expect([forged.status, await forged.text()]).toEqual([400, expect.stringContaining('id_token_hint: not an ID token this server issued')]);
    const accessToken = await logout({ id_token_hint: (await signedInBrowser(config)).tokens.access_token });
    expect(accessToken.status).toBe(400);
    await expect(signedIn(jar, again)).resolves.toBe(true);

    const ask = await logout({ client_id: publicClient.clientId, post_logout_redirect_uri: REDIRECT, state: 's1' });
    jar.take(ask);
    const page = await ask.text();
    expect(ask.status).toBe(200);
    expect(page).toContain('Sign out?');
    expect(page).toContain(user.email);
    expect(ask.headers.get('content-security-policy')).toContain("form-action 'self' http://127.0.0.1:9");
    const fields = hiddenInputs(page);
    expect(fields).toMatchObject({ action: 'confirm', client_id: publicClient.clientId, post_logout_redirect_uri: REDIRECT, state: 's1', csrf_token: expect.stringMatching(/^[\w-]{43}$/) });
    const forgedForm = await postForm(`${s.issuer}/oauth/logout`, { ...fields, csrf_token: 'x'.repeat(43) }, jar);
    expect(forgedForm.status).toBe(403);
    await expect(signedIn(jar, again)).resolves.toBe(true);
    const confirmed = await postForm(`${s.issuer}/oauth/logout`, fields, jar);
    expect([confirmed.status, confirmed.headers.get('location')]).toEqual([303, `${REDIRECT}?state=s1`]);
    jar.take(confirmed);
    await expect(signedIn(jar, again)).resolves.toBe(false);
  });
});

describe('negative cases', () => {
  it('wrong code_verifier', async () => {
    const { code } = await publicCode();
    const res = await exchangePublic(code, randomBytes(32).toString('base64url'));
    expect(res.status).toBe(400);
    expect(await json(res)).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('code_verifier') });
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('reused code: refused, and every token issued from it is revoked (cascade)', async () => {
    const { code, verifier } = await publicCode();
    const first = await json(await exchangePublic(code, verifier));
    expect((await apiWith(first.access_token)).status).toBe(200);
    const second = await exchangePublic(code, verifier);
    expect(second.status).toBe(400);
    expect((await json(second)).error).toBe('invalid_grant');
    expect((await untilStatus(() => apiWith(first.access_token), 401)).status).toBe(401);
    const refresh = await tokenPost({ grant_type: 'refresh_token', refresh_token: first.refresh_token, client_id: publicClient.clientId });
    expect((await json(refresh)).error).toBe('invalid_grant');
  });

  it('redirect_uri mismatch at the token endpoint', async () => {
    const { code, verifier } = await publicCode();
    const res = await exchangePublic(code, verifier, { redirect_uri: 'http://127.0.0.1:9/other' });
    expect(await json(res)).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('redirect_uri') });
  });

  it('expired code (60 s)', async () => {
    const { code, verifier } = await publicCode();
    const db = new pg.Client({ connectionString: s.stack.databaseUrl });
    await db.connect();
    try {
      await db.query(`UPDATE identity.oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`);
    } finally {
      await db.end();
    }
    const res = await exchangePublic(code, verifier);
    expect(await json(res)).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });
  });

  it('unknown client: an error page (404) at the authorization endpoint, invalid_client at the token endpoint', async () => {
    const page = await get(`${s.issuer}/oauth/authorize?response_type=code&client_id=cli_00000000000000000000000000&redirect_uri=${encodeURIComponent(REDIRECT)}`);
    expect(page.status).toBe(404);
    expect(page.headers.get('location')).toBeNull();
    expect(await page.text()).toContain('unknown client');
    const res = await tokenPost({ grant_type: 'client_credentials' }, basic('cli_00000000000000000000000000', 'ocs_nope'));
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('Basic');
    expect((await json(res)).error).toBe('invalid_client');
  });

  it('refresh token reuse revokes the whole family', async () => {
    const config = await publicConfig();
    const first = await tokensFor(config);
    const second = await oidc.refreshTokenGrant(config, first.refresh_token!);
    await expect(oidc.refreshTokenGrant(config, first.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(oidc.refreshTokenGrant(config, second.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await untilStatus(() => apiWith(second.access_token), 401)).status).toBe(401);
  });

  it('CSRF token missing or wrong on the login form', async () => {
    const jar = new Jar();
    const url = `${s.issuer}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: confidential.clientId, redirect_uri: REDIRECT, scope: 'openid' })}`;
    const page = await get(url, jar);
    jar.take(page);
    const fields = hiddenInputs(await page.text());
    const { csrf_token: _csrf, ...withoutToken } = fields;
    const missing = await postForm(`${s.issuer}/oauth/authorize`, { ...withoutToken, email: user.email, password: PASSWORD }, jar);
    expect(missing.status).toBe(403);
    expect(missing.headers.getSetCookie().some((c) => c.startsWith('secsvc_oauth_session='))).toBe(false);
    const noCookie = await postForm(`${s.issuer}/oauth/authorize`, { ...fields, email: user.email, password: PASSWORD });
    expect(noCookie.status).toBe(403);
    const wrong = await postForm(`${s.issuer}/oauth/authorize`, { ...fields, csrf_token: randomBytes(32).toString('base64url'), email: user.email, password: PASSWORD }, jar);
    expect(wrong.status).toBe(403);
  });

  it('open-redirect attempts are shown on a page, never redirected', async () => {
    for (const evil of ['https://evil.example/callback', 'http://127.0.0.1:9/callback/../../evil', 'http://127.0.0.1:9/callback?x=1', 'http://127.0.0.1:9@evil.example/callback', '//evil.example/']) {
      const url = `${s.issuer}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: publicClient.clientId, redirect_uri: evil, scope: 'openid' })}`;
      const res = await get(url);
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
    }
    // a redirect_uri given twice is refused too
    const twice = await get(`${s.issuer}/oauth/authorize?response_type=code&client_id=${publicClient.clientId}&redirect_uri=${encodeURIComponent(REDIRECT)}&redirect_uri=https://evil.example/`);
    expect(twice.status).toBe(400);
    expect(twice.headers.get('location')).toBeNull();
  });

  it('scope escalation on refresh', async () => {
    const config = await publicConfig();
    const narrow = await tokensFor(config, 'openid offline_access');
    await expect(oidc.refreshTokenGrant(config, narrow.refresh_token!, { scope: 'openid offline_access read:users' })).rejects.toMatchObject({ error: 'invalid_scope' });
  });

  it('a public client presenting a secret', async () => {
    const { code, verifier } = await publicCode();
    const res = await tokenPost({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT, code_verifier: verifier }, basic(publicClient.clientId, 'ocs_madeUp'));
    expect(res.status).toBe(401);
    expect(await json(res)).toMatchObject({ error: 'invalid_client', error_description: expect.stringContaining('public client') });
  });

  it('a token for another audience (the ID token) is refused by the API', async () => {
    const tokens = await tokensFor(await publicConfig());
    const res = await apiWith(tokens.id_token!);
    expect(res.status).toBe(401);
    expect(await json(await fetch(`${s.issuer}/oauth/userinfo`, { headers: bearer(tokens.id_token!) }))).toMatchObject({ error: 'invalid_token' });
    const conf = await confidentialConfig();
    expect(await oidc.tokenIntrospection(conf, tokens.id_token!)).toEqual({ active: false });
  });

  it('the login form is throttled per account (5 failures) like /auth/login', async () => {
    const victim = await userWithPassword(s.api, 'throttled.oauth@example.com');
    const url = `${s.issuer}/oauth/authorize?${new URLSearchParams({ response_type: 'code', client_id: confidential.clientId, redirect_uri: REDIRECT, scope: 'openid' })}`;
    const attempt = async (password: string) => {
      const jar = new Jar();
      const page = await get(url, jar);
      jar.take(page);
      return postForm(`${s.issuer}/oauth/authorize`, { ...hiddenInputs(await page.text()), email: victim.email, password }, jar);
    };
    for (let i = 0; i < 5; i++) {
      const res = await attempt('wrong password number ' + i);
      expect(res.status).toBe(401);
      expect(await res.text()).toContain('Invalid email or password');
    }
    const blocked = await attempt(PASSWORD);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('malformed token requests are 4xx in the RFC 6749 shape, never 500', async () => {
    const many = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`p${i}`, 'x']));
    const tooMany = await tokenPost({ grant_type: 'client_credentials', ...many });
    expect(tooMany.status).toBe(400);
    expect((await json(tooMany)).error).toBe('invalid_request');
    const huge = await tokenPost({ grant_type: 'client_credentials', scope: 'x'.repeat(100_000) });
    expect(huge.status).toBe(413);
    const asJson = await fetch(`${s.issuer}/oauth/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"grant_type":"client_credentials"}' });
    expect(asJson.status).toBe(400);
    expect(await json(asJson)).toMatchObject({ error: 'invalid_request' });
    const twice = await postForm(`${s.issuer}/oauth/token`, {}, undefined, {});
    expect((await json(twice)).error).toBe('invalid_client');
    const repeated = await fetch(`${s.issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...basic(confidential.clientId, confidential.clientSecret!) },
      body: 'grant_type=client_credentials&scope=read:users&scope=read:logs',
    });
    expect(await json(repeated)).toMatchObject({ error: 'invalid_request', error_description: 'scope: given more than once' });
  });

  it('plain PKCE is refused and public clients must use PKCE (errors go back to the client)', async () => {
    const base = { response_type: 'code', client_id: publicClient.clientId, redirect_uri: REDIRECT, scope: 'openid', state: 's1' };
    const none = await get(`${s.issuer}/oauth/authorize?${new URLSearchParams(base)}`);
    expect(none.status).toBe(302);
    expect(Object.fromEntries(new URL(none.headers.get('location')!).searchParams)).toMatchObject({ error: 'invalid_request', state: 's1', iss: s.issuer });
    const plain = await get(`${s.issuer}/oauth/authorize?${new URLSearchParams({ ...base, code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' })}`);
    expect(new URL(plain.headers.get('location')!).searchParams.get('error_description')).toContain('plain');
  });
});
