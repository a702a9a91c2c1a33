/** The OAuth authorization server's RPCs against a real PostgreSQL: clients, authorize, token, revoke, introspect. */
import { Metadata } from '@grpc/grpc-js';
import { AppError, requestContext, type CallContext, type Pool } from '@secsvc/shared';
import { createHash, randomBytes } from 'node:crypto';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import pg from 'pg';
import type { IdentityConfig } from '../src/config';
import type { IdentityContext } from '../src/context';
import { CredentialChangeFeed } from '../src/domain/credential-change-feed';
import { masterKey, SigningKeyStore } from '../src/domain/signing-keys';
import { oauthGrantsRepository } from '../src/repositories/oauth';
import { base32Decode, hotp, timeStep } from '../src/domain/totp';
import type { MailQueue } from '../src/mail/queue';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { capturingTransport, testQueue } from './support/mail';
import { identityRpc } from './support/rpc';
import type { IdentityRpc } from '../src/rpc';

const config = {
  SERVER_SECRET: 'o'.repeat(40),
  ISSUER: 'https://auth.example.com',
  JWT_AUDIENCE: 'secsvc',
  ACCESS_TOKEN_TTL_SECONDS: 900,
  OAUTH_REFRESH_TOKEN_TTL_SECONDS: 30 * 86_400,
} as IdentityConfig;
const PASSWORD = 'correct horse battery staple';
const REDIRECT = 'https://app.example.com/callback';

let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;
let rpc: IdentityRpc;
let keys: SigningKeyStore;
const { transport, sent: mails } = capturingTransport();
let mail: MailQueue;

let ipCounter = 0;
/** Each call from its own ip unless told, so the per-ip failure throttle of one test does not leak into another. */
const call = (ip = `198.51.100.${(ipCounter++ % 250) + 1}`): CallContext => {
  const metadata = new Metadata();
  metadata.set('x-client-ip', ip);
  metadata.set('x-user-agent', 'jest');
  return { requestId: 'req_oauthtests000000000', metadata };
};

beforeAll(async () => {
  t = await identityTestDb(config);
  mail = testQueue(t.pool, transport, { serverSecret: config.SERVER_SECRET }).queue.start();
  ({ pool } = t);
  ctx = { ...t.ctx, mail };
  keys = new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET));
  rpc = identityRpc(ctx, { signingKeys: keys });
});

afterAll(async () => {
  await mail.close(1000);
  await closeIdentityTestDb(t);
});

let n = 0;
async function userWithSession(environment = 'live') {
  const u = await rpc.createUser({ environment, email: `o${n++}@example.com`, name: 'Ada O', roles: ['role_reader'], metadataJson: '' }, call());
  const s = await rpc.createSession({ environment, userId: u.id, expiresInSeconds: 3600, metadataJson: '' }, call());
  return { user: u, sessionToken: s.token, sessionId: s.session!.id };
}

async function newClient(over: Partial<{ type: string; scopes: string[]; firstParty: boolean; redirectUris: string[]; environment: string }> = {}) {
  const created = await rpc.createOAuthClient(
    {
      environment: over.environment ?? 'live',
      name: 'Example app',
      type: over.type ?? 'confidential',
      redirectUris: over.redirectUris ?? [REDIRECT],
      scopes: over.scopes ?? ['openid', 'profile', 'email', 'offline_access', 'read:users'],
      firstParty: over.firstParty ?? true,
    },
    call(),
  );
  return { id: created.client!.id, secret: created.clientSecret, client: created.client! };
}

const pkce = () => {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
};

const authParams = (clientId: string, over: Partial<Parameters<IdentityRpc['authorize']>[0]> = {}) => ({
  clientId,
  redirectUri: REDIRECT,
  responseType: 'code',
  scope: 'openid profile email offline_access read:users',
  state: 'st-123',
  nonce: 'n-456',
  codeChallenge: '',
  codeChallengeMethod: '',
  prompt: '',
  maxAge: '',
  repeatedParams: [],
  sessionToken: '',
  freshLogin: false,
  consent: '',
  ...over,
});

/** A code for a logged-in user (first-party client: no consent step). */
async function codeFor(client: { id: string }, sessionToken: string, over: Partial<Parameters<IdentityRpc['authorize']>[0]> = {}) {
  const res = await rpc.authorize(authParams(client.id, { sessionToken, ...over }), call());
  expect(res.outcome).toBe('redirect');
  const url = new URL(res.redirectTo);
  expect(url.searchParams.get('error')).toBeNull();
  return url.searchParams.get('code')!;
}

const tokenReq = (over: Partial<Parameters<IdentityRpc['token']>[0]>) => ({
  grantType: '',
  code: '',
  redirectUri: '',
  codeVerifier: '',
  refreshToken: '',
  scope: '',
  clientId: '',
  clientSecret: '',
  clientAuthMethod: 'client_secret_basic',
  repeatedParams: [],
  ...over,
});
const exchange = (client: { id: string; secret: string }, code: string, over: Partial<Parameters<IdentityRpc['token']>[0]> = {}) =>
  rpc.token(tokenReq({ grantType: 'authorization_code', code, redirectUri: REDIRECT, clientId: client.id, clientSecret: client.secret, ...over }), call());
const refreshWith = (client: { id: string; secret: string }, refreshToken: string, scope = '') =>
  rpc.token(tokenReq({ grantType: 'refresh_token', refreshToken, scope, clientId: client.id, clientSecret: client.secret }), call());
const introspect = async (client: { id: string; secret: string }, tok: string) =>
  JSON.parse(
    (await rpc.introspectToken({ token: tok, tokenTypeHint: '', clientId: client.id, clientSecret: client.secret, clientAuthMethod: 'client_secret_basic' }, call()))
      .resultJson,
  );
const revoke = (client: { id: string; secret: string }, tok: string) =>
  rpc.revokeToken({ token: tok, tokenTypeHint: '', clientId: client.id, clientSecret: client.secret, clientAuthMethod: 'client_secret_post' }, call());
const grantRevoked = async (grantId: string) => (await pool.query('SELECT revoked_at FROM oauth_grants WHERE id = $1', [grantId])).rows[0]?.revoked_at !== null;
const events = async (type: string) => (await pool.query(`SELECT payload FROM outbox WHERE event_type = $1 ORDER BY seq`, [type])).rows.map((r) => r.payload);

async function rejected(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

describe('client registration', () => {
  it('creates a confidential client with a secret shown once and stored only as a hash', async () => {
    const c = await newClient();
    expect(c.id).toMatch(/^cli_[0-9a-z]{26}$/);
    expect(c.secret).toMatch(/^ocs_/);
    const { rows } = await pool.query('SELECT secret_hash FROM oauth_clients WHERE id = $1', [c.id]);
    expect(rows[0].secret_hash).toHaveLength(32);
    expect(Buffer.from(rows[0].secret_hash).toString('latin1')).not.toContain(c.secret);
    const pub = await newClient({ type: 'public' });
    expect(pub.secret).toBe('');
    expect((await events('oauth_client.created')).length).toBeGreaterThanOrEqual(2);
  });

  it('names every faulty field: redirect URIs (exact, https or loopback http), scopes, type', async () => {
    const err = await rejected(
      rpc.createOAuthClient(
        {
          environment: 'live',
          name: ' ',
          type: 'spa',
          redirectUris: ['http://evil.example/cb', 'https://*.example.com/cb', 'https://app.example.com/cb#frag', 'relative/path', 'https://u:p@app.example.com/'],
          scopes: ['openid', 'admin:everything', 'openid'],
          firstParty: false,
        },
        call(),
      ),
    );
    const fields = err.details.map((d) => d.field);
    expect(fields).toEqual(
      expect.arrayContaining(['name', 'type', 'redirectUris[0]', 'redirectUris[1]', 'redirectUris[2]', 'redirectUris[3]', 'redirectUris[4]', 'scopes[1]', 'scopes[2]']),
    );
    // loopback http is fine
    await expect(newClient({ redirectUris: ['http://127.0.0.1:8123/cb', 'http://[::1]:8123/cb', 'http://localhost/cb'] })).resolves.toBeDefined();
  });

  it('lists with cursors, reads, updates and scopes everything to the environment', async () => {
    const a = await newClient({ environment: 'test' });
    const b = await newClient({ environment: 'test' });
    const first = await rpc.listOAuthClients({ environment: 'test', limit: 1, cursor: '' });
    expect(first.clients.map((c) => c.id)).toEqual([b.id]);
    const second = await rpc.listOAuthClients({ environment: 'test', limit: 1, cursor: first.nextCursor });
    expect(second.clients.map((c) => c.id)).toEqual([a.id]);
    await expect(rpc.getOAuthClient({ environment: 'live', id: a.id })).rejects.toMatchObject({ code: 'not_found' });
    const updated = await rpc.updateOAuthClient(
      { environment: 'test', id: a.id, name: 'Renamed', redirectUris: { values: ['https://new.example.com/cb'] }, scopes: undefined, firstParty: false },
      call(),
    );
    expect(updated).toMatchObject({ name: 'Renamed', redirectUris: ['https://new.example.com/cb'], firstParty: false, scopes: a.client.scopes });
    const bad = await rejected(rpc.updateOAuthClient({ environment: 'test', id: a.id, redirectUris: { values: ['ftp://x'] }, scopes: { values: [] } }, call()));
    expect(bad.details.map((d) => d.field)).toEqual(['redirectUris[0]', 'scopes']);
  });

  it('an update racing a delete of the same client ends in the update or in not_found, never a crash', async () => {
    for (let i = 0; i < 20; i++) {
      const c = await newClient();
      const [updated] = await Promise.allSettled([
        rpc.updateOAuthClient({ environment: 'live', id: c.id, firstParty: false, redirectUris: undefined, scopes: undefined }, call()),
        rpc.deleteOAuthClient({ environment: 'live', id: c.id }, call()),
      ]);
      if (updated.status === 'rejected') expect(updated.reason).toMatchObject({ code: 'not_found' });
      else expect(updated.value.firstParty).toBe(false);
    }
  });
});

describe('authorization endpoint', () => {
  it('shows errors on a page while the redirect URI is not trusted (unknown client, mismatch, open redirects)', async () => {
    const c = await newClient();
    expect((await rpc.authorize(authParams(''), call())).outcome).toBe('error_page');
    const unknown = await rpc.authorize(authParams('cli_00000000000000000000000000'), call());
    expect(unknown).toMatchObject({ outcome: 'error_page', error: 'invalid_client', redirectTo: '' });
    for (const evil of [
      'https://evil.example.com/callback',
      'https://app.example.com/callback/../evil',
      'https://app.example.com/callback?next=https://evil.example.com',
      'https://app.example.com/Callback',
      'https://app.example.com.evil.example/callback',
      'https://app.example.com@evil.example/callback',
      'https://app.example.com/callback#x',
      '//evil.example/callback',
      '',
    ]) {
      const res = await rpc.authorize(authParams(c.id, { redirectUri: evil }), call());
      expect(res).toMatchObject({ outcome: 'error_page', redirectTo: '' });
    }
    expect((await rpc.authorize(authParams(c.id, { repeatedParams: ['redirect_uri'] }), call())).outcome).toBe('error_page');
  });

  it('sends later errors back to the client with state and iss', async () => {
    const c = await newClient({ type: 'public' });
    const s256 = { codeChallenge: pkce().challenge, codeChallengeMethod: 'S256' };
    const cases: [Partial<Parameters<IdentityRpc['authorize']>[0]>, string][] = [
      [{ responseType: 'token' }, 'unsupported_response_type'],
      [{ ...s256, scope: 'openid admin:all' }, 'invalid_scope'],
      [{ ...s256, scope: 'openid write:policies' }, 'invalid_scope'],
      [{ ...s256, scope: '' }, 'invalid_scope'],
      [{}, 'invalid_request'], // public client without PKCE
      [{ codeChallenge: pkce().challenge, codeChallengeMethod: 'plain' }, 'invalid_request'],
      [{ codeChallenge: 'short', codeChallengeMethod: 'S256' }, 'invalid_request'],
      [{ codeChallenge: pkce().challenge, codeChallengeMethod: 'S256', repeatedParams: ['scope'] }, 'invalid_request'],
    ];
    for (const [over, error] of cases) {
      const res = await rpc.authorize(authParams(c.id, over), call());
      expect(res.outcome).toBe('redirect');
      const url = new URL(res.redirectTo);
      expect(`${url.origin}${url.pathname}`).toBe(REDIRECT);
      expect(Object.fromEntries(url.searchParams)).toMatchObject({ error, state: 'st-123', iss: config.ISSUER });
    }
  });

  it('asks for login, then consent (remembered per user, client and scopes), then issues a code', async () => {
    const c = await newClient({ firstParty: false });
    const { user, sessionToken } = await userWithSession();
    expect((await rpc.authorize(authParams(c.id), call())).outcome).toBe('login');
    expect((await rpc.authorize(authParams(c.id, { prompt: 'none' }), call())).redirectTo).toContain('error=login_required');
    const consent = await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid email' }), call());
    expect(consent).toMatchObject({ outcome: 'consent', scopes: ['openid', 'email'], userEmail: user.email, clientName: 'Example app' });
    expect((await rpc.authorize(authParams(c.id, { sessionToken, prompt: 'none' }), call())).redirectTo).toContain('error=consent_required');
    const denied = await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid email', consent: 'deny' }), call());
    expect(denied.redirectTo).toContain('error=access_denied');
    const allowed = await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid email', consent: 'allow' }), call());
    expect(new URL(allowed.redirectTo).searchParams.get('code')).toMatch(/^ocd_/);
    expect((await events('oauth.consent.granted')).at(-1)).toMatchObject({ actor: { id: user.id }, target: { id: c.id } });
    // remembered for those scopes, asked again for more
    expect((await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid' }), call())).outcome).toBe('redirect');
    expect((await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid profile' }), call())).outcome).toBe('consent');
    expect((await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid', prompt: 'consent' }), call())).outcome).toBe('consent');
    // prompt=login and max_age ask for the password again unless the login just happened
    expect((await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid', prompt: 'login' }), call())).outcome).toBe('login');
    expect((await rpc.authorize(authParams(c.id, { sessionToken, scope: 'openid', prompt: 'login', freshLogin: true }), call())).outcome).toBe('redirect');
  });

  it('does not accept a login session of the other environment', async () => {
    const c = await newClient({ environment: 'test' });
    const { sessionToken } = await userWithSession('live');
    expect((await rpc.authorize(authParams(c.id, { sessionToken }), call())).outcome).toBe('login');
  });

  it('records user.login with authMethod oauth and the client for logins on the OAuth page', async () => {
    const c = await newClient();
    const u = await rpc.createUser({ environment: 'live', email: `login${n++}@example.com`, name: 'L', roles: [], metadataJson: '' }, call());
    await rpc.setPassword({ environment: 'live', userId: u.id, password: PASSWORD }, call());
    await rpc.login({ environment: 'live', email: u.email, password: PASSWORD, ip: '203.0.113.9', userAgent: 'jest', expiresInSeconds: 0, oauthClientId: c.id }, call());
    const last = (await events('user.login')).at(-1);
    expect(JSON.parse(last.metadataJson)).toMatchObject({ authMethod: 'oauth', clientId: c.id });
  });
});

describe('token endpoint: authorization code', () => {
  it('exchanges a code (PKCE) for an access token, a refresh token and an ID token', async () => {
    const c = await newClient({ type: 'public' });
    const { user, sessionToken } = await userWithSession();
    const { verifier, challenge } = pkce();
    const code = await codeFor(c, sessionToken, { codeChallenge: challenge, codeChallengeMethod: 'S256' });
    const res = await rpc.token(
      tokenReq({ grantType: 'authorization_code', code, redirectUri: REDIRECT, codeVerifier: verifier, clientId: c.id, clientAuthMethod: 'none' }),
      call(),
    );
    expect(res).toMatchObject({ error: '', status: 200, tokenType: 'Bearer', expiresIn: 900, scope: 'openid profile email offline_access read:users' });
    expect(res.refreshToken).toMatch(/^ort_/);
    const jwks = createLocalJWKSet(JSON.parse((await rpc.getJwks()).jwksJson));
    const at = await jwtVerify(res.accessToken, jwks, { issuer: config.ISSUER, audience: 'secsvc', typ: 'at+jwt' });
    expect(at.payload).toMatchObject({ sub: user.id, client_id: c.id, env: 'live', scope: res.scope, roles: ['role_reader'] });
    expect(at.payload.sid).toMatch(/^grt_/);
    const id = await jwtVerify(res.idToken, jwks, { issuer: config.ISSUER, audience: c.id });
    const atHash = createHash('sha256').update(res.accessToken).digest().subarray(0, 16).toString('base64url');
    expect(id.payload).toMatchObject({ sub: user.id, nonce: 'n-456', at_hash: atHash, email: user.email, email_verified: false, name: 'Ada O', azp: c.id });
    expect(typeof id.payload.auth_time).toBe('number');
    expect((await events('oauth.token.issued')).at(-1)).toMatchObject({ actor: { id: user.id }, target: { id: at.payload.sid } });
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM oauth_refresh_tokens');
    expect(rows[0].n).toBeGreaterThan(0);
  });

  it('refuses a wrong code_verifier, and the code is spent', async () => {
    const c = await newClient({ type: 'public' });
    const { sessionToken } = await userWithSession();
    const { verifier, challenge } = pkce();
    const code = await codeFor(c, sessionToken, { codeChallenge: challenge, codeChallengeMethod: 'S256' });
    const wrong = await exchange({ id: c.id, secret: '' }, code, { codeVerifier: pkce().verifier, clientAuthMethod: 'none' });
    expect(wrong).toMatchObject({ error: 'invalid_grant', status: 400, accessToken: '' });
    expect(wrong.errorDescription).toContain('code_verifier');
    const right = await exchange({ id: c.id, secret: '' }, code, { codeVerifier: verifier, clientAuthMethod: 'none' });
    expect(right.error).toBe('invalid_grant');
  });

  it('refuses a missing verifier when PKCE was used, and a verifier when it was not', async () => {
    const c = await newClient({ type: 'public' });
    const { sessionToken } = await userWithSession();
    const code = await codeFor(c, sessionToken, { codeChallenge: pkce().challenge, codeChallengeMethod: 'S256' });
    expect((await exchange({ id: c.id, secret: '' }, code, { clientAuthMethod: 'none' })).errorDescription).toContain('code_verifier: is required');
    const conf = await newClient();
    const code2 = await codeFor(conf, sessionToken);
    expect((await exchange(conf, code2, { codeVerifier: pkce().verifier })).error).toBe('invalid_grant');
  });

  it('a reused code fails and revokes every token issued from it (cascade)', async () => {
    const c = await newClient();
    const { sessionToken } = await userWithSession();
    const code = await codeFor(c, sessionToken);
    const first = await exchange(c, code);
    expect(first.error).toBe('');
    const sid = decodeJwt(first.accessToken).sid as string;
    expect((await introspect(c, first.accessToken)).active).toBe(true);
    const again = await exchange(c, code);
    expect(again).toMatchObject({ error: 'invalid_grant' });
    expect(await grantRevoked(sid)).toBe(true);
    expect((await introspect(c, first.accessToken)).active).toBe(false);
    expect((await refreshWith(c, first.refreshToken)).error).toBe('invalid_grant');
    expect((await events('oauth.token.revoked')).at(-1)).toMatchObject({ target: { id: sid } });
    expect(JSON.parse((await events('oauth.token.revoked')).at(-1).metadataJson).reason).toBe('code_reuse');
  });

  it('refuses a redirect_uri that differs from the authorization request', async () => {
    const c = await newClient({ redirectUris: [REDIRECT, 'https://app.example.com/other'] });
    const { sessionToken } = await userWithSession();
    const code = await codeFor(c, sessionToken);
    const res = await exchange(c, code, { redirectUri: 'https://app.example.com/other' });
    expect(res.error).toBe('invalid_grant');
    expect(res.errorDescription).toContain('redirect_uri');
  });

  it('refuses an expired code (60 s)', async () => {
    const c = await newClient();
    const { sessionToken } = await userWithSession();
    const code = await codeFor(c, sessionToken);
    const { rows } = await pool.query(`SELECT expires_at - created_at AS ttl FROM oauth_codes ORDER BY created_at DESC LIMIT 1`);
    expect(rows[0].ttl.seconds ?? rows[0].ttl.minutes * 60).toBe(60);
    await pool.query(`UPDATE oauth_codes SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`);
    const res = await exchange(c, code);
    expect(res.error).toBe('invalid_grant');
    expect(res.errorDescription).toContain('expired');
  });

  it('refuses a code issued to another client and leaves it usable by its own', async () => {
    const a = await newClient();
    const b = await newClient();
    const { sessionToken } = await userWithSession();
    const code = await codeFor(a, sessionToken);
    expect((await exchange(b, code)).error).toBe('invalid_grant');
    expect((await exchange(a, code)).error).toBe('');
  });

  it('refuses unknown clients, wrong secrets, and public clients presenting a secret (invalid_client, 401)', async () => {
    const conf = await newClient();
    const pub = await newClient({ type: 'public' });
    const unknown = await exchange({ id: 'cli_00000000000000000000000000', secret: 'x' }, 'ocd_x');
    expect(unknown).toMatchObject({ error: 'invalid_client', status: 401 });
    // The last character changed (to one it is not: a secret ending in x stayed right once in a CI run).
    const wrong = conf.secret.slice(0, -1) + (conf.secret.endsWith('x') ? 'y' : 'x');
    expect((await exchange({ id: conf.id, secret: wrong }, 'ocd_x')).error).toBe('invalid_client');
    expect((await exchange({ id: conf.id, secret: '' }, 'ocd_x', { clientAuthMethod: 'none' })).error).toBe('invalid_client');
    const pubWithSecret = await exchange({ id: pub.id, secret: conf.secret }, 'ocd_x', { clientAuthMethod: 'client_secret_post' });
    expect(pubWithSecret).toMatchObject({ error: 'invalid_client', status: 401 });
    expect(pubWithSecret.errorDescription).toContain('public client');
  });

  it('throttles failed client authentications per client like failed logins (429 with a wait); the right secret still works', async () => {
    const c = await newClient();
    for (let i = 0; i < 5; i++) expect((await exchange({ id: c.id, secret: 'ocs_wrong' }, 'ocd_x')).error).toBe('invalid_client');
    const throttled = await exchange({ id: c.id, secret: 'ocs_wrong' }, 'ocd_x');
    expect(throttled).toMatchObject({ error: 'temporarily_unavailable', status: 429 });
    expect(throttled.retryAfterSeconds).toBeGreaterThan(0);
    // nobody can lock a client out by sending wrong secrets: the real one authenticates (then the made-up code fails)
    expect((await exchange(c, 'ocd_x')).error).toBe('invalid_grant');
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM login_failures WHERE email = $1`, [`oauth-client:${c.id}`]);
    expect(rows[0].n).toBe(6);
  });

  it('refuses repeated parameters and unknown grant types', async () => {
    const c = await newClient();
    expect((await rpc.token(tokenReq({ grantType: 'password', clientId: c.id, clientSecret: c.secret }), call())).error).toBe('unsupported_grant_type');
    expect((await rpc.token(tokenReq({ grantType: 'authorization_code', repeatedParams: ['code'], clientId: c.id, clientSecret: c.secret }), call())).error).toBe(
      'invalid_request',
    );
  });
});

describe('token endpoint: refresh and client credentials', () => {
  it('rotates refresh tokens; reusing an old one revokes the whole family', async () => {
    const c = await newClient();
    const { user, sessionToken } = await userWithSession();
    const first = await exchange(c, await codeFor(c, sessionToken));
    const second = await refreshWith(c, first.refreshToken);
    expect(second.error).toBe('');
    expect(second.refreshToken).not.toBe(first.refreshToken);
    expect(decodeJwt(second.idToken).nonce).toBeUndefined();
    const third = await refreshWith(c, second.refreshToken);
    expect(third.error).toBe('');
    const reuse = await refreshWith(c, first.refreshToken);
    expect(reuse).toMatchObject({ error: 'invalid_grant' });
    expect(reuse.errorDescription).toContain('already used');
    const sid = decodeJwt(third.accessToken).sid as string;
    expect(await grantRevoked(sid)).toBe(true);
    expect((await refreshWith(c, third.refreshToken)).error).toBe('invalid_grant');
    expect((await introspect(c, third.accessToken)).active).toBe(false);
    expect((await events('oauth.refresh_reuse_detected')).at(-1)).toMatchObject({ actor: { id: user.id }, target: { id: sid }, result: 'failure' });
  });

  it('refuses scope escalation on refresh and allows narrowing', async () => {
    const c = await newClient({ scopes: ['openid', 'offline_access', 'read:users', 'write:users'] });
    const { sessionToken } = await userWithSession();
    const first = await exchange(c, await codeFor(c, sessionToken, { scope: 'openid offline_access read:users' }));
    const escalate = await refreshWith(c, first.refreshToken, 'openid offline_access read:users write:users');
    expect(escalate).toMatchObject({ error: 'invalid_scope' });
    expect(escalate.errorDescription).toContain('write:users');
    const narrow = await refreshWith(c, first.refreshToken, 'read:users');
    expect(narrow).toMatchObject({ error: '', scope: 'read:users', idToken: '' });
    expect(decodeJwt(narrow.accessToken).scope).toBe('read:users');
  });

  it('issues no refresh token without offline_access', async () => {
    const c = await newClient();
    const { sessionToken } = await userWithSession();
    const res = await exchange(c, await codeFor(c, sessionToken, { scope: 'openid read:users' }));
    expect(res).toMatchObject({ error: '', refreshToken: '' });
  });

  it('refuses another client presenting the refresh token', async () => {
    const a = await newClient();
    const b = await newClient();
    const { sessionToken } = await userWithSession();
    const first = await exchange(a, await codeFor(a, sessionToken));
    expect((await refreshWith(b, first.refreshToken)).error).toBe('invalid_grant');
    expect((await refreshWith(a, first.refreshToken)).error).toBe('');
  });

  it('client_credentials: confidential clients only, API scopes only; the token acts as the client', async () => {
    const c = await newClient({ scopes: ['openid', 'read:users', 'read:logs'] });
    const res = await rpc.token(tokenReq({ grantType: 'client_credentials', clientId: c.id, clientSecret: c.secret }), call());
    expect(res).toMatchObject({ error: '', scope: 'read:users read:logs', refreshToken: '', idToken: '' });
    const claims = decodeJwt(res.accessToken);
    expect(claims).toMatchObject({ sub: c.id, client_id: c.id, scope: 'read:users read:logs' });
    expect(claims.roles).toBeUndefined();
    expect((await rpc.token(tokenReq({ grantType: 'client_credentials', scope: 'openid', clientId: c.id, clientSecret: c.secret }), call())).error).toBe('invalid_scope');
    const pub = await newClient({ type: 'public' });
    expect((await rpc.token(tokenReq({ grantType: 'client_credentials', clientId: pub.id, clientAuthMethod: 'none' }), call())).error).toBe('unauthorized_client');
  });
});

describe('revocation and introspection', () => {
  it('introspects every kind of credential, only within the client environment', async () => {
    const c = await newClient();
    const { user, sessionToken } = await userWithSession();
    const tokens = await exchange(c, await codeFor(c, sessionToken));
    expect(await introspect(c, tokens.accessToken)).toMatchObject({ active: true, sub: user.id, client_id: c.id, scope: tokens.scope, token_type: 'Bearer' });
    expect(await introspect(c, tokens.refreshToken)).toMatchObject({ active: true, token_type: 'refresh_token', client_id: c.id });
    expect(await introspect(c, sessionToken)).toMatchObject({ active: true, token_type: 'session', sub: user.id });
    expect(await introspect(c, tokens.idToken)).toEqual({ active: false });
    expect(await introspect(c, 'garbage')).toEqual({ active: false });
    const testClient = await newClient({ environment: 'test' });
    expect(await introspect(testClient, tokens.accessToken)).toEqual({ active: false });
    expect(await introspect(testClient, sessionToken)).toEqual({ active: false });
    // another client may introspect the access token (resource servers), not the refresh token
    const other = await newClient();
    expect((await introspect(other, tokens.accessToken)).active).toBe(true);
    expect(await introspect(other, tokens.refreshToken)).toEqual({ active: false });
    const badAuth = await rpc.introspectToken({ token: tokens.accessToken, tokenTypeHint: '', clientId: c.id, clientSecret: 'nope', clientAuthMethod: 'client_secret_basic' }, call());
    expect(badAuth).toMatchObject({ error: 'invalid_client', status: 401, resultJson: '' });
  });

  it('revoking a refresh token or an access token ends the grant; other clients cannot', async () => {
    const c = await newClient();
    const other = await newClient();
    const { sessionToken } = await userWithSession();
    const a = await exchange(c, await codeFor(c, sessionToken));
    expect(await revoke(other, a.refreshToken)).toMatchObject({ error: '', status: 200 });
    expect((await introspect(c, a.accessToken)).active).toBe(true);
    expect((await revoke(c, a.refreshToken)).status).toBe(200);
    expect((await introspect(c, a.accessToken)).active).toBe(false);
    expect((await refreshWith(c, a.refreshToken)).error).toBe('invalid_grant');
    const b = await exchange(c, await codeFor(c, sessionToken));
    await revoke(c, b.accessToken);
    expect((await refreshWith(c, b.refreshToken)).error).toBe('invalid_grant');
    expect(await revoke(c, 'unknown-token')).toMatchObject({ status: 200 });
  });

  it('ends grants when the client is deleted, the user is deleted, or the password is reset', async () => {
    const c = await newClient();
    const { user, sessionToken } = await userWithSession();
    const viaClient = await exchange(c, await codeFor(c, sessionToken));
    const other = await newClient();
    const viaUser = await exchange(other, await codeFor(other, sessionToken));
    expect((await rpc.deleteOAuthClient({ environment: 'live', id: c.id }, call())).grantsRevoked).toBe(1);
    const tomb = await pool.query('SELECT 1 FROM ended_sessions WHERE id = $1', [decodeJwt(viaClient.accessToken).sid]);
    expect(tomb.rowCount).toBe(1);
    expect((await rpc.authenticateOAuthClient({ clientId: c.id, clientSecret: c.secret, clientAuthMethod: 'client_secret_basic' }, call())).error).toBe('invalid_client');

    await rpc.setPassword({ environment: 'live', userId: user.id, password: PASSWORD }, call());
    await rpc.requestPasswordReset({ environment: 'live', email: user.email }, call());
    let resetToken: string | undefined;
    for (let i = 0; i < 100 && !resetToken; i++) {
      resetToken = mails.find((m) => m.to === user.email)?.data.token;
      if (!resetToken) await new Promise((r) => setTimeout(r, 20));
    }
    await rpc.confirmPasswordReset({ environment: 'live', token: resetToken!, password: PASSWORD + '!' }, call());
    expect((await introspect(other, viaUser.accessToken)).active).toBe(false);
    expect((await refreshWith(other, viaUser.refreshToken)).error).toBe('invalid_grant');

    const { sessionToken: s2, user: u2 } = await userWithSession();
    const beforeDelete = await exchange(other, await codeFor(other, s2));
    await rpc.deleteUser({ environment: 'live', id: u2.id }, call());
    expect((await pool.query('SELECT 1 FROM ended_sessions WHERE id = $1', [decodeJwt(beforeDelete.accessToken).sid])).rowCount).toBe(1);
    expect(await rejected(rpc.getOAuthClient({ environment: 'live', id: c.id }))).toMatchObject({ code: 'not_found' });
  });
});

describe('grants in one statement', () => {
  /** The outbox rows of the grant (oauth.token.issued and anything else that targets it). */
  const eventsOf = async (grantId: string) =>
    (await pool.query(`SELECT event_type, event_key, payload FROM outbox WHERE payload->'target'->>'id' = $1 ORDER BY seq`, [grantId])).rows;

  it('writes each grant with its refresh token and its oauth.token.issued event, as the shared encoder does', async () => {
    const c = await newClient({ scopes: ['openid', 'email', 'offline_access', 'read:users'] });
    const { user, sessionToken } = await userWithSession();
    const code = await exchange(c, await codeFor(c, sessionToken, { scope: 'openid email offline_access read:users' }));
    const refreshed = await refreshWith(c, code.refreshToken, 'read:users');
    const cc = await rpc.token(tokenReq({ grantType: 'client_credentials', clientId: c.id, clientSecret: c.secret }), call());
    const [codeGrant, ccGrant] = [decodeJwt(code.accessToken).sid as string, decodeJwt(cc.accessToken).sid as string];
    expect(decodeJwt(refreshed.accessToken).sid).toBe(codeGrant);
    const issued = await eventsOf(codeGrant);
    expect(issued.map((e) => e.event_type)).toEqual(['oauth.token.issued', 'oauth.token.issued']);
    expect(issued.map((e) => e.event_key)).toEqual([user.id, user.id]);
    expect(issued[0].payload).toMatchObject({
      id: expect.stringMatching(/^log_/),
      environment: 'live',
      type: 'oauth.token.issued',
      actor: { id: user.id, type: 'user', email: user.email },
      target: { id: codeGrant, type: 'oauth_grant' },
      context: { ip: expect.any(String), userAgent: 'jest' },
      result: 'success',
    });
    expect(JSON.parse(issued[0].payload.metadataJson)).toEqual({
      authMethod: 'oauth',
      mfaUsed: false,
      clientId: c.id,
      grantType: 'authorization_code',
      scopes: ['openid', 'email', 'offline_access', 'read:users'],
      refreshToken: true,
      idToken: true,
    });
    expect(JSON.parse(issued[1].payload.metadataJson)).toMatchObject({ grantType: 'refresh_token', scopes: ['read:users'], refreshToken: true, idToken: false });
    const [ccEvent] = await eventsOf(ccGrant);
    expect(ccEvent).toMatchObject({ event_type: 'oauth.token.issued', event_key: c.id, payload: { actor: { id: c.id, type: 'oauth_client' } } });
    expect(JSON.parse(ccEvent.payload.metadataJson)).toMatchObject({ grantType: 'client_credentials', refreshToken: false, idToken: false });
    // The refresh token stored with its grant, the rotated one spent.
    const { rows } = await pool.query('SELECT used_at IS NOT NULL AS used FROM oauth_refresh_tokens WHERE grant_id = $1 ORDER BY created_at', [codeGrant]);
    expect(rows.map((r) => r.used)).toEqual([true, false]);
  });

  it('issues a grant with one statement and no transaction, after one read of the code or refresh token', async () => {
    const c = await newClient();
    const { sessionToken } = await userWithSession();
    const code = await codeFor(c, sessionToken);
    await rpc.token(tokenReq({ grantType: 'client_credentials', clientId: c.id, clientSecret: c.secret }), call()); // the signing keys loaded
    /** The statements `run` sends about OAuth (others, like the mail queue's polls, may interleave on other connections). */
    const statements = async (run: () => Promise<{ error: string }>) => {
      const spy = jest.spyOn(pg.Client.prototype, 'query');
      try {
        expect((await run()).error).toBe('');
        const sent = spy.mock.calls.map(([q], i) => ({ client: spy.mock.contexts[i], text: String(typeof q === 'string' ? q : (q as { text: string }).text).trim() }));
        // Those of the connections that sent OAuth statements (a transaction's BEGIN and COMMIT included).
        const ours = new Set(sent.filter((q) => /oauth_|outbox/.test(q.text)).map((q) => q.client));
        return sent.filter((q) => ours.has(q.client)).map((q) => q.text);
      } finally {
        spy.mockRestore();
      }
    };
    const kinds = (qs: string[]) => qs.map((q) => q.split(/\s+/)[0]);
    const exchanged = await statements(() => exchange(c, code));
    // Without a live feed (here) the client is read on each request.
    expect(kinds(exchanged)).toEqual(['SELECT', 'SELECT', 'WITH']); // client, code with its user, the grant
    const first = await exchange(c, await codeFor(c, sessionToken));
    expect(kinds(await statements(() => refreshWith(c, first.refreshToken)))).toEqual(['SELECT', 'SELECT', 'WITH']); // client, token with grant and user, the rotation
    expect(kinds(await statements(() => rpc.token(tokenReq({ grantType: 'client_credentials', clientId: c.id, clientSecret: c.secret }), call())))).toEqual(['SELECT', 'WITH']);
  });

  it('client_credentials grants requested at once share statements, each with its own grant and event', async () => {
    const c = await newClient();
    await rpc.token(tokenReq({ grantType: 'client_credentials', clientId: c.id, clientSecret: c.secret }), call()); // the signing keys loaded
    const spy = jest.spyOn(pg.Client.prototype, 'query');
    let answers: Array<{ error: string; accessToken: string }>;
    let batched: number;
    try {
      answers = await Promise.all(Array.from({ length: 20 }, () => rpc.token(tokenReq({ grantType: 'client_credentials', clientId: c.id, clientSecret: c.secret }), call())));
      const names = spy.mock.calls.map(([q]) => (typeof q === 'object' && q !== null ? (q as { name?: string }).name : undefined));
      batched = names.filter((n) => n === 'oauth_issue_grants').length;
      // The first goes alone at once; those arriving while it is on its way go together.
      expect(names.filter((n) => n === 'oauth_issue_grant' || n === 'oauth_issue_grants').length).toBeLessThan(20);
    } finally {
      spy.mockRestore();
    }
    expect(batched).toBeGreaterThanOrEqual(1);
    expect(answers.map((a) => a.error)).toEqual(Array(20).fill(''));
    const sids = answers.map((a) => decodeJwt(a.accessToken).sid as string);
    expect(new Set(sids).size).toBe(20);
    for (const sid of sids) {
      const evs = await eventsOf(sid);
      expect(evs.map((e) => [e.event_type, e.event_key])).toEqual([['oauth.token.issued', c.id]]);
      expect(JSON.parse(evs[0].payload.metadataJson)).toMatchObject({ grantType: 'client_credentials', clientId: c.id });
    }
    const { rows } = await pool.query('SELECT id, client_id, user_id, scopes, amr, acr FROM oauth_grants WHERE id = ANY($1)', [sids]);
    expect(rows).toHaveLength(20);
    for (const r of rows) expect(r).toMatchObject({ client_id: c.id, user_id: null, scopes: ['read:users'], amr: [], acr: '' });
  });

  /** A client_credentials grant of `clientId` as the service builds it, issued through the batcher in a trace of its own. */
  const batchedGrant = (db: Pool, clientId: string, i: number, id = `grt_batch_${clientId}_${i}`) => {
    const traceId = createHash('sha256').update(`trace-${clientId}-${i}`).digest('hex').slice(0, 32);
    const span = { traceId, spanId: traceId.slice(0, 16), traceFlags: 1 };
    const g = {
      grant: { id, environment: 'live', clientId, userId: null, scopes: ['read:users'], authTime: null, sessionId: null, amr: [], acr: '' },
      refreshTokenHash: null,
      refreshTokenTtlSeconds: 60,
      event: { environment: 'live', type: 'oauth.token.issued', actor: { id: clientId, type: 'oauth_client' }, target: { id: `target_${clientId}_${i}`, type: 'oauth_grant' }, context: { ip: '192.0.2.1', userAgent: 'jest' }, result: 'success' as const, traceId },
    };
    return { traceId, issued: requestContext.run({ requestId: `req_${i}`, trace: span }, () => oauthGrantsRepository.issueBatched(db, g)) };
  };

  it('a batch refused for one grant (an integrity violation) is issued grant by grant: only that one fails; each event keeps its own trace', async () => {
    const c = await newClient();
    // Six at once: the first alone, the next five in one statement, refused because the fourth reuses the
    // first's grant id; then one by one.
    const asked = [0, 1, 2, 3, 4, 5].map((i) => batchedGrant(pool, c.id, i, i === 3 ? `grt_batch_${c.id}_0` : undefined));
    const settled = await Promise.allSettled(asked.map((a) => a.issued));
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect((settled[3] as PromiseRejectedResult).reason).toMatchObject({ code: '23505' });
    for (const [i, a] of asked.entries()) {
      const { rows } = await pool.query(`SELECT traceparent FROM outbox WHERE payload->'target'->>'id' = $1`, [`target_${c.id}_${i}`]);
      if (i === 3) expect(rows).toHaveLength(0);
      else expect(rows).toEqual([{ traceparent: `00-${a.traceId}-${a.traceId.slice(0, 16)}-01` }]);
    }
  });

  it('a batch that fails otherwise (the connection) fails its grants without retrying them; other clients are not held up', async () => {
    const c = await newClient();
    const other = await newClient();
    let held!: () => void;
    const release = new Promise<void>((r) => (held = r));
    const sent: string[] = [];
    // A pool whose batch statements fail as a lost connection would, after `release`.
    const failing = {
      query: async (q: { name?: string }, values?: unknown[]) => {
        sent.push(q.name ?? '');
        if (q.name === 'oauth_issue_grant' && sent.length === 1) await release; // the first grant, alone, holds the client's batcher
        if (q.name === 'oauth_issue_grants') throw Object.assign(new Error('Connection terminated unexpectedly'), {});
        return pool.query(q as never, values as never);
      },
    } as unknown as Pool;
    const first = batchedGrant(failing, c.id, 10);
    const queued = [11, 12, 13].map((i) => batchedGrant(failing, c.id, i));
    // Another client's grant is not behind the held statement.
    expect((await batchedGrant(failing, other.id, 14).issued).client_id).toBe(other.id);
    held();
    expect((await first.issued).client_id).toBe(c.id);
    const settled = await Promise.allSettled(queued.map((a) => a.issued));
    expect(settled.map((r) => (r.status === 'rejected' ? String(r.reason.message) : 'issued'))).toEqual(Array(3).fill('Connection terminated unexpectedly'));
    expect(sent).toEqual(['oauth_issue_grant', 'oauth_issue_grant', 'oauth_issue_grants']);
    expect((await pool.query(`SELECT count(*)::int AS n FROM oauth_grants WHERE id = ANY($1)`, [[11, 12, 13].map((i) => `grt_batch_${c.id}_${i}`)])).rows[0].n).toBe(0);
  });

  it('a code redeemed by several requests at once gives one grant, and the others end it', async () => {
    const c = await newClient();
    const { sessionToken } = await userWithSession();
    const code = await codeFor(c, sessionToken);
    const answers = await Promise.all(Array.from({ length: 6 }, () => exchange(c, code)));
    const won = answers.filter((a) => a.error === '');
    expect(won).toHaveLength(1);
    expect(answers.filter((a) => a.error === 'invalid_grant')).toHaveLength(5);
    const sid = decodeJwt(won[0]!.accessToken).sid as string;
    expect(await grantRevoked(sid)).toBe(true);
    expect((await pool.query('SELECT count(*)::int AS n FROM oauth_grants g JOIN oauth_codes c ON c.grant_id = g.id WHERE g.id = $1', [sid])).rows[0].n).toBe(1);
    expect((await eventsOf(sid)).map((e) => e.event_type)).toEqual(['oauth.token.issued', 'oauth.token.revoked']);
  });

  it('a refresh token rotated by several requests at once gives one successor, and the others end the grant', async () => {
    const c = await newClient();
    const { sessionToken } = await userWithSession();
    // Several rounds of 12: a rotation (grant, then token) and a reuse check (which must lock them in the same
    // order) racing used to deadlock now and then.
    for (let round = 0; round < 4; round++) {
      const first = await exchange(c, await codeFor(c, sessionToken));
      const answers = await Promise.all(Array.from({ length: 12 }, () => refreshWith(c, first.refreshToken)));
      expect(answers.filter((a) => a.error === '')).toHaveLength(1);
      expect(answers.filter((a) => a.error === 'invalid_grant')).toHaveLength(11);
      const sid = decodeJwt(first.accessToken).sid as string;
      expect(await grantRevoked(sid)).toBe(true);
      expect((await pool.query('SELECT count(*)::int AS n FROM oauth_refresh_tokens WHERE grant_id = $1', [sid])).rows[0].n).toBe(2);
      expect((await eventsOf(sid)).map((e) => e.event_type).slice(0, 2)).toEqual(['oauth.token.issued', 'oauth.token.issued']);
    }
  });

  it('a refresh token of a grant revoked meanwhile is refused without a successor', async () => {
    const c = await newClient();
    const { sessionToken } = await userWithSession();
    const first = await exchange(c, await codeFor(c, sessionToken));
    const sid = decodeJwt(first.accessToken).sid as string;
    await pool.query(`UPDATE oauth_grants SET revoked_at = now(), revoked_reason = 'test' WHERE id = $1`, [sid]);
    expect(await refreshWith(c, first.refreshToken)).toMatchObject({ error: 'invalid_grant' });
    expect((await pool.query('SELECT count(*)::int AS n FROM oauth_refresh_tokens WHERE grant_id = $1 AND used_at IS NULL', [sid])).rows[0].n).toBe(1);
  });
});

describe('client authentication cached while the change feed is live', () => {
  let feed: CredentialChangeFeed;
  let live: IdentityRpc;
  beforeAll(async () => {
    feed = new CredentialChangeFeed(t.db.url, t.ctx.logger);
    await feed.start();
    live = identityRpc(ctx, { signingKeys: keys, feed });
    await feed.whenLive();
  });
  afterAll(() => feed.stop());

  const grant = (c: { id: string; secret: string }, scope = '', secret = c.secret) =>
    live.token(tokenReq({ grantType: 'client_credentials', scope, clientId: c.id, clientSecret: secret }), call());

  it('keeps the client, still checks the secret every time, and sees every change at once', async () => {
    const c = await newClient({ scopes: ['read:users', 'read:logs'] });
    expect((await grant(c, 'read:logs')).error).toBe('');
    // Changed behind the feed's back (its trigger off): the cached client still answers, so it is cached...
    await pool.query('ALTER TABLE oauth_clients DISABLE TRIGGER oauth_clients_changed');
    try {
      await pool.query(`UPDATE oauth_clients SET scopes = '{read:users}' WHERE id = $1`, [c.id]);
      expect((await grant(c, 'read:logs')).error).toBe('');
    } finally {
      await pool.query('ALTER TABLE oauth_clients ENABLE TRIGGER oauth_clients_changed');
    }
    // ...but never for a wrong secret.
    expect(await grant(c, 'read:logs', `${c.secret}x`)).toMatchObject({ error: 'invalid_client', status: 401 });
    // A change another identity makes (here: the name) reaches this one on the feed, which drops the client.
    const seen: string[] = [];
    const unsubscribe = feed.subscribe({ onChange: (id) => seen.push(id), onReset: () => seen.push('reset') });
    await pool.query(`UPDATE oauth_clients SET name = 'Renamed' WHERE id = $1`, [c.id]);
    let error = '';
    for (let i = 0; i < 100 && error !== 'invalid_scope'; i++) {
      error = (await grant(c, 'read:logs')).error;
      if (error !== 'invalid_scope') await new Promise((r) => setTimeout(r, 20));
    }
    unsubscribe();
    expect(seen).toEqual([c.id]);
    expect(error).toBe('invalid_scope');
    // A change made through this identity is seen by its very next request, a deletion too.
    await live.updateOAuthClient({ environment: 'live', id: c.id, scopes: { values: ['read:users', 'read:logs'] }, redirectUris: undefined }, call());
    expect((await grant(c, 'read:logs')).error).toBe('');
    await live.deleteOAuthClient({ environment: 'live', id: c.id }, call());
    expect(await grant(c)).toMatchObject({ error: 'invalid_client', status: 401 });
  });
});

describe('how the user authenticated: amr, acr and auth_time (OpenID Connect Core 2, RFC 8176, RFC 9068)', () => {
  const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);
  const jwks = async () => createLocalJWKSet(JSON.parse((await rpc.getJwks()).jwksJson));

  /** A user with a password and a confirmed authenticator app, and the code of the next time step (for the login). */
  async function userWithTotp() {
    const u = await rpc.createUser({ environment: 'live', email: `mfa${n++}@example.com`, name: 'M', roles: [], metadataJson: '' }, call());
    await rpc.setPassword({ environment: 'live', userId: u.id, password: PASSWORD }, call());
    const passwordSession = (await rpc.login({ environment: 'live', email: u.email, password: PASSWORD, ip: '', userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' }, call())).session!;
    const enrollment = await rpc.enrollTotp({ environment: 'live', userId: u.id, name: 'Phone' });
    const secret = base32Decode(enrollment.secret);
    const step = timeStep(Date.now());
    await rpc.confirmTotp({ environment: 'live', userId: u.id, factorId: enrollment.factor!.id, code: hotp(secret, step), ip: '' }, call());
    return { user: u, passwordSession, nextCode: hotp(secret, step + 1) };
  }

  it('tokens from a password session say pwd and one factor; from an MFA session otp, mfa and the time of the MFA', async () => {
    const c = await newClient();
    const { user, passwordSession, nextCode } = await userWithTotp();
    expect(passwordSession.session).toMatchObject({ amr: ['pwd'], acr: 'urn:secsvc:acr:1fa' });
    const one = await exchange(c, await codeFor(c, passwordSession.token));
    const onePassword = { amr: ['pwd'], acr: 'urn:secsvc:acr:1fa', auth_time: seconds(passwordSession.session!.createdAt!) };
    expect((await jwtVerify(one.accessToken, await jwks(), { issuer: config.ISSUER, audience: 'secsvc' })).payload).toMatchObject(onePassword);
    expect((await jwtVerify(one.idToken, await jwks(), { issuer: config.ISSUER, audience: c.id })).payload).toMatchObject(onePassword);

    // With the authenticator configured, a login needs its second step; the session records both factors.
    const challenge = await rpc.login({ environment: 'live', email: user.email, password: PASSWORD, ip: '', userAgent: 'jest', expiresInSeconds: 0, oauthClientId: c.id }, call());
    expect(challenge.session).toBeUndefined();
    const mfaSession = await rpc.completeMfaLogin(
      { environment: 'live', mfaToken: challenge.mfa!.mfaToken, proof: { type: 'totp', code: nextCode, credentialJson: '' }, ip: '', userAgent: 'jest' },
      call(),
    );
    const mfaAt = seconds(mfaSession.session!.mfaAt!);
    const withMfa = { amr: ['pwd', 'otp', 'mfa'], acr: 'urn:secsvc:acr:mfa', auth_time: mfaAt };
    const two = await exchange(c, await codeFor(c, mfaSession.token));
    const at = await jwtVerify(two.accessToken, await jwks(), { issuer: config.ISSUER, audience: 'secsvc' });
    expect(at.payload).toMatchObject(withMfa);
    expect((await jwtVerify(two.idToken, await jwks(), { issuer: config.ISSUER, audience: c.id })).payload).toMatchObject(withMfa);
    const grant = (await pool.query('SELECT session_id, amr, acr FROM oauth_grants WHERE id = $1', [at.payload.sid])).rows[0];
    expect(grant).toEqual({ session_id: mfaSession.session!.id, amr: ['pwd', 'otp', 'mfa'], acr: 'urn:secsvc:acr:mfa' });

    // A refresh is no authentication: the grant keeps what its session had, even once the session is gone.
    await rpc.revokeSession({ environment: 'live', token: mfaSession.token }, call());
    const refreshed = await refreshWith(c, two.refreshToken);
    expect(refreshed.error).toBe('');
    expect(decodeJwt(refreshed.accessToken)).toMatchObject(withMfa);
    expect(decodeJwt(refreshed.idToken)).toMatchObject(withMfa);

    // Introspection tells the same of the access and refresh tokens, and of a session token its own.
    expect(await introspect(c, refreshed.accessToken)).toMatchObject({ active: true, ...withMfa });
    expect(await introspect(c, refreshed.refreshToken)).toMatchObject({ active: true, token_type: 'refresh_token', ...withMfa });
    expect(await introspect(c, passwordSession.token)).toMatchObject({ active: true, token_type: 'session', ...onePassword });
  });

  it('session access tokens (IssueAccessToken) carry their session authentication; unknown values are left out', async () => {
    const { user, passwordSession } = await userWithTotp();
    const password = await rpc.issueAccessToken({ sessionToken: passwordSession.token });
    expect(decodeJwt(password.accessToken)).toMatchObject({ sub: user.id, amr: ['pwd'], acr: 'urn:secsvc:acr:1fa', auth_time: seconds(passwordSession.session!.createdAt!) });
    // A session the application opened says nothing of how its user authenticated, except when.
    const { sessionToken, sessionId } = await userWithSession();
    const opened = decodeJwt((await rpc.issueAccessToken({ sessionToken })).accessToken);
    expect(opened).not.toHaveProperty('amr');
    expect(opened).not.toHaveProperty('acr');
    const created = (await pool.query('SELECT created_at FROM sessions WHERE id = $1', [sessionId])).rows[0].created_at as Date;
    expect(opened.auth_time).toBe(Math.floor(created.getTime() / 1000));
  });

  it('client_credentials tokens have no user and no amr, acr or auth_time', async () => {
    const c = await newClient();
    const cc = await rpc.token(tokenReq({ grantType: 'client_credentials', clientId: c.id, clientSecret: c.secret }), call());
    const claims = decodeJwt(cc.accessToken);
    for (const claim of ['amr', 'acr', 'auth_time']) expect(claims).not.toHaveProperty(claim);
    const answer = await introspect(c, cc.accessToken);
    expect(answer.active).toBe(true);
    for (const claim of ['amr', 'acr', 'auth_time']) expect(answer).not.toHaveProperty(claim);
  });

  it('max_age counts from the latest MFA of the session, else from its login', async () => {
    const c = await newClient();
    const { sessionToken, sessionId } = await userWithSession();
    await pool.query(`UPDATE sessions SET created_at = now() - interval '1 hour' WHERE id = $1`, [sessionId]);
    expect((await rpc.authorize(authParams(c.id, { sessionToken, maxAge: '600' }), call())).outcome).toBe('login');
    await pool.query(`UPDATE sessions SET mfa_at = now() - interval '1 minute', amr = '{pwd,otp,mfa}', acr = 'urn:secsvc:acr:mfa' WHERE id = $1`, [sessionId]);
    const code = await codeFor(c, sessionToken, { maxAge: '600' });
    const tokens = await exchange(c, code);
    const mfaAt = (await pool.query('SELECT mfa_at FROM sessions WHERE id = $1', [sessionId])).rows[0].mfa_at as Date;
    expect(decodeJwt(tokens.idToken).auth_time).toBe(Math.floor(mfaAt.getTime() / 1000));
  });
});
