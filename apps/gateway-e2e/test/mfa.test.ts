/**
 * Multi-factor authentication (issue 23) end to end over HTTP, on the local stack: TOTP enrollment and the
 * login's second step, replayed codes, recovery codes, the user.login audit entry, step-up for policies with
 * an mfa condition (and the simulator's answer), the environment's MFA requirement, the throttle on guessing,
 * and the OpenAPI document. Passkey ceremonies need a browser: mfa-browser.test.ts.
 * Codes come from an RFC 6238 implementation of the test's own (mfa-support.ts), as an authenticator app's.
 */
import type { LocalStack } from '@secsvc/dev/stack';
import { Authenticator, auditEntries, enrollTotp } from './mfa-support';
import { PASSWORD, userWithPassword, type Json } from './oauth-support';
import { apiClient, eventually, startTestStack, type Api } from './support';

jest.setTimeout(180_000);

const KEY = 'svc_sk_' + 'mfaE2eTests_'.repeat(3);
let stack: LocalStack;
let api: Api;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  // The anonymous budget raised: logins and their second steps are many in one suite.
  ({ stack, api, stop } = await startTestStack('mfa', KEY, { RATE_LIMIT_ANONYMOUS_PER_MINUTE: '100000' }));
});

afterAll(async () => {
  await stop?.();
});

/** A call with `bearer` as the credential, or none (logins are anonymous: a login page's calls). */
async function call(method: string, path: string, body?: unknown, bearer?: string) {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method,
    headers: { ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

const login = (email: string, password = PASSWORD) => call('POST', '/auth/login', { email, password });
const loginMfa = (mfaToken: string, proof: Record<string, unknown>) => call('POST', '/auth/login/mfa', { mfaToken, ...proof });

/** A login that must answer with a challenge: its mfaToken. */
async function challenge(email: string): Promise<{ mfaToken: string; data: Json }> {
  const res = await login(email);
  expect(res.status).toBe(200);
  expect(res.body.data.mfaRequired).toBe(true);
  return { mfaToken: res.body.data.mfaToken, data: res.body.data };
}

let n = 0;
const newUser = (roles: string[] = []) => userWithPassword(api, `mfa.user${++n}@example.com`, roles);

describe('TOTP', () => {
  let user: { id: string; email: string };
  let app: Authenticator;
  let factorId: string;
  let mfaSession: Json;

  it('enrolls: a pending factor with its secret, URI and QR code; a wrong code does not confirm it, the current one does', async () => {
    user = await newUser();
    const started = await api('POST', `/users/${user.id}/mfa/totp`, { name: 'Phone' });
    expect(started.status).toBe(201);
    const e = started.body.data;
    expect(e.factor).toMatchObject({ id: expect.stringMatching(/^mfa_/), userId: user.id, type: 'totp', name: 'Phone', confirmed: false, lastUsedAt: null });
    expect(e.secret).toMatch(/^[A-Z2-7]{32}$/); // 160 bits
    const uri = new URL(e.otpauthUri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.host).toBe('totp');
    expect(decodeURIComponent(uri.pathname)).toContain(user.email);
    expect(uri.searchParams.get('secret')).toBe(e.secret);
    expect(uri.searchParams.get('digits')).toBe('6');
    expect(uri.searchParams.get('period')).toBe('30');
    expect(e.qrCode).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(Buffer.from(e.qrCode.split(',')[1], 'base64').toString('utf8')).toContain('<svg');
    factorId = e.factor.id;
    app = new Authenticator(e.secret);

    // a pending factor does not make the login ask for a second factor
    const before = await login(user.email);
    expect(before.status).toBe(201);
    expect(before.body.data).toMatchObject({ amr: ['pwd'], acr: 'urn:secsvc:acr:1fa', mfaAt: null });

    const current = app.now().code;
    const wrong = String((Number(current) + 1) % 1_000_000).padStart(6, '0');
    const refused = await api('POST', `/users/${user.id}/mfa/totp/${factorId}/confirm`, { code: wrong });
    expect(refused.status).toBe(401);
    expect(refused.body.error.code).toBe('unauthorized');
    const confirmed = await api('POST', `/users/${user.id}/mfa/totp/${factorId}/confirm`, { code: await app.next() });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.data).toMatchObject({ id: factorId, type: 'totp', confirmed: true });
    const again = await api('POST', `/users/${user.id}/mfa/totp/${factorId}/confirm`, { code: app.now().code });
    expect(again.status).toBe(409);

    const factors = await api('GET', `/users/${user.id}/mfa/factors`);
    expect(factors.status).toBe(200);
    expect(factors.body.data).toEqual([expect.objectContaining({ id: factorId, type: 'totp', name: 'Phone', confirmed: true })]);
    expect(factors.body.meta).toEqual({ mfaRequired: false });
    expect(JSON.stringify(factors.body)).not.toContain(e.secret);
  });

  it('a login then asks for the second factor, and the code opens a session with amr otp and mfa', async () => {
    const c = await challenge(user.email);
    expect(c.mfaToken).toMatch(/^mft_/);
    expect(Date.parse(c.data.expiresAt)).toBeGreaterThan(Date.now());
    expect(c.data.factors).toEqual([expect.objectContaining({ id: factorId, type: 'totp', confirmed: true })]);
    expect(c.data.passkey).toBeNull();
    expect(c.data.token).toBeUndefined();
    expect(JSON.stringify(c.data)).not.toContain(app.secret);

    const started = Date.now();
    const res = await loginMfa(c.mfaToken, { type: 'totp', code: await app.next() });
    expect(res.status).toBe(201);
    const session = res.body.data;
    expect(session).toMatchObject({ id: expect.stringMatching(/^ses_/), userId: user.id, token: expect.stringMatching(/^sst_/), acr: 'urn:secsvc:acr:mfa' });
    expect(session.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    expect(Date.parse(session.mfaAt)).toBeGreaterThanOrEqual(started - 2000);

    // what the user's session list says, and the factor's last use
    const listed = (await api('GET', `/users/${user.id}/sessions`)).body.data.find((x: { id: string }) => x.id === session.id);
    expect(listed).toMatchObject({ acr: 'urn:secsvc:acr:mfa', mfaAt: session.mfaAt });
    expect(listed.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    mfaSession = session;
    const factor = (await api('GET', `/users/${user.id}/mfa/factors`)).body.data[0];
    expect(factor.lastUsedAt).not.toBeNull();

    // the token answered its step: used again, it is a 400 naming it
    const reused = await loginMfa(c.mfaToken, { type: 'totp', code: app.now().code });
    expect(reused.status).toBe(400);
    expect(reused.body.error.details.map((d: { field: string }) => d.field)).toContain('mfaToken');

    // the audit log: user.login with mfaUsed and the factor
    const logins = await auditEntries(api, 'user.login', user.id, (es) => es.some((e) => e.target?.id === session.id));
    const entry = logins.find((e) => e.target?.id === session.id);
    expect(entry).toMatchObject({ event: 'user.login', result: 'success', actor: { id: user.id }, target: { id: session.id, type: 'session' } });
    expect(entry.metadata).toMatchObject({ mfaUsed: true, mfaFactor: 'totp', factorId });
    expect(entry.metadata.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    // the password-only login before the factor was confirmed says so
    expect(logins.some((e) => e.metadata?.mfaUsed === false)).toBe(true);
  });

  // docs/api/mfa.md, "What a session says": POST /v1/sessions/verify carries amr, acr and mfaAt too
  it('POST /sessions/verify says how the session authenticated', async () => {
    const verified = await api('POST', '/sessions/verify', { token: mfaSession.token });
    expect(verified.status).toBe(200);
    expect(verified.body.data.valid).toBe(true);
    expect(verified.body.data.session).toMatchObject({ id: mfaSession.id, acr: 'urn:secsvc:acr:mfa', mfaAt: mfaSession.mfaAt });
    expect(verified.body.data.session.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
  });

  it('refuses a replayed code and an earlier unused one (401, user.mfa.failed), and a malformed proof (400)', async () => {
    // a user of its own: codes of consecutive steps without waiting for the clock
    const user = await newUser();
    const { app } = await enrollTotp(api, user.id);
    const { codes } = (await api('POST', `/users/${user.id}/mfa/recovery-codes`)).body.data;
    const earlier = await app.next(); // never used
    const code = await app.next(); // the step after it
    const first = await challenge(user.email);
    expect((await loginMfa(first.mfaToken, { type: 'totp', code })).status).toBe(201);

    const second = await challenge(user.email);
    const replayed = await loginMfa(second.mfaToken, { type: 'totp', code });
    expect(replayed.status).toBe(401);
    expect(replayed.body.error.code).toBe('unauthorized');
    expect(replayed.body.data).toBeUndefined();
    // a code of an earlier step, still within the window but never used, is refused once a later one was
    expect((await loginMfa(second.mfaToken, { type: 'totp', code: earlier })).status).toBe(401);
    // not a proof at all
    const malformed = await loginMfa(second.mfaToken, { type: 'sms', code });
    expect(malformed.status).toBe(400);
    expect(malformed.body.error.details.map((d: { field: string }) => d.field)).toContain('type');
    // the challenge still takes a good answer (a recovery code here)
    const ok = await loginMfa(second.mfaToken, { type: 'recovery_code', code: codes[0] });
    expect(ok.status).toBe(201);

    const failures = await auditEntries(api, 'user.mfa.failed', user.id, (es) => es.length >= 2);
    for (const f of failures) expect(f).toMatchObject({ result: 'failure', actor: { id: user.id } });
    expect(failures.map((f) => f.metadata?.reason)).toContain('invalid_code');
    expect(JSON.stringify(failures)).not.toContain(code);
  });

  it('the wrong password never reaches the second step', async () => {
    const res = await login(user.email, 'not the password at all');
    expect(res.status).toBe(401);
    expect(res.body.data).toBeUndefined();
  });
});

describe('recovery codes', () => {
  it('10 codes, each working once as the second factor; a new set replaces the old one', async () => {
    const user = await newUser();
    await enrollTotp(api, user.id);
    const generated = await api('POST', `/users/${user.id}/mfa/recovery-codes`);
    expect(generated.status).toBe(201);
    const { factor, codes } = generated.body.data;
    expect(factor).toMatchObject({ type: 'recovery_codes', userId: user.id, remainingCodes: 10 });
    expect(codes).toHaveLength(10);
    expect(new Set(codes).size).toBe(10);
    for (const c of codes) expect(typeof c === 'string' && c.length >= 8).toBe(true);
    // listed without the codes
    const listed = await api('GET', `/users/${user.id}/mfa/factors`);
    expect(listed.body.data.find((f: { type: string }) => f.type === 'recovery_codes')).toMatchObject({ id: factor.id, remainingCodes: 10 });
    expect(JSON.stringify(listed.body)).not.toContain(codes[0]);

    const c1 = await challenge(user.email);
    const used = await loginMfa(c1.mfaToken, { type: 'recovery_code', code: codes[0] });
    expect(used.status).toBe(201);
    expect(used.body.data.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    expect(used.body.data.acr).toBe('urn:secsvc:acr:mfa');
    const after = (await api('GET', `/users/${user.id}/mfa/factors`)).body.data.find((f: { type: string }) => f.type === 'recovery_codes');
    expect(after.remainingCodes).toBe(9);
    expect(after.lastUsedAt).not.toBeNull();
    const logins = await auditEntries(api, 'user.login', user.id, (es) => es.some((e) => e.target?.id === used.body.data.id));
    expect(logins.find((e) => e.target?.id === used.body.data.id).metadata).toMatchObject({ mfaUsed: true, mfaFactor: 'recovery_code' });

    // once only
    const c2 = await challenge(user.email);
    expect((await loginMfa(c2.mfaToken, { type: 'recovery_code', code: codes[0] })).status).toBe(401);
    // another one of the set works
    expect((await loginMfa(c2.mfaToken, { type: 'recovery_code', code: codes[1] })).status).toBe(201);

    // a new set: the old codes stop working
    const renewed = await api('POST', `/users/${user.id}/mfa/recovery-codes`);
    expect(renewed.status).toBe(201);
    expect(renewed.body.data.codes.filter((c: string) => codes.includes(c))).toEqual([]);
    const c3 = await challenge(user.email);
    expect((await loginMfa(c3.mfaToken, { type: 'recovery_code', code: codes[2] })).status).toBe(401);
    expect((await loginMfa(c3.mfaToken, { type: 'recovery_code', code: renewed.body.data.codes[0] })).status).toBe(201);
    const all = (await api('GET', `/users/${user.id}/mfa/factors`)).body.data;
    expect(all.filter((f: { type: string }) => f.type === 'recovery_codes')).toHaveLength(1);
  });
});

describe('factors', () => {
  it('renames and removes a factor; once removed, the login needs no second step', async () => {
    const user = await newUser();
    const { factor } = await enrollTotp(api, user.id);
    const renamed = await api('PATCH', `/users/${user.id}/mfa/factors/${factor.id}`, { name: 'Old phone' });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: factor.id, name: 'Old phone' });
    expect((await api('PATCH', `/users/${user.id}/mfa/factors/${factor.id}`, { name: '' })).status).toBe(400);
    expect((await api('GET', `/users/${user.id}/mfa/factors`)).body.data[0].name).toBe('Old phone');
    expect((await login(user.email)).status).toBe(200);
    expect((await api('DELETE', `/users/${user.id}/mfa/factors/${factor.id}`)).status).toBe(204);
    expect((await api('DELETE', `/users/${user.id}/mfa/factors/${factor.id}`)).status).toBe(404);
    expect((await api('GET', `/users/${user.id}/mfa/factors`)).body.data).toEqual([]);
    expect((await login(user.email)).status).toBe(201);
    // ids that cannot exist, and another user's factor
    expect((await api('GET', '/users/nope/mfa/factors')).status).toBe(404);
    const other = await newUser();
    const { factor: theirs } = await enrollTotp(api, other.id);
    expect((await api('DELETE', `/users/${user.id}/mfa/factors/${theirs.id}`)).status).toBe(404);
  });

  it('passkey registration options: a discoverable credential with user verification, for this user', async () => {
    const user = await newUser();
    const res = await api('POST', `/users/${user.id}/mfa/passkeys/options`);
    expect(res.status).toBe(200);
    const { challengeId, expiresAt, publicKey } = res.body.data;
    expect(challengeId).toMatch(/^mfc_/);
    expect(Date.parse(expiresAt) - Date.now()).toBeGreaterThan(200_000);
    expect(publicKey.challenge).toMatch(/^[A-Za-z0-9_-]{22,}$/);
    expect(Buffer.from(publicKey.user.id, 'base64url').toString('utf8')).toBe(user.id);
    expect(publicKey.user.name).toBe(user.email);
    expect(publicKey.rp).toMatchObject({ id: new URL(stack.baseUrl).hostname, name: expect.any(String) });
    expect(publicKey.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' });
    expect(publicKey.pubKeyCredParams.map((p: { alg: number }) => p.alg)).toEqual(expect.arrayContaining([-7, -257]));
    // a credential that is no WebAuthn answer: 400, nothing stored
    const bad = await api('POST', `/users/${user.id}/mfa/passkeys`, { challengeId, credential: { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: {} } });
    expect(bad.status).toBe(400);
    expect((await api('POST', `/users/${user.id}/mfa/passkeys`, { challengeId: 'mfc_nope', credential: {} })).status).toBe(400);
    expect((await api('GET', `/users/${user.id}/mfa/factors`)).body.data).toEqual([]);
    // a passkey step-up needs a passkey
    const session = (await login(user.email)).body.data.token;
    const options = await call('POST', '/auth/step-up/options', undefined, session);
    expect(options.status).toBe(409);
    // passwordless options name no credential (discoverable)
    const pwless = await call('POST', '/auth/passkeys/options');
    expect(pwless.status).toBe(200);
    expect(pwless.body.data.challengeId).toMatch(/^mfc_/);
    expect(pwless.body.data.publicKey.allowCredentials ?? []).toEqual([]);
    expect(pwless.body.data.publicKey.userVerification).toBe('required');
    const refused = await call('POST', '/auth/passkeys/login', { challengeId: pwless.body.data.challengeId, credential: { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: {} } });
    expect([400, 401]).toContain(refused.status);
    expect(refused.body.data).toBeUndefined();
  });
});

describe('step-up for policies that require MFA', () => {
  let user: { id: string; email: string };
  let app: Authenticator;
  let session: string;
  let sessionId: string;
  let mfaPolicy: { id: string };

  it('a call a policy allows only with MFA is 403 mfa_required for a password-only session, 200 after step-up', async () => {
    user = await newUser();
    mfaPolicy = (
      await api('POST', '/policies', { name: 'own profile with MFA', effect: 'allow', principals: ['user:${self}'], actions: ['read'], resources: ['/users/${self}'], conditions: { mfa: true } })
    ).body.data;
    expect(mfaPolicy.id).toMatch(/^pol_/);
    expect((await api('GET', `/policies/${mfaPolicy.id}`)).body.data.conditions).toEqual({ mfa: true });

    // a password-only session: the login before the TOTP was confirmed
    const started = await api('POST', `/users/${user.id}/mfa/totp`, {});
    app = new Authenticator(started.body.data.secret);
    const pwd = await login(user.email);
    expect(pwd.status).toBe(201);
    session = pwd.body.data.token;
    sessionId = pwd.body.data.id;
    expect((await api('POST', `/users/${user.id}/mfa/totp/${started.body.data.factor.id}/confirm`, { code: await app.next() })).status).toBe(200);

    const asUser = apiClient(stack.baseUrl, session);
    const denied = await asUser('GET', `/users/${user.id}`);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('mfa_required');
    expect(denied.body.error.message).toContain('/v1/auth/step-up');
    expect(denied.body.error.details).toEqual([expect.objectContaining({ field: 'mfa' })]);
    expect(denied.body.meta.requestId).toMatch(/^req_/);
    // what no policy allows stays forbidden, MFA or not
    const other = await newUser();
    const forbidden = await asUser('GET', `/users/${other.id}`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error.code).toBe('forbidden');

    // step-up: a wrong code is refused, the session unchanged
    const wrong = await asUser('POST', '/auth/step-up', { type: 'totp', code: String((Number(app.now().code) + 7) % 1_000_000).padStart(6, '0') });
    expect(wrong.status).toBe(401);
    expect((await asUser('GET', `/users/${user.id}`)).status).toBe(403);
    // an API key cannot step up (it is no session)
    expect((await api('POST', '/auth/step-up', { type: 'totp', code: app.now().code })).status).toBe(403);

    const before = Date.now();
    const stepped = await asUser('POST', '/auth/step-up', { type: 'totp', code: await app.next() });
    expect(stepped.status).toBe(200);
    expect(stepped.body.data).toMatchObject({ id: sessionId, userId: user.id, acr: 'urn:secsvc:acr:mfa' });
    expect(stepped.body.data.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    expect(Date.parse(stepped.body.data.mfaAt)).toBeGreaterThanOrEqual(before - 2000);
    expect(stepped.body.data.token).toBeUndefined();

    const allowed = await asUser('GET', `/users/${user.id}`);
    expect(allowed.status).toBe(200);
    expect(allowed.body.data.id).toBe(user.id);
    expect((await asUser('GET', `/users/${other.id}`)).status).toBe(403);

    const events = await auditEntries(api, 'user.mfa.step_up', user.id, (es) => es.length >= 1);
    expect(events[0]).toMatchObject({ result: 'success', actor: { id: user.id }, target: { id: sessionId, type: 'session' } });
    expect(events[0].metadata).toMatchObject({ mfaFactor: 'totp' });
  });

  it('an access token of a password-only session gets the RFC 9470 challenge; one minted after step-up passes', async () => {
    const u = await newUser();
    const started = await api('POST', `/users/${u.id}/mfa/totp`, {});
    const uApp = new Authenticator(started.body.data.secret);
    const pwd = (await login(u.email)).body.data.token as string;
    await api('POST', `/users/${u.id}/mfa/totp/${started.body.data.factor.id}/confirm`, { code: await uApp.next() });
    const jwt = (await api('POST', '/tokens', { sessionToken: pwd })).body.data.accessToken as string;
    const denied = await call('GET', `/users/${u.id}`, undefined, jwt);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('mfa_required');
    const challengeHeader = denied.headers.get('www-authenticate') ?? '';
    expect(challengeHeader).toContain('error="insufficient_user_authentication"');
    expect(challengeHeader).toContain('acr_values="urn:secsvc:acr:mfa"');

    expect((await call('POST', '/auth/step-up', { type: 'totp', code: await uApp.next() }, pwd)).status).toBe(200);
    const after = (await api('POST', '/tokens', { sessionToken: pwd })).body.data.accessToken as string;
    const claims = JSON.parse(Buffer.from(after.split('.')[1]!, 'base64url').toString('utf8'));
    expect(claims.amr).toEqual(expect.arrayContaining(['otp', 'mfa']));
    expect(claims.acr).toBe('urn:secsvc:acr:mfa');
    expect(typeof claims.auth_time).toBe('number');
    expect((await call('GET', `/users/${u.id}`, undefined, after)).status).toBe(200);
  });

  it('an mfa condition with maxAgeSeconds: the step-up counts for that long only', async () => {
    const u = await newUser();
    const started = await api('POST', `/users/${u.id}/mfa/totp`, {});
    const uApp = new Authenticator(started.body.data.secret);
    const pwd = (await login(u.email)).body.data.token as string;
    await api('POST', `/users/${u.id}/mfa/totp/${started.body.data.factor.id}/confirm`, { code: await uApp.next() });
    const p = await api('POST', '/policies', { name: 'rename self after a recent MFA', effect: 'allow', principals: [`user:${u.id}`], actions: ['update'], resources: ['/users/${self}'], conditions: { mfa: { maxAgeSeconds: 8 } } });
    expect(p.status).toBe(201);
    const asU = apiClient(stack.baseUrl, pwd);
    const first = await asU('PATCH', `/users/${u.id}`, { name: 'Renamed' });
    expect(first.status).toBe(403);
    expect(first.body.error.code).toBe('mfa_required');
    expect(first.body.error.message).toContain('8 seconds');
    expect((await asU('POST', '/auth/step-up', { type: 'totp', code: await uApp.next() })).status).toBe(200);
    expect((await asU('PATCH', `/users/${u.id}`, { name: 'Renamed' })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 9_500));
    const stale = await asU('PATCH', `/users/${u.id}`, { name: 'Renamed again' });
    expect(stale.status).toBe(403);
    expect(stale.body.error.code).toBe('mfa_required');
    await api('DELETE', `/policies/${p.body.data.id}`);
  });

  it('rejects malformed mfa conditions, naming the field', async () => {
    const res = await api('POST', '/policies', { name: 'bad', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['*'], conditions: { mfa: { maxAgeSeconds: 0, when: 'always' } } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(expect.arrayContaining(['conditions.mfa.maxAgeSeconds', 'conditions.mfa.when']));
    expect((await api('POST', '/policies', { name: 'bad', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['*'], conditions: { mfa: 'yes' } })).status).toBe(400);
  });

  // Last of its group: it depends on the simulator's MFA fields (context.mfa in, mfaRequired and reason out).
  it('the simulator says a password-only call is denied for want of MFA, and allowed with it', async () => {
    const simulate = (context: Record<string, unknown>) => api('POST', '/policies/simulate', { principal: `user:${user.id}`, action: 'read', resource: `/users/${user.id}`, context });
    const without = await simulate({ mfa: false });
    expect(without.status).toBe(200);
    expect(without.body.data).toMatchObject({ allowed: false, effect: 'deny', mfaRequired: true });
    expect(without.body.data.reason).toMatch(/requires MFA/);
    const withMfa = await simulate({ mfa: true });
    expect(withMfa.status).toBe(200);
    expect(withMfa.body.data).toMatchObject({ allowed: true, effect: 'allow', matchedPolicies: [expect.objectContaining({ id: mfaPolicy.id })] });
    expect(withMfa.body.data.mfaRequired).toBeFalsy();
    // a draft needing a recent MFA: an MFA of two minutes ago is too old, one of half a minute ago will do
    const recent = { name: 'recent MFA', effect: 'allow', principals: [`user:${user.id}`], actions: ['export'], resources: ['/reports/*'], conditions: { mfa: { maxAgeSeconds: 60 } } };
    const old = await api('POST', '/policies/simulate', { principal: `user:${user.id}`, action: 'export', resource: '/reports/q1', context: { mfa: true, mfaAgeSeconds: 120 }, policies: [recent] });
    expect(old.status).toBe(200);
    expect(old.body.data).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 60 });
    expect(old.body.data.reason).toContain('60');
    const fresh = await api('POST', '/policies/simulate', { principal: `user:${user.id}`, action: 'export', resource: '/reports/q1', context: { mfa: true, mfaAgeSeconds: 30 }, policies: [recent] });
    expect(fresh.body.data).toMatchObject({ allowed: true, mfaRequired: false, matchedPolicies: [{ id: 'draft_0' }] });
    // an explanation names the mfa condition
    const explained = await api('POST', '/policies/simulate', { principal: `user:${user.id}`, action: 'read', resource: `/users/${user.id}`, context: { mfa: false }, explain: true });
    expect(explained.body.data.explanations).toEqual(expect.arrayContaining([expect.objectContaining({ policyId: mfaPolicy.id, failed: 'condition', condition: expect.stringMatching(/^mfa/) })]));
  });
});

describe('MFA required by the environment', () => {
  afterAll(async () => {
    await api('PUT', '/mfa/settings', { required: 'off' });
  });

  it("'all': a user without factors gets a challenge, enrolls TOTP inside it and gets a session", async () => {
    const initial = await api('GET', '/mfa/settings');
    expect(initial.status).toBe(200);
    expect(initial.body.data).toMatchObject({ required: 'off', roles: [] });
    const user = await newUser();
    expect((await login(user.email)).status).toBe(201);

    const put = await api('PUT', '/mfa/settings', { required: 'all' });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ required: 'all', roles: [], updatedAt: expect.any(String) });
    expect((await api('GET', '/mfa/settings')).body.data.required).toBe('all');
    expect((await api('GET', `/users/${user.id}/mfa/factors`)).body.meta).toEqual({ mfaRequired: true });

    const c = await challenge(user.email);
    expect(c.data).toMatchObject({ factors: [], passkey: null, enrollmentRequired: true });
    // no factor, no way through without enrolling
    expect((await loginMfa(c.mfaToken, { type: 'totp', code: '123456' })).status).toBe(401);
    const enrolled = await call('POST', '/auth/login/mfa/totp', { mfaToken: c.mfaToken, name: 'My phone' });
    expect(enrolled.status).toBe(201);
    expect(enrolled.body.data.factor).toMatchObject({ type: 'totp', name: 'My phone', confirmed: false });
    const app = new Authenticator(enrolled.body.data.secret);
    const done = await loginMfa(c.mfaToken, { type: 'totp', code: await app.next() });
    expect(done.status).toBe(201);
    expect(done.body.data.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));
    const factors = (await api('GET', `/users/${user.id}/mfa/factors`)).body.data;
    expect(factors).toEqual([expect.objectContaining({ id: enrolled.body.data.factor.id, confirmed: true })]);
    await auditEntries(api, 'user.mfa.factor_added', user.id, (es) => es.some((e) => e.metadata?.factorType === 'totp'));
    // the last factor of a user who must use MFA stays
    const removed = await api('DELETE', `/users/${user.id}/mfa/factors/${factors[0].id}`);
    expect(removed.status).toBe(409);
    // the next login answers the challenge with that factor, and enrolling again is refused
    const next = await challenge(user.email);
    expect(next.data.enrollmentRequired).toBe(false);
    expect((await call('POST', '/auth/login/mfa/totp', { mfaToken: next.mfaToken })).status).toBe(409);
    expect((await loginMfa(next.mfaToken, { type: 'totp', code: await app.next() })).status).toBe(201);
  });

  it("'roles': only users holding one of the roles", async () => {
    const put = await api('PUT', '/mfa/settings', { required: 'roles', roles: ['role_admin'] });
    expect(put.status).toBe(200);
    expect(put.body.data).toMatchObject({ required: 'roles', roles: ['role_admin'] });
    const admin = await newUser(['role_admin']);
    const staff = await newUser(['role_staff']);
    expect((await login(admin.email)).status).toBe(200);
    expect((await login(staff.email)).status).toBe(201);

    const bad = await api('PUT', '/mfa/settings', { required: 'roles', roles: ['admin', 'role_ok'] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { field: string }) => d.field)).toEqual(['roles[0]']);
    expect((await api('PUT', '/mfa/settings', { required: 'sometimes' })).status).toBe(400);
    expect((await api('PUT', '/mfa/settings', { required: 'off' })).status).toBe(200);
    expect((await login(admin.email)).status).toBe(201);
    // each change is an audit entry with the new requirement
    const changes = await eventually(
      async () => {
        const page = (await api('GET', '/logs?limit=100&events=mfa.settings.updated')).body.data as { id: string }[];
        return Promise.all(page.map(async (e) => (await api('GET', `/logs/${e.id}`)).body.data));
      },
      (es) => es.length >= 3,
    );
    expect(changes.map((e) => e.metadata?.required).sort()).toEqual(expect.arrayContaining(['all', 'off', 'roles']));
  });
});

// After the others: its failures count against the ip (20 in 15 minutes) too.
describe('guessing', () => {
  it('5 wrong codes stop the user: even the right code is then 429 with Retry-After', async () => {
    const user = await newUser();
    const { app } = await enrollTotp(api, user.id);
    const c = await challenge(user.email);
    const right = app.now().code;
    for (let i = 0; i < 5; i++) {
      const guess = String((Number(right) + 1 + i) % 1_000_000).padStart(6, '0');
      expect((await loginMfa(c.mfaToken, { type: 'totp', code: guess })).status).toBe(401);
    }
    const next = await login(user.email);
    expect(next.status).toBe(200);
    const stopped = await loginMfa(next.body.data.mfaToken, { type: 'totp', code: await app.next() });
    expect(stopped.status).toBe(429);
    expect(stopped.body.error.code).toBe('rate_limited');
    expect(Number(stopped.headers.get('retry-after'))).toBeGreaterThan(0);
    const failures = await auditEntries(api, 'user.mfa.failed', user.id, (es) => es.length >= 5);
    expect(failures.every((f) => f.metadata?.reason === 'invalid_code')).toBe(true);
  });
});

describe('OpenAPI', () => {
  it('documents every MFA route', async () => {
    const doc = (await (await fetch(`${stack.baseUrl}/openapi.json`)).json()) as { paths: Record<string, Record<string, { security?: unknown; responses: Record<string, unknown> }>> };
    const expected: [string, string][] = [
      ['/v1/users/{id}/mfa/factors', 'get'],
      ['/v1/users/{id}/mfa/totp', 'post'],
      ['/v1/users/{id}/mfa/totp/{factorId}/confirm', 'post'],
      ['/v1/users/{id}/mfa/passkeys/options', 'post'],
      ['/v1/users/{id}/mfa/passkeys', 'post'],
      ['/v1/users/{id}/mfa/recovery-codes', 'post'],
      ['/v1/users/{id}/mfa/factors/{factorId}', 'patch'],
      ['/v1/users/{id}/mfa/factors/{factorId}', 'delete'],
      ['/v1/mfa/settings', 'get'],
      ['/v1/mfa/settings', 'put'],
      ['/v1/auth/login', 'post'],
      ['/v1/auth/login/mfa', 'post'],
      ['/v1/auth/login/mfa/totp', 'post'],
      ['/v1/auth/passkeys/options', 'post'],
      ['/v1/auth/passkeys/login', 'post'],
      ['/v1/auth/step-up', 'post'],
      ['/v1/auth/step-up/options', 'post'],
    ];
    const missing = expected.filter(([p, m]) => !doc.paths?.[p]?.[m]).map(([p, m]) => `${m.toUpperCase()} ${p}`);
    expect(missing).toEqual([]);
    expect(Object.keys(doc.paths['/v1/auth/login'].post.responses)).toEqual(expect.arrayContaining(['200', '201', '401']));
    expect(doc.paths['/v1/auth/login/mfa'].post.security).toEqual([]);
  });
});
