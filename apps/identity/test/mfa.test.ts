/**
 * Multi-factor authentication through the identity RPCs against a real PostgreSQL: TOTP enrollment, the second
 * step of logins (TOTP, recovery codes, passkeys), passwordless passkey logins, step-up of sessions, the
 * environment's MFA requirement, and the events of each. TOTP codes are computed from the enrolled secret;
 * passkeys come from a software authenticator.
 */
import { Metadata } from '@grpc/grpc-js';
import type { identity } from '@secsvc/proto';
import { AppError, type CallContext, type Pool } from '@secsvc/shared';
import type { IdentityConfig } from '../src/config';
import { ACR_MFA, ACR_SINGLE_FACTOR } from '../src/domain/mfa';
import { SoftAuthenticator } from '../src/domain/testing/soft-authenticator';
import { base32Decode, hotp, timeStep, TOTP_PERIOD } from '../src/domain/totp';
import type { IdentityRpc } from '../src/rpc';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { identityRpc } from './support/rpc';

const ISSUER = 'https://auth.example.com';
const RP_ID = 'auth.example.com';
const config = { SERVER_SECRET: 'm'.repeat(40), ISSUER, WEBAUTHN_RP_NAME: 'Security Service' } as IdentityConfig;
const PASSWORD = 'correct horse battery staple';

let t: IdentityTestDb;
let pool: Pool;
let rpc: IdentityRpc;

type Env = 'live' | 'test';
type Actor = { id: string; type: string };

/** Call metadata as the gateway sends it: an API key by default, or the session's user. */
const call = (actor: Actor = { id: 'key_admin', type: 'api_key' }): CallContext => {
  const metadata = new Metadata();
  metadata.set('x-actor-id', actor.id);
  metadata.set('x-actor-type', actor.type);
  metadata.set('x-auth-method', actor.type === 'user' ? 'session' : actor.type);
  return { requestId: 'req_mfatests00000000000', metadata };
};

/** Each test from its own ip, so the per-ip failure throttle of one test never reaches another. */
let ipCounter = 0;
const nextIp = () => `198.51.${100 + Math.floor(ipCounter / 250)}.${(ipCounter++ % 250) + 1}`;

async function rejected(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// --- TOTP codes ------------------------------------------------------------------------------------

/** The code of `secret` (base32) at the current time step plus `offset`. */
const totp = (secret: string, offset = 0) => hotp(base32Decode(secret), timeStep(Date.now()) + offset);

/** A well-formed code that is none of the codes the service accepts now (steps −2..+2). */
function wrongCode(secret: string): string {
  const near = new Set([-2, -1, 0, 1, 2].map((o) => totp(secret, o)));
  for (let offset = 100; ; offset++) {
    const code = totp(secret, offset);
    if (!near.has(code)) return code;
  }
}

/**
 * Waits, when needed, until at least 5 seconds of the current time step are left: a code of the previous step
 * (offset −1) computed now is still accepted when it arrives.
 */
async function freshStep(): Promise<void> {
  const left = TOTP_PERIOD * 1000 - (Date.now() % (TOTP_PERIOD * 1000));
  if (left < 5000) await sleep(left + 50);
}

// --- Users, factors, logins ------------------------------------------------------------------------

let n = 0;
async function userWithPassword(environment: Env = 'live', roles: string[] = []) {
  const u = await rpc.createUser({ environment, email: `mfa${n++}@example.com`, name: 'M', roles, metadataJson: '' }, call());
  await rpc.setPassword({ environment, userId: u.id, password: PASSWORD }, call());
  return u;
}

/** A confirmed TOTP factor of the user (confirmed with the previous step's code): the enrollment. */
async function withTotp(userId: string, environment: Env = 'live', name = '') {
  await freshStep();
  const e = await rpc.enrollTotp({ environment, userId, name });
  const factor = await rpc.confirmTotp({ environment, userId, factorId: e.factor!.id, code: totp(e.secret, -1), ip: nextIp() }, call());
  expect(factor.confirmed).toBe(true);
  return e;
}

const authenticator = () => new SoftAuthenticator({ rpId: RP_ID, origin: ISSUER });

async function registerPasskey(userId: string, auth: SoftAuthenticator, environment: Env = 'live', name = 'Laptop') {
  const start = await rpc.startPasskeyRegistration({ environment, userId });
  const options = JSON.parse(start.optionsJson);
  const credential = auth.create(options);
  const factor = await rpc.finishPasskeyRegistration(
    { environment, userId, challengeId: start.challengeId, name, credentialJson: JSON.stringify(credential) },
    call(),
  );
  return { factor, credential, options, start };
}

const login = (email: string, ip: string, environment: Env = 'live') =>
  rpc.login({ environment, email, password: PASSWORD, ip, userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' }, call());

/** A password login that must answer with the second step's challenge. */
async function challenged(email: string, ip: string, environment: Env = 'live'): Promise<identity.MfaChallenge> {
  const res = await login(email, ip, environment);
  expect(res.session).toBeUndefined();
  expect(res.mfa).toBeDefined();
  return res.mfa!;
}

const proof = (type: string, code = '', credentialJson = ''): identity.MfaProof => ({ type, code, credentialJson });

const complete = (mfaToken: string, p: identity.MfaProof, ip: string, environment: Env = 'live') =>
  rpc.completeMfaLogin({ environment, mfaToken, proof: p, ip, userAgent: 'jest' }, call());

const listFactors = async (userId: string, environment: Env = 'live') => (await rpc.listMfaFactors({ environment, userId })).factors;

// --- Events ----------------------------------------------------------------------------------------

interface Event {
  type: string;
  payload: { actor: Record<string, unknown>; target?: { id: string; type: string }; result: string; environment: string };
  metadata: Record<string, unknown>;
}

/** The outbox events of `type` that mention `id` (a user, factor or session id), oldest first. */
async function events(type: string, id: string): Promise<Event[]> {
  const { rows } = await pool.query(`SELECT event_type, payload FROM outbox WHERE event_type = $1 AND payload::text LIKE $2 ORDER BY seq`, [type, `%${id}%`]);
  return rows.map((r) => ({ type: r.event_type, payload: r.payload, metadata: JSON.parse(r.payload.metadataJson) }));
}

const sessionRow = async (id: string) =>
  (await pool.query<{ amr: string[]; acr: string; mfa_at: Date | null }>('SELECT amr, acr, mfa_at FROM sessions WHERE id = $1', [id])).rows[0]!;

beforeAll(async () => {
  t = await identityTestDb(config);
  ({ pool } = t);
  rpc = identityRpc(t.ctx);
});

afterAll(() => closeIdentityTestDb(t));

describe('TOTP enrollment', () => {
  it('returns the secret, its otpauth URI and a QR code; a wrong code is refused, the right one confirms once', async () => {
    const u = await userWithPassword();
    const e = await rpc.enrollTotp({ environment: 'live', userId: u.id, name: '' });
    expect(e.factor).toMatchObject({ type: 'totp', name: 'Authenticator app', confirmed: false, userId: u.id, environment: 'live' });
    expect(e.factor!.id).toMatch(/^mfa_/);
    // 160 bits of secret in unpadded base32
    expect(e.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(base32Decode(e.secret)).toHaveLength(20);
    expect(e.otpauthUri).toBe(
      `otpauth://totp/Security%20Service:${encodeURIComponent(u.email)}?secret=${e.secret}&issuer=Security%20Service&algorithm=SHA1&digits=6&period=30`,
    );
    expect(e.qrCode).toMatch(/^data:image\/svg\+xml;base64,/);
    expect(Buffer.from(e.qrCode.split(',')[1]!, 'base64').toString('utf8')).toContain('<svg');
    // the secret is stored sealed, never as itself
    const stored = (await pool.query('SELECT secret FROM mfa_factors WHERE id = $1', [e.factor!.id])).rows[0].secret as Buffer;
    expect(stored.includes(base32Decode(e.secret))).toBe(false);
    expect(stored.toString('latin1')).not.toContain(e.secret);

    const ip = nextIp();
    const wrong = await rejected(rpc.confirmTotp({ environment: 'live', userId: u.id, factorId: e.factor!.id, code: wrongCode(e.secret), ip }, call()));
    expect(wrong.code).toBe('unauthorized');
    expect(wrong.details.map((d) => d.field)).toEqual(['code']);
    const failed = await events('user.mfa.failed', u.id);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.payload.actor).toMatchObject({ id: u.id, type: 'user' });
    expect(failed[0]!.payload.result).toBe('failure');
    expect(failed[0]!.metadata).toMatchObject({ factorType: 'totp', reason: 'invalid_code' });
    expect((await listFactors(u.id)).map((f) => [f.id, f.confirmed])).toEqual([[e.factor!.id, false]]);
    // an unconfirmed factor does not make logins ask for a second step
    expect((await login(u.email, nextIp())).session?.token).toMatch(/^sst_/);

    const confirmed = await rpc.confirmTotp({ environment: 'live', userId: u.id, factorId: e.factor!.id, code: totp(e.secret, 0), ip }, call());
    expect(confirmed).toMatchObject({ id: e.factor!.id, type: 'totp', confirmed: true });
    expect(confirmed.lastUsedAt).toBeDefined();
    const added = await events('user.mfa.factor_added', u.id);
    expect(added).toHaveLength(1);
    expect(added[0]!.payload.target).toEqual({ id: e.factor!.id, type: 'mfa_factor' });
    expect(added[0]!.metadata).toMatchObject({ userId: u.id, factorType: 'totp', name: 'Authenticator app' });
    expect(JSON.stringify(added[0])).not.toContain(e.secret);

    const again = await rejected(rpc.confirmTotp({ environment: 'live', userId: u.id, factorId: e.factor!.id, code: totp(e.secret, 1), ip }, call()));
    expect(again.code).toBe('conflict');
    expect(again.httpStatus).toBe(409);
    expect(await events('user.mfa.factor_added', u.id)).toHaveLength(1);
  });

  it('names the factor as asked, and answers not_found for an unknown factor or user', async () => {
    const u = await userWithPassword();
    const e = await rpc.enrollTotp({ environment: 'live', userId: u.id, name: 'Work phone' });
    expect(e.factor!.name).toBe('Work phone');
    expect((await rejected(rpc.confirmTotp({ environment: 'live', userId: u.id, factorId: 'mfa_missing', code: '123456', ip: nextIp() }, call()))).code).toBe('not_found');
    expect((await rejected(rpc.enrollTotp({ environment: 'live', userId: 'user_missing', name: '' }))).code).toBe('not_found');
  });
});

describe('password login with a second step', () => {
  it('gives a user without factors a password-only session (amr pwd, user.login mfaUsed false)', async () => {
    const u = await userWithPassword();
    const res = await login(u.email, nextIp());
    expect(res.mfa).toBeUndefined();
    const s = res.session!.session!;
    expect(s.amr).toEqual(['pwd']);
    expect(s.acr).toBe(ACR_SINGLE_FACTOR);
    expect(s.mfaAt).toBeUndefined();
    expect((await sessionRow(s.id)).mfa_at).toBeNull();
    const logins = await events('user.login', u.id);
    expect(logins).toHaveLength(1);
    expect(logins[0]!.payload.target).toEqual({ id: s.id, type: 'session' });
    expect(logins[0]!.metadata).toMatchObject({ authMethod: 'password', mfaUsed: false, amr: ['pwd'] });
  });

  it('asks a user with a confirmed TOTP for a code; the code opens an MFA session, once', async () => {
    const u = await userWithPassword();
    const e = await withTotp(u.id);
    const ip = nextIp();
    const mfa = await challenged(u.email, ip);
    expect(mfa.mfaToken).toMatch(/^mft_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(mfa.expiresAt!) - Date.now()).toBeGreaterThan(200_000);
    expect(Date.parse(mfa.expiresAt!) - Date.now()).toBeLessThanOrEqual(300_000);
    expect(mfa.factors.map((f) => [f.id, f.type, f.confirmed])).toEqual([[e.factor!.id, 'totp', true]]);
    expect(mfa.passkeyOptionsJson).toBe('');
    // no session was opened and no successful login recorded yet
    expect((await pool.query('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [u.id])).rows[0].n).toBe(0);
    expect(await events('user.login', u.id)).toEqual([]);
    // the token is stored only as an HMAC
    const stored = await pool.query('SELECT token_hash FROM mfa_challenges WHERE user_id = $1', [u.id]);
    expect(stored.rows).toHaveLength(1);
    expect(Buffer.from(stored.rows[0].token_hash).toString('latin1')).not.toContain(mfa.mfaToken.slice(4, 20));

    const code = totp(e.secret, 0);
    const opened = await complete(mfa.mfaToken, proof('totp', code), ip);
    expect(opened.token).toMatch(/^sst_/);
    const s = opened.session!;
    expect(s.userId).toBe(u.id);
    expect(s.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(s.acr).toBe(ACR_MFA);
    expect(s.mfaAt).toBeDefined();
    expect(Math.abs(Date.parse(s.mfaAt!) - Date.now())).toBeLessThan(60_000);
    const row = await sessionRow(s.id);
    expect(row.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(row.mfa_at).toBeInstanceOf(Date);
    const verified = await rpc.verifySession({ environment: 'live', token: opened.token });
    expect(verified.valid).toBe(true);
    expect(verified.session!.amr).toEqual(['pwd', 'otp', 'mfa']);

    const logins = await events('user.login', u.id);
    expect(logins).toHaveLength(1);
    expect(logins[0]!.payload.result).toBe('success');
    expect(logins[0]!.payload.actor).toMatchObject({ id: u.id, email: u.email, type: 'user' });
    expect(logins[0]!.payload.target).toEqual({ id: s.id, type: 'session' });
    expect(logins[0]!.metadata).toMatchObject({ authMethod: 'password', mfaUsed: true, mfaFactor: 'totp', factorId: e.factor!.id, amr: ['pwd', 'otp', 'mfa'] });
    expect(JSON.stringify(logins[0])).not.toContain(mfa.mfaToken);

    // the token works once, whatever the proof
    const reused = await rejected(complete(mfa.mfaToken, proof('totp', totp(e.secret, 1)), ip));
    expect(reused.code).toBe('invalid_request');
    expect(reused.details.map((d) => d.field)).toEqual(['mfaToken']);

    // the code's time step was used: the same code on a new login's challenge is refused
    const next = await challenged(u.email, ip);
    const replay = await rejected(complete(next.mfaToken, proof('totp', code), ip));
    expect(replay.code).toBe('unauthorized');
    expect(replay.details.map((d) => d.field)).toEqual(['code']);
    const failed = await events('user.mfa.failed', u.id);
    expect(failed.map((f) => f.metadata.reason)).toEqual(['invalid_code']);
    // the challenge survives one wrong answer: a later step's code completes it
    const second = await complete(next.mfaToken, proof('totp', totp(e.secret, 1)), ip);
    expect(second.session!.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(await events('user.login', u.id)).toHaveLength(2);
  });

  it('uses a challenge up after 5 wrong codes and throttles the account', async () => {
    const u = await userWithPassword();
    const e = await withTotp(u.id);
    const ip = nextIp();
    const mfa = await challenged(u.email, ip);
    for (let i = 0; i < 5; i++) {
      const err = await rejected(complete(mfa.mfaToken, proof('totp', wrongCode(e.secret)), ip));
      expect(err.code).toBe('unauthorized');
    }
    const challenge = await pool.query('SELECT attempts, used_at FROM mfa_challenges WHERE user_id = $1', [u.id]);
    expect(challenge.rows).toEqual([{ attempts: 5, used_at: expect.any(Date) }]);
    expect(await events('user.mfa.failed', u.id)).toHaveLength(5);
    // the challenge is used up, even for the right code
    const usedUp = await rejected(complete(mfa.mfaToken, proof('totp', totp(e.secret, 0)), ip));
    expect(usedUp.code).toBe('invalid_request');
    expect(usedUp.details[0]!.field).toBe('mfaToken');
    // the password still answers with a challenge, but the account's second factor is throttled (from any ip)
    const next = await challenged(u.email, nextIp());
    const limited = await rejected(complete(next.mfaToken, proof('totp', totp(e.secret, 0)), nextIp()));
    expect(limited.code).toBe('rate_limited');
    expect(limited.retryAfterSeconds).toBeGreaterThan(0);
    expect(limited.retryAfterSeconds).toBeLessThanOrEqual(900);
    expect(await events('user.login', u.id)).toEqual([]);
  });

  it('counts wrong codes sent in parallel like codes sent in a row: at most 5 are checked', async () => {
    const u = await userWithPassword();
    const e = await withTotp(u.id);
    const ip = nextIp();
    const mfa = await challenged(u.email, ip);
    const answers = await Promise.all(Array.from({ length: 20 }, () => rejected(complete(mfa.mfaToken, proof('totp', wrongCode(e.secret)), ip))));
    const codes = answers.map((a) => a.code);
    expect(codes.filter((c) => c === 'unauthorized')).toHaveLength(5);
    expect(codes.every((c) => c === 'unauthorized' || c === 'rate_limited' || c === 'invalid_request')).toBe(true);
    const challenge = await pool.query('SELECT attempts FROM mfa_challenges WHERE user_id = $1', [u.id]);
    expect(challenge.rows[0].attempts).toBe(5);
    expect((await pool.query('SELECT count(*)::int AS n FROM mfa_failures WHERE user_id = $1', [u.id])).rows[0].n).toBeLessThanOrEqual(6);
  });

  it('a passwordless attempt naming another user (the handle is unsigned) never throttles that user', async () => {
    const u = await userWithPassword();
    const e = await withTotp(u.id);
    const handle = Buffer.from(u.id).toString('base64url');
    for (let i = 0; i < 8; i++) {
      const c = await rpc.startPasskeyAuthentication({ environment: 'live', userId: '' });
      const forged = { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'AAAA', authenticatorData: 'AAAA', signature: 'AAAA', userHandle: handle }, clientExtensionResults: {} };
      const err = await rejected(
        rpc.completePasskeyLogin({ environment: 'live', challengeId: c.challengeId, credentialJson: JSON.stringify(forged), ip: nextIp(), userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' }, call()),
      );
      expect(['unauthorized', 'invalid_request']).toContain(err.code);
    }
    expect(await events('user.mfa.failed', u.id)).toEqual([]);
    // the user's own second step still works
    const mfa = await challenged(u.email, nextIp());
    const session = await complete(mfa.mfaToken, proof('totp', totp(e.secret, 0)), nextIp());
    expect(session.session!.amr).toContain('mfa');
  });

  it('refuses unknown and malformed tokens as invalid_request naming mfaToken', async () => {
    for (const token of ['mft_' + 'A'.repeat(43), 'garbage', '']) {
      const err = await rejected(complete(token, proof('totp', '123456'), nextIp()));
      expect(err.code).toBe('invalid_request');
      expect(err.details).toEqual([{ field: 'mfaToken', message: 'unknown, used or expired token' }]);
    }
  });

  it('refuses an expired challenge and an unknown proof type', async () => {
    const u = await userWithPassword();
    const e = await withTotp(u.id);
    const ip = nextIp();
    const mfa = await challenged(u.email, ip);
    const badType = await rejected(complete(mfa.mfaToken, proof('sms', '123456'), ip));
    expect(badType.code).toBe('invalid_request');
    expect(badType.details[0]!.field).toBe('type');
    await pool.query(`UPDATE mfa_challenges SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [u.id]);
    const expired = await rejected(complete(mfa.mfaToken, proof('totp', totp(e.secret, 0)), ip));
    expect(expired.details[0]!.field).toBe('mfaToken');
  });
});

describe('recovery codes', () => {
  it('gives 10 codes; each works once for the second step; a new set replaces the old one', async () => {
    const u = await userWithPassword();
    await withTotp(u.id);
    const set = await rpc.regenerateRecoveryCodes({ environment: 'live', userId: u.id }, call());
    expect(set.codes).toHaveLength(10);
    expect(new Set(set.codes).size).toBe(10);
    for (const c of set.codes) expect(c).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    expect(set.factor).toMatchObject({ type: 'recovery_codes', confirmed: true, remainingCodes: 10 });
    // stored only as HMACs
    const hashes = await pool.query('SELECT code_hash FROM mfa_recovery_codes WHERE factor_id = $1', [set.factor!.id]);
    expect(hashes.rows).toHaveLength(10);
    expect(hashes.rows.map((r) => Buffer.from(r.code_hash).toString('latin1')).join('')).not.toContain(set.codes[0]!.replace('-', ''));
    const remaining = async () => (await listFactors(u.id)).find((f) => f.type === 'recovery_codes')?.remainingCodes;

    const ip = nextIp();
    const mfa = await challenged(u.email, ip);
    expect(mfa.factors.map((f) => f.type).sort()).toEqual(['recovery_codes', 'totp']);
    // typed in capitals, without the hyphen: the same code
    const opened = await complete(mfa.mfaToken, proof('recovery_code', set.codes[0]!.toUpperCase().replace('-', '')), ip);
    expect(opened.session!.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(opened.session!.acr).toBe(ACR_MFA);
    const logins = await events('user.login', u.id);
    expect(logins.map((l) => [l.metadata.mfaFactor, l.metadata.factorId])).toEqual([['recovery_code', set.factor!.id]]);
    expect(await remaining()).toBe(9);

    const again = await challenged(u.email, ip);
    const reused = await rejected(complete(again.mfaToken, proof('recovery_code', set.codes[0]!), ip));
    expect(reused.code).toBe('unauthorized');
    expect(reused.details[0]!.field).toBe('code');
    expect((await events('user.mfa.failed', u.id)).map((f) => f.metadata)).toEqual([expect.objectContaining({ factorType: 'recovery_code', reason: 'invalid_code' })]);
    expect(await remaining()).toBe(9);
    await complete(again.mfaToken, proof('recovery_code', set.codes[1]!), ip);
    expect(await remaining()).toBe(8);

    const renewed = await rpc.regenerateRecoveryCodes({ environment: 'live', userId: u.id }, call());
    expect(renewed.factor!.id).not.toBe(set.factor!.id);
    expect(renewed.factor!.remainingCodes).toBe(10);
    expect(renewed.codes.some((c) => set.codes.includes(c))).toBe(false);
    expect((await listFactors(u.id)).filter((f) => f.type === 'recovery_codes').map((f) => f.id)).toEqual([renewed.factor!.id]);
    const added = await events('user.mfa.factor_added', u.id);
    expect(added.filter((a) => a.metadata.factorType === 'recovery_codes').map((a) => [a.metadata.codes, a.metadata.replaced])).toEqual([
      [10, false],
      [10, true],
    ]);
    expect(JSON.stringify(added)).not.toContain(set.codes[2]!);

    const third = await challenged(u.email, ip);
    const old = await rejected(complete(third.mfaToken, proof('recovery_code', set.codes[2]!), ip));
    expect(old.code).toBe('unauthorized');
    expect((await complete(third.mfaToken, proof('recovery_code', renewed.codes[0]!), ip)).session!.amr).toContain('mfa');
    expect(await remaining()).toBe(9);
  });

  it('regenerated concurrently leaves one set, of one of them', async () => {
    const u = await userWithPassword();
    await rpc.regenerateRecoveryCodes({ environment: 'live', userId: u.id }, call());
    await Promise.all([1, 2, 3, 4].map(() => pool.query('SELECT pg_sleep(0.05)')));
    const all = await Promise.all([1, 2, 3].map(() => rpc.regenerateRecoveryCodes({ environment: 'live', userId: u.id }, call())));
    const sets = (await listFactors(u.id)).filter((f) => f.type === 'recovery_codes');
    expect(sets).toHaveLength(1);
    expect(all.map((b) => b.factor!.id)).toContain(sets[0]!.id);
    expect(sets[0]!.remainingCodes).toBe(10);
  });

  it('alone does not make logins ask for a second step', async () => {
    const u = await userWithPassword();
    await rpc.regenerateRecoveryCodes({ environment: 'live', userId: u.id }, call());
    expect((await login(u.email, nextIp())).session).toBeDefined();
  });
});

describe('passkeys', () => {
  it('registers passkeys, excluding the ones a user has, and refuses a credential registered twice', async () => {
    const u = await userWithPassword();
    const laptop = authenticator();
    const first = await registerPasskey(u.id, laptop);
    expect(first.options.rp).toEqual({ id: RP_ID, name: 'Security Service' });
    expect(first.options.user).toMatchObject({ id: Buffer.from(u.id).toString('base64url'), name: u.email });
    expect(first.options.authenticatorSelection).toMatchObject({ residentKey: 'required', userVerification: 'required' });
    expect(first.options.excludeCredentials).toEqual([]);
    expect(first.factor).toMatchObject({ type: 'passkey', name: 'Laptop', confirmed: true, backedUp: false, userId: u.id });
    const stored = await pool.query('SELECT credential_id, sign_count::int AS sign_count FROM mfa_factors WHERE id = $1', [first.factor.id]);
    expect(stored.rows).toEqual([{ credential_id: first.credential.id, sign_count: 0 }]);
    const added = await events('user.mfa.factor_added', u.id);
    expect(added.map((a) => [a.payload.target?.id, a.metadata.factorType, a.metadata.backedUp])).toEqual([[first.factor.id, 'passkey', false]]);

    const start = await rpc.startPasskeyRegistration({ environment: 'live', userId: u.id });
    const options = JSON.parse(start.optionsJson);
    expect(options.excludeCredentials.map((c: { id: string }) => c.id)).toEqual([first.credential.id]);
    // the authenticator that holds an excluded credential refuses to make another
    expect(() => laptop.create(options)).toThrow(/InvalidStateError/);
    // a client replaying the first credential's attestation (format none: nothing signed) under a new challenge
    const underChallenge = (challenge: string) => {
      const clientData = { type: 'webauthn.create', challenge, origin: ISSUER, crossOrigin: false };
      return { ...first.credential, response: { ...first.credential.response, clientDataJSON: Buffer.from(JSON.stringify(clientData)).toString('base64url') } };
    };
    const replayed = underChallenge(options.challenge);
    const twice = await rejected(
      rpc.finishPasskeyRegistration({ environment: 'live', userId: u.id, challengeId: start.challengeId, name: 'Again', credentialJson: JSON.stringify(replayed) }, call()),
    );
    expect(twice.code).toBe('conflict');
    expect(twice.httpStatus).toBe(409);

    // the same for another user of the environment and for a user of the other environment
    for (const environment of ['live', 'test'] as const) {
      const other = await userWithPassword(environment);
      const s = await rpc.startPasskeyRegistration({ environment, userId: other.id });
      const o = JSON.parse(s.optionsJson) as { challenge: string };
      const forged = underChallenge(o.challenge);
      const err = await rejected(
        rpc.finishPasskeyRegistration({ environment, userId: other.id, challengeId: s.challengeId, name: 'Stolen', credentialJson: JSON.stringify(forged) }, call()),
      );
      expect(err.code).toBe('conflict');
      expect(await listFactors(other.id, environment)).toEqual([]);
    }
    expect((await listFactors(u.id)).map((f) => f.id)).toEqual([first.factor.id]);

    const phone = await registerPasskey(u.id, authenticator(), 'live', 'Phone');
    expect((await listFactors(u.id)).map((f) => [f.type, f.name])).toEqual([
      ['passkey', 'Laptop'],
      ['passkey', 'Phone'],
    ]);
    expect(phone.factor.id).not.toBe(first.factor.id);
  });

  it('refuses a registration whose origin, challenge or user verification is wrong, naming credential and challengeId', async () => {
    const u = await userWithPassword();
    const cases = [{ origin: 'https://evil.example.net' }, { challenge: Buffer.from('not the challenge').toString('base64url') }, { userVerified: false }];
    for (const knobs of cases) {
      const start = await rpc.startPasskeyRegistration({ environment: 'live', userId: u.id });
      const credential = authenticator().create(JSON.parse(start.optionsJson), knobs);
      const err = await rejected(
        rpc.finishPasskeyRegistration({ environment: 'live', userId: u.id, challengeId: start.challengeId, name: '', credentialJson: JSON.stringify(credential) }, call()),
      );
      expect(err.code).toBe('invalid_request');
      expect(err.details[0]!.field).toBe('credential');
    }
    const unknown = await rejected(
      rpc.finishPasskeyRegistration({ environment: 'live', userId: u.id, challengeId: 'mfc_missing', name: '', credentialJson: '{}' }, call()),
    );
    expect(unknown.details[0]!.field).toBe('challengeId');
    expect(await listFactors(u.id)).toEqual([]);
  });

  it("answers a login's second step with a passkey, logs in without a password, and refuses a cloned authenticator", async () => {
    const u = await userWithPassword();
    const auth = authenticator();
    const { factor, credential } = await registerPasskey(u.id, auth);
    const ip = nextIp();

    // second step of a password login
    const mfa = await challenged(u.email, ip);
    expect(mfa.factors.map((f) => [f.id, f.type])).toEqual([[factor.id, 'passkey']]);
    const requestOptions = JSON.parse(mfa.passkeyOptionsJson);
    expect(requestOptions.rpId).toBe(RP_ID);
    expect(requestOptions.userVerification).toBe('required');
    expect(requestOptions.allowCredentials.map((c: { id: string }) => c.id)).toEqual([credential.id]);
    const assertion = auth.get(requestOptions);
    const opened = await complete(mfa.mfaToken, proof('passkey', '', JSON.stringify(assertion)), ip);
    expect(opened.session!.amr).toEqual(['pwd', 'hwk', 'user', 'mfa']);
    expect(opened.session!.acr).toBe(ACR_MFA);
    expect(opened.session!.mfaAt).toBeDefined();
    const counter = async () => (await pool.query('SELECT sign_count::int AS c FROM mfa_factors WHERE id = $1', [factor.id])).rows[0].c as number;
    expect(await counter()).toBe(1);
    let logins = await events('user.login', u.id);
    expect(logins.map((l) => l.metadata)).toEqual([expect.objectContaining({ authMethod: 'password', mfaUsed: true, mfaFactor: 'passkey', factorId: factor.id })]);

    // passwordless: any discoverable passkey of the environment
    const start = await rpc.startPasskeyAuthentication({ environment: 'live', userId: '' });
    const options = JSON.parse(start.optionsJson);
    expect(options.allowCredentials ?? []).toEqual([]);
    const signIn = auth.get(options);
    const passwordless = await rpc.completePasskeyLogin(
      { environment: 'live', challengeId: start.challengeId, credentialJson: JSON.stringify(signIn), ip, userAgent: 'jest', expiresInSeconds: 3600, oauthClientId: '' },
      call(),
    );
    expect(passwordless.token).toMatch(/^sst_/);
    const s = passwordless.session!;
    expect(s.userId).toBe(u.id);
    expect(s.amr).toEqual(['hwk', 'user', 'mfa']);
    expect(s.acr).toBe(ACR_MFA);
    expect(s.mfaAt).toBeDefined();
    expect(Date.parse(s.expiresAt!) - Date.parse(s.createdAt!)).toBe(3600_000);
    expect(await counter()).toBe(2);
    logins = await events('user.login', u.id);
    expect(logins[1]!.payload.target).toEqual({ id: s.id, type: 'session' });
    expect(logins[1]!.metadata).toMatchObject({ authMethod: 'passkey', mfaUsed: true, mfaFactor: 'passkey', amr: ['hwk', 'user', 'mfa'] });
    // the challenge was used
    const replay = await rejected(
      rpc.completePasskeyLogin(
        { environment: 'live', challengeId: start.challengeId, credentialJson: JSON.stringify(signIn), ip, userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' },
        call(),
      ),
    );
    expect(replay.code).toBe('invalid_request');
    expect(replay.details[0]!.field).toBe('challengeId');
    // the user handle is not signed: a replayed challenge counts against the ip only, never the user it names
    expect((await events('user.mfa.failed', u.id)).map((f) => f.metadata.reason)).toEqual([]);

    // a copy of the authenticator whose counter lags behind (1 after 2)
    const again = await rpc.startPasskeyAuthentication({ environment: 'live', userId: '' });
    const cloned = auth.get(JSON.parse(again.optionsJson), { counter: 1 });
    const refused = await rejected(
      rpc.completePasskeyLogin(
        { environment: 'live', challengeId: again.challengeId, credentialJson: JSON.stringify(cloned), ip, userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' },
        call(),
      ),
    );
    expect(refused.code).toBe('unauthorized');
    expect(refused.details[0]!.field).toBe('credential');
    const failed = (await events('user.mfa.failed', u.id))[0]!;
    expect(failed.payload.actor).toMatchObject({ id: u.id, type: 'user' });
    expect(failed.payload.target).toEqual({ id: u.id, type: 'user' });
    expect(failed.metadata).toMatchObject({ factorType: 'passkey', reason: 'cloned_authenticator' });
    expect(await counter()).toBe(2);
    expect(await events('user.login', u.id)).toHaveLength(2);

    // a tampered signature is refused for what it is
    const third = await rpc.startPasskeyAuthentication({ environment: 'live', userId: '' });
    const tampered = auth.get(JSON.parse(third.optionsJson), { tamperSignature: true });
    await rejected(
      rpc.completePasskeyLogin(
        { environment: 'live', challengeId: third.challengeId, credentialJson: JSON.stringify(tampered), ip, userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' },
        call(),
      ),
    );
    expect((await events('user.mfa.failed', u.id)).map((f) => f.metadata.reason)).toEqual(['cloned_authenticator', 'passkey_signature']);
  });

  it('counts failed passkey logins like passwords: a success clears them, 5 in a row throttle the account', async () => {
    const u = await userWithPassword();
    const auth = authenticator();
    await registerPasskey(u.id, auth);
    const ip = nextIp();
    const passwordless = async (knobs = {}) => {
      const start = await rpc.startPasskeyAuthentication({ environment: 'live', userId: '' });
      const credentialJson = JSON.stringify(auth.get(JSON.parse(start.optionsJson), knobs));
      const req = { environment: 'live', challengeId: start.challengeId, credentialJson, ip, userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' };
      return rpc.completePasskeyLogin(req, call());
    };
    for (let i = 0; i < 4; i++) expect((await rejected(passwordless({ tamperSignature: true }))).code).toBe('unauthorized');
    expect((await passwordless()).session!.amr).toEqual(['hwk', 'user', 'mfa']);
    // the success started the count afresh
    for (let i = 0; i < 4; i++) expect((await rejected(passwordless({ tamperSignature: true }))).code).toBe('unauthorized');
    expect((await passwordless()).session!.userId).toBe(u.id);
    for (let i = 0; i < 5; i++) expect((await rejected(passwordless({ tamperSignature: true }))).code).toBe('unauthorized');
    const limited = await rejected(passwordless());
    expect(limited.code).toBe('rate_limited');
    expect(limited.retryAfterSeconds).toBeGreaterThan(0);
    expect((await events('user.mfa.failed', u.id)).map((f) => f.metadata.reason)).toEqual(Array(13).fill('passkey_signature'));
  });

  it('refuses a passkey nobody registered, as an anonymous failure', async () => {
    const start = await rpc.startPasskeyAuthentication({ environment: 'live', userId: '' });
    const stranger = authenticator();
    stranger.create({
      rp: { id: RP_ID, name: 'x' },
      user: { id: Buffer.from('user_nobody').toString('base64url'), name: 'nobody', displayName: 'nobody' },
      challenge: 'AAAA',
      pubKeyCredParams: [{ type: 'public-key', alg: -7 }],
    });
    const assertion = stranger.get(JSON.parse(start.optionsJson));
    const err = await rejected(
      rpc.completePasskeyLogin(
        { environment: 'live', challengeId: start.challengeId, credentialJson: JSON.stringify(assertion), ip: nextIp(), userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' },
        call(),
      ),
    );
    expect(err.code).toBe('unauthorized');
    const { rows } = await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.mfa.failed' AND payload->'actor'->>'type' = 'anonymous'`);
    expect(rows.map((r) => JSON.parse(r.payload.metadataJson).reason)).toContain('unknown_credential');
  });
});

describe('step-up', () => {
  it("steps a password-only session up with a TOTP code of the session's user", async () => {
    const u = await userWithPassword();
    const ip = nextIp();
    const before = (await login(u.email, ip)).session!;
    expect(before.session!.amr).toEqual(['pwd']);
    const e = await withTotp(u.id);
    const asUser = call({ id: u.id, type: 'user' });

    const wrong = await rejected(rpc.stepUpSession({ environment: 'live', sessionId: before.session!.id, proof: proof('totp', wrongCode(e.secret)), challengeId: '', ip }, asUser));
    expect(wrong.code).toBe('unauthorized');
    expect((await sessionRow(before.session!.id)).mfa_at).toBeNull();
    expect((await events('user.mfa.failed', u.id)).map((f) => f.metadata.reason)).toEqual(['invalid_code']);

    // only the session's own user, never an API key
    const byKey = await rejected(rpc.stepUpSession({ environment: 'live', sessionId: before.session!.id, proof: proof('totp', totp(e.secret, 0)), challengeId: '', ip }, call()));
    expect(byKey.code).toBe('forbidden');

    const stepped = await rpc.stepUpSession({ environment: 'live', sessionId: before.session!.id, proof: proof('totp', totp(e.secret, 0)), challengeId: '', ip }, asUser);
    expect(stepped.id).toBe(before.session!.id);
    expect(stepped.amr).toEqual(['pwd', 'otp', 'mfa']);
    expect(stepped.acr).toBe(ACR_MFA);
    expect(stepped.mfaAt).toBeDefined();
    const row = await sessionRow(before.session!.id);
    expect(row.mfa_at).toBeInstanceOf(Date);
    expect(row.amr).toEqual(['pwd', 'otp', 'mfa']);
    // the session's token still works, now with its MFA
    const verified = await rpc.verifySession({ environment: 'live', token: before.token });
    expect(verified.valid).toBe(true);
    expect(verified.session!.acr).toBe(ACR_MFA);
    // a session of another user is not stepped up with this user's factor (and the code is not spent)
    const other = await userWithPassword();
    const theirs = (await login(other.email, nextIp())).session!;
    const foreign = await rejected(rpc.stepUpSession({ environment: 'live', sessionId: theirs.session!.id, proof: proof('totp', totp(e.secret, 1)), challengeId: '', ip }, asUser));
    expect(foreign.code).toBe('unauthorized');
    expect((await sessionRow(theirs.session!.id)).mfa_at).toBeNull();
    expect((await sessionRow(theirs.session!.id)).amr).toEqual(['pwd']);
    const again = await rpc.stepUpSession({ environment: 'live', sessionId: before.session!.id, proof: proof('totp', totp(e.secret, 1)), challengeId: '', ip }, asUser);
    expect(again.amr).toEqual(['pwd', 'otp', 'mfa']);

    const steps = (await events('user.mfa.step_up', u.id)).slice(0, 1);
    expect(steps).toHaveLength(1);
    expect(steps[0]!.payload.actor).toMatchObject({ id: u.id, type: 'user' });
    expect(steps[0]!.payload.target).toEqual({ id: before.session!.id, type: 'session' });
    expect(steps[0]!.metadata).toMatchObject({ mfaUsed: true, mfaFactor: 'totp', factorId: e.factor!.id, amr: ['pwd', 'otp', 'mfa'] });
  });

  it('steps up with a passkey on a challenge of the user', async () => {
    const u = await userWithPassword();
    const ip = nextIp();
    const before = (await login(u.email, ip)).session!;
    const auth = authenticator();
    await registerPasskey(u.id, auth);
    const start = await rpc.startPasskeyAuthentication({ environment: 'live', userId: u.id });
    const options = JSON.parse(start.optionsJson);
    expect(options.allowCredentials).toHaveLength(1);
    const stepped = await rpc.stepUpSession(
      { environment: 'live', sessionId: before.session!.id, proof: proof('passkey', '', JSON.stringify(auth.get(options))), challengeId: start.challengeId, ip },
      call({ id: u.id, type: 'user' }),
    );
    expect(stepped.amr).toEqual(['pwd', 'hwk', 'user', 'mfa']);
    expect(stepped.mfaAt).toBeDefined();
    // a user without a passkey has nothing to start
    const none = await userWithPassword();
    expect((await rejected(rpc.startPasskeyAuthentication({ environment: 'live', userId: none.id }))).code).toBe('conflict');
  });
});

describe('settings and removal', () => {
  afterEach(async () => {
    await rpc.updateMfaSettings({ environment: 'test', required: 'off', roles: [] }, call());
  });

  it("requires MFA of every user: a login without factors gets a challenge, and a user's last TOTP stays", async () => {
    expect(await rpc.getMfaSettings({ environment: 'test' })).toMatchObject({ environment: 'test', required: 'off', roles: [] });
    const settings = await rpc.updateMfaSettings({ environment: 'test', required: 'all', roles: [] }, call());
    expect(settings).toMatchObject({ environment: 'test', required: 'all', roles: [] });
    expect((await rpc.getMfaSettings({ environment: 'test' })).required).toBe('all');
    expect((await rpc.getMfaSettings({ environment: 'live' })).required).toBe('off');
    const { rows } = await pool.query(`SELECT payload FROM outbox WHERE event_type = 'mfa.settings.updated' AND environment = 'test' ORDER BY seq DESC LIMIT 1`);
    expect(JSON.parse(rows[0].payload.metadataJson)).toMatchObject({ required: 'all', roles: [] });

    const bare = await userWithPassword('test');
    const mfa = await challenged(bare.email, nextIp(), 'test');
    expect(mfa.factors).toEqual([]);
    expect(mfa.passkeyOptionsJson).toBe('');
    expect((await rpc.listMfaFactors({ environment: 'test', userId: bare.id })).mfaRequired).toBe(true);
    // the live environment is not concerned
    const liveUser = await userWithPassword('live');
    expect((await login(liveUser.email, nextIp())).session).toBeDefined();

    const u = await userWithPassword('test');
    const e = await withTotp(u.id, 'test');
    const codes = await rpc.regenerateRecoveryCodes({ environment: 'test', userId: u.id }, call());
    const last = await rejected(rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: e.factor!.id }, call()));
    expect(last.code).toBe('conflict');
    expect(last.details.map((d) => d.field)).toEqual(['factorId']);
    // recovery codes are no replacement, and can go
    await rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: codes.factor!.id }, call());
    // a pending TOTP is no replacement either
    const pending = await rpc.enrollTotp({ environment: 'test', userId: u.id, name: 'Pending' });
    expect((await rejected(rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: e.factor!.id }, call()))).code).toBe('conflict');
    await rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: pending.factor!.id }, call());

    const second = await withTotp(u.id, 'test', 'Backup phone');
    await rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: e.factor!.id }, call());
    expect((await listFactors(u.id, 'test')).map((f) => f.id)).toEqual([second.factor!.id]);
    const removed = await events('user.mfa.factor_removed', u.id);
    expect(removed.map((r) => [r.payload.target?.id, r.metadata.factorType])).toEqual([
      [codes.factor!.id, 'recovery_codes'],
      [pending.factor!.id, 'totp'],
      [e.factor!.id, 'totp'],
    ]);
    expect((await rejected(rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: second.factor!.id }, call()))).code).toBe('conflict');
    // once MFA is no longer required, the last factor can go
    await rpc.updateMfaSettings({ environment: 'test', required: 'off', roles: [] }, call());
    await rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: second.factor!.id }, call());
    expect(await listFactors(u.id, 'test')).toEqual([]);
    expect((await rejected(rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: second.factor!.id }, call()))).code).toBe('not_found');
  });

  it('removes at most all but one of the factors of a user who must use MFA, even at once', async () => {
    await rpc.updateMfaSettings({ environment: 'test', required: 'all', roles: [] }, call());
    const u = await userWithPassword('test');
    const a = await withTotp(u.id, 'test', 'A');
    const b = await withTotp(u.id, 'test', 'B');
    // connections at hand for both (a connection being opened would let the first delete finish before the second starts)
    await Promise.all([1, 2, 3, 4].map(() => pool.query('SELECT pg_sleep(0.05)')));
    const outcomes = await Promise.allSettled([a, b].map((e) => rpc.deleteMfaFactor({ environment: 'test', userId: u.id, factorId: e.factor!.id }, call())));
    expect(outcomes.map((o) => o.status).sort()).toEqual(['fulfilled', 'rejected']);
    const refused = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected')!.reason as AppError;
    expect(refused.code).toBe('conflict');
    expect((await listFactors(u.id, 'test')).filter((f) => f.type === 'totp')).toHaveLength(1);
  });

  it('requires MFA of the users holding one of the roles', async () => {
    const settings = await rpc.updateMfaSettings({ environment: 'test', required: 'roles', roles: ['role_admin', 'role_admin'] }, call());
    expect(settings.roles).toEqual(['role_admin']);
    const admin = await userWithPassword('test', ['role_admin']);
    const reader = await userWithPassword('test', ['role_reader']);
    expect((await rpc.listMfaFactors({ environment: 'test', userId: admin.id })).mfaRequired).toBe(true);
    expect((await rpc.listMfaFactors({ environment: 'test', userId: reader.id })).mfaRequired).toBe(false);
    expect((await login(admin.email, nextIp(), 'test')).mfa).toBeDefined();
    expect((await login(reader.email, nextIp(), 'test')).session).toBeDefined();
  });

  it('names each invalid setting', async () => {
    const fields = async (required: string, roles: string[]) => {
      const err = await rejected(rpc.updateMfaSettings({ environment: 'test', required, roles }, call()));
      expect(err.code).toBe('invalid_request');
      return err.details.map((d) => d.field);
    };
    expect(await fields('sometimes', [])).toEqual(['required']);
    expect(await fields('roles', ['role_admin', 'Admin!'])).toEqual(['roles[1]']);
    expect(await fields('roles', [])).toEqual(['roles']);
    expect(await fields('bogus', ['admin'])).toEqual(['required', 'roles[0]']);
    expect((await rpc.getMfaSettings({ environment: 'test' })).required).toBe('off');
  });

  it('renames a factor, naming an empty or over-long name; with MFA off the last factor can be removed', async () => {
    const u = await userWithPassword();
    const e = await withTotp(u.id);
    const renamed = await rpc.updateMfaFactor({ environment: 'live', userId: u.id, factorId: e.factor!.id, name: 'Old phone' }, call());
    expect(renamed).toMatchObject({ id: e.factor!.id, name: 'Old phone', confirmed: true });
    expect((await listFactors(u.id))[0]!.name).toBe('Old phone');
    const updated = await events('user.mfa.factor_updated', u.id);
    expect(updated.map((x) => x.metadata)).toEqual([expect.objectContaining({ userId: u.id, factorType: 'totp', name: 'Old phone' })]);
    expect((await rpc.updateMfaFactor({ environment: 'live', userId: u.id, factorId: e.factor!.id, name: 'é'.repeat(64) }, call())).name).toBe('é'.repeat(64));
    for (const name of ['', '   ', 'x'.repeat(65), 'tab\there']) {
      const err = await rejected(rpc.updateMfaFactor({ environment: 'live', userId: u.id, factorId: e.factor!.id, name }, call()));
      expect(err.code).toBe('invalid_request');
      expect(err.details.map((d) => d.field)).toEqual(['name']);
    }
    expect((await rejected(rpc.enrollTotp({ environment: 'live', userId: u.id, name: 'y'.repeat(65) }))).details[0]!.field).toBe('name');
    expect((await rejected(rpc.updateMfaFactor({ environment: 'live', userId: u.id, factorId: 'mfa_missing', name: 'X' }, call()))).code).toBe('not_found');

    await rpc.deleteMfaFactor({ environment: 'live', userId: u.id, factorId: e.factor!.id }, call());
    expect(await listFactors(u.id)).toEqual([]);
    expect((await login(u.email, nextIp())).session).toBeDefined();
  });
});

describe('environments', () => {
  it('keeps factors apart: a factor of live is not found from test', async () => {
    const u = await userWithPassword('live');
    const e = await withTotp(u.id, 'live');
    const auth = authenticator();
    await registerPasskey(u.id, auth, 'live');
    const other = await userWithPassword('test');
    const asTest = { environment: 'test', userId: u.id, factorId: e.factor!.id };

    expect((await rejected(rpc.listMfaFactors({ environment: 'test', userId: u.id }))).code).toBe('not_found');
    expect((await rejected(rpc.updateMfaFactor({ ...asTest, name: 'Mine now' }, call()))).code).toBe('not_found');
    expect((await rejected(rpc.deleteMfaFactor(asTest, call()))).code).toBe('not_found');
    expect((await rejected(rpc.confirmTotp({ ...asTest, code: totp(e.secret, 1), ip: nextIp() }, call()))).code).toBe('not_found');
    // not even through a user of test
    expect((await rejected(rpc.updateMfaFactor({ environment: 'test', userId: other.id, factorId: e.factor!.id, name: 'Mine now' }, call()))).code).toBe('not_found');
    expect((await rejected(rpc.deleteMfaFactor({ environment: 'test', userId: other.id, factorId: e.factor!.id }, call()))).code).toBe('not_found');
    expect((await rejected(rpc.confirmTotp({ environment: 'test', userId: other.id, factorId: e.factor!.id, code: totp(e.secret, 1), ip: nextIp() }, call()))).code).toBe(
      'not_found',
    );

    // the live passkey does not log in to test
    const start = await rpc.startPasskeyAuthentication({ environment: 'test', userId: '' });
    const err = await rejected(
      rpc.completePasskeyLogin(
        {
          environment: 'test',
          challengeId: start.challengeId,
          credentialJson: JSON.stringify(auth.get(JSON.parse(start.optionsJson))),
          ip: nextIp(),
          userAgent: 'jest',
          expiresInSeconds: 0,
          oauthClientId: '',
        },
        call(),
      ),
    );
    expect(err.code).toBe('unauthorized');
    // and a live challenge is unknown in test
    const liveStart = await rpc.startPasskeyAuthentication({ environment: 'live', userId: '' });
    const crossed = await rejected(
      rpc.completePasskeyLogin(
        {
          environment: 'test',
          challengeId: liveStart.challengeId,
          credentialJson: JSON.stringify(auth.get(JSON.parse(liveStart.optionsJson))),
          ip: nextIp(),
          userAgent: 'jest',
          expiresInSeconds: 0,
          oauthClientId: '',
        },
        call(),
      ),
    );
    expect(crossed.details[0]!.field).toBe('challengeId');

    // a live login's token is unknown in test
    const ip = nextIp();
    const mfa = await challenged(u.email, ip);
    expect((await rejected(complete(mfa.mfaToken, proof('totp', totp(e.secret, 0)), ip, 'test'))).details[0]!.field).toBe('mfaToken');
    expect((await complete(mfa.mfaToken, proof('totp', totp(e.secret, 0)), ip)).session!.environment).toBe('live');

    const live = await listFactors(u.id, 'live');
    expect(live.map((f) => [f.type, f.name])).toEqual([
      ['totp', 'Authenticator app'],
      ['passkey', 'Laptop'],
    ]);
    expect(await listFactors(other.id, 'test')).toEqual([]);
  });
});
