import crypto from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import { AppError, toAppError, type CallContext, type Pool } from '@secsvc/shared';
import type { IdentityContext } from '../src/context';
import { hashPassword, needsRehash, SCRYPT, verifyPassword } from '../src/domain/passwords';
import type { MailQueue } from '../src/mail/queue';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { capturingTransport, mailJobs, testQueue, until } from './support/mail';
import { identityRpc } from './support/rpc';
import type { IdentityRpc } from '../src/rpc';

let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;
let rpc: IdentityRpc;
const { transport, sent: mails } = capturingTransport();
let mail: MailQueue;
const GOOD = 'correct horse battery';

const call = (): CallContext => ({ requestId: 'req_passwordtests000000', metadata: new Metadata() });

async function rejected(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

let n = 0;
async function userWithPassword(password = GOOD) {
  const u = await rpc.createUser({ environment: 'live', email: `pw${n++}@example.com`, name: 'P', roles: [], metadataJson: '' }, call());
  await rpc.setPassword({ environment: 'live', userId: u.id, password }, call());
  return u;
}
const logIn = (email: string, password: string, ip = '203.0.113.1') =>
  rpc.login({ environment: 'live', email, password, ip, userAgent: 'jest', expiresInSeconds: 0, oauthClientId: '' }, call()).then((r) => r.session!);

async function resetMailFor(email: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const m = mails.find((x) => x.to === email);
    if (m) return m.data.token!;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no reset mail for ${email}`);
}

beforeAll(async () => {
  t = await identityTestDb({ SERVER_SECRET: 'p'.repeat(40) });
  ({ pool } = t);
  // The real mail queue over the test database, delivering to a transport that keeps the messages.
  mail = testQueue(pool, transport, { serverSecret: 'p'.repeat(40) }).queue.start();
  ctx = { ...t.ctx, mail };
  rpc = identityRpc(ctx);
});

afterAll(async () => {
  await mail.close(1000);
  await closeIdentityTestDb(t);
});

describe('password hashing', () => {
  it('stores scrypt with its parameters and a salt, and verifies', async () => {
    const hash = await hashPassword(GOOD);
    expect(hash).toMatch(/^scrypt\$16384\$8\$5\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(await hashPassword(GOOD)).not.toBe(hash);
    expect(await verifyPassword(GOOD, hash)).toBe(true);
    expect(await verifyPassword(GOOD + '!', hash)).toBe(false);
    expect(await verifyPassword(GOOD, 'bcrypt$whatever')).toBe(false);
  });
});

describe('hashes made with older parameters', () => {
  /** The parameters of hashes stored before OWASP's minimum was adopted (N = 2^15, r = 8, p = 1). */
  const OLD = { N: 32_768, r: 8, p: 1 };
  const storedHash = async (userId: string) => (await pool.query('SELECT password_hash FROM users WHERE id = $1', [userId])).rows[0].password_hash as string;

  async function userWithOldHash() {
    const u = await userWithPassword();
    await pool.query('UPDATE users SET password_hash = $2 WHERE id = $1', [u.id, await hashPassword(GOOD, OLD)]);
    return u;
  }

  it('still verify, and the next successful login replaces them with a hash under the current parameters', async () => {
    const u = await userWithOldHash();
    const old = await storedHash(u.id);
    expect(old).toMatch(/^scrypt\$32768\$8\$1\$/);
    expect(needsRehash(old)).toBe(true);
    const before = await pool.query('SELECT updated_at FROM users WHERE id = $1', [u.id]);
    expect((await logIn(u.email, GOOD)).token).toMatch(/^sst_/);
    const upgraded = await storedHash(u.id);
    expect(upgraded).toMatch(new RegExp(`^scrypt\\$${SCRYPT.N}\\$${SCRYPT.r}\\$${SCRYPT.p}\\$`));
    expect(needsRehash(upgraded)).toBe(false);
    expect(await verifyPassword(GOOD, upgraded)).toBe(true);
    // a rehash is no change of the user
    expect((await pool.query('SELECT updated_at FROM users WHERE id = $1', [u.id])).rows[0].updated_at).toEqual(before.rows[0].updated_at);
    // a second login does not rehash
    await logIn(u.email, GOOD);
    expect(await storedHash(u.id)).toBe(upgraded);
  });

  it('are not replaced by a failed login', async () => {
    const u = await userWithOldHash();
    const old = await storedHash(u.id);
    expect((await rejected(logIn(u.email, 'wrong password!'))).code).toBe('unauthorized');
    expect(await storedHash(u.id)).toBe(old);
  });

  it('are compared in constant time like every hash (crypto.timingSafeEqual)', async () => {
    const spy = jest.spyOn(crypto, 'timingSafeEqual');
    try {
      const old = await hashPassword(GOOD, OLD);
      expect(await verifyPassword(GOOD, old)).toBe(true);
      expect(await verifyPassword(GOOD + '!', old)).toBe(false);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('setting a password', () => {
  it.each([
    ['short', 'must be at least 12 characters'],
    ['password1234', 'is too common'],
    ['Password1234', 'is too common'],
    ['x'.repeat(257), 'must be at most 256 characters'],
  ])('refuses %p', async (password, message) => {
    const u = await rpc.createUser({ environment: 'live', email: `rule${n++}@example.com`, name: 'R', roles: [], metadataJson: '' }, call());
    const err = await rejected(rpc.setPassword({ environment: 'live', userId: u.id, password }, call()));
    expect(err.details).toEqual([{ field: 'password', message }]);
  });

  it("refuses the user's own email", async () => {
    const u = await rpc.createUser({ environment: 'live', email: 'own.address@example.com', name: 'R', roles: [], metadataJson: '' }, call());
    for (const password of ['own.address@example.com', 'OWN.ADDRESS@example.com']) {
      expect((await rejected(rpc.setPassword({ environment: 'live', userId: u.id, password }, call()))).details[0]!.message).toBe(
        'must not be your email address',
      );
    }
  });

  it('stores only the hash and records user.password_changed', async () => {
    const u = await userWithPassword();
    const { rows } = await pool.query('SELECT password_hash FROM users WHERE id = $1', [u.id]);
    expect(rows[0].password_hash).toMatch(/^scrypt\$/);
    expect(rows[0].password_hash).not.toContain(GOOD);
    const events = await pool.query(`SELECT event_type FROM outbox WHERE payload->'target'->>'id' = $1 ORDER BY seq`, [u.id]);
    expect(events.rows.map((r) => r.event_type)).toEqual(['user.created', 'user.password_changed']);
  });
});

describe('login', () => {
  it('opens a session for the right password and records user.login', async () => {
    const u = await userWithPassword();
    const { session, token } = await logIn(u.email.toUpperCase(), GOOD);
    expect(session!.userId).toBe(u.id);
    expect((await rpc.verifySession({ environment: 'live', token })).valid).toBe(true);
    const { rows } = await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.login' AND payload->'target'->>'id' = $1`, [session!.id]);
    expect(rows[0].payload).toMatchObject({ result: 'success', actor: { id: u.id, type: 'user' }, context: { ip: '203.0.113.1', userAgent: 'jest' } });
    expect(JSON.parse(rows[0].payload.metadataJson)).toEqual({ authMethod: 'password', mfaUsed: false, amr: ['pwd'] });
  });

  it('answers the same for a wrong password, an unknown email and a user without password', async () => {
    const u = await userWithPassword();
    const noPassword = await rpc.createUser({ environment: 'live', email: `nopw${n++}@example.com`, name: 'N', roles: [], metadataJson: '' }, call());
    const errors = [await rejected(logIn(u.email, 'wrong password!')), await rejected(logIn('nobody@example.com', GOOD)), await rejected(logIn(noPassword.email, GOOD))];
    for (const e of errors) {
      expect(e.code).toBe('unauthorized');
      expect(e.message).toBe('Invalid email or password');
    }
    const { rows } = await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.login' AND payload->>'result' = 'failure' AND payload->'actor'->>'email' = 'nobody@example.com'`);
    expect(rows[0].payload.actor).toEqual({ email: 'nobody@example.com', type: 'anonymous' });
  });

  it('throttles an account after 5 failures in 15 minutes, with a retry-after', async () => {
    const u = await userWithPassword();
    for (let i = 0; i < 5; i++) expect((await rejected(logIn(u.email, 'wrong password!', `198.51.100.${i}`))).code).toBe('unauthorized');
    const limited = await rejected(logIn(u.email, GOOD, '198.51.100.99'));
    expect(limited.code).toBe('rate_limited');
    expect(limited.retryAfterSeconds).toBeGreaterThan(0);
    expect(limited.retryAfterSeconds).toBeLessThanOrEqual(900);
    await pool.query(`UPDATE login_failures SET failed_at = failed_at - interval '16 minutes' WHERE lower(email) = lower($1)`, [u.email]);
    expect((await logIn(u.email, GOOD)).token).toMatch(/^sst_/);
  });

  it('throttles an ip after 20 failures in 15 minutes', async () => {
    const ip = '192.0.2.77';
    for (let i = 0; i < 20; i++) await rejected(logIn(`spray${i}@example.com`, 'wrong password!', ip));
    const u = await userWithPassword();
    expect((await rejected(logIn(u.email, GOOD, ip))).code).toBe('rate_limited');
    expect((await logIn(u.email, GOOD, '192.0.2.78')).token).toMatch(/^sst_/);
  });
});

describe('password reset', () => {
  it('mails a single-use token that sets the password and ends every session', async () => {
    const u = await userWithPassword();
    const before = await rpc.createSession({ environment: 'live', userId: u.id, expiresInSeconds: 3600, metadataJson: '' }, call());
    expect(await rpc.requestPasswordReset({ environment: 'live', email: u.email }, call())).toEqual({});
    const token = await resetMailFor(u.email);
    expect(token).toMatch(/^prt_/);
    await rpc.confirmPasswordReset({ environment: 'live', token, password: 'a brand new passphrase' }, call());
    expect((await rpc.verifySession({ environment: 'live', token: before.token })).valid).toBe(false);
    expect((await logIn(u.email, 'a brand new passphrase')).token).toMatch(/^sst_/);
    expect((await rejected(logIn(u.email, GOOD))).code).toBe('unauthorized');
    const reuse = await rejected(rpc.confirmPasswordReset({ environment: 'live', token, password: 'another new passphrase' }, call()));
    expect(reuse.details).toEqual([{ field: 'token', message: 'invalid, used or expired token' }]);
    const { rows } = await pool.query(`SELECT event_type, payload::text AS p FROM outbox WHERE event_type LIKE 'user.password_reset.%' AND payload->'target'->>'id' = $1 ORDER BY seq`, [u.id]);
    expect(rows.map((r) => r.event_type)).toEqual(['user.password_reset.requested', 'user.password_reset.completed', 'user.password_reset.failed']);
    expect(rows.map((r) => r.p).join('')).not.toContain(token.slice(4, 30));
  });

  it('says nothing about unknown emails and mails nothing', async () => {
    const before = mails.length;
    expect(await rpc.requestPasswordReset({ environment: 'live', email: 'ghost@example.com' }, call())).toEqual({});
    await until(async () => (await pool.query(`SELECT 1 FROM outbox WHERE event_type = 'user.password_reset.requested' AND payload->'actor'->>'email' = 'ghost@example.com'`)).rowCount === 1);
    await until(async () => (await mailJobs(pool)).length === 0);
    expect(mails.length).toBe(before);
  });

  it('mails one account at most 5 tokens an hour: the 6th request answers the same, mails nothing and is logged as throttled', async () => {
    const u = await userWithPassword();
    for (let i = 0; i < 6; i++) expect(await rpc.requestPasswordReset({ environment: 'live', email: u.email }, call())).toEqual({});
    const events = async () =>
      (await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.password_reset.requested' AND payload->'target'->>'id' = $1`, [u.id])).rows.map(
        (r) => [r.payload.result, JSON.parse(r.payload.metadataJson).reason ?? null],
      );
    await until(async () => (await events()).length === 6 && (await mailJobs(pool)).length === 0);
    expect((await events()).filter(([result]) => result === 'failure')).toEqual([['failure', 'throttled']]);
    expect(mails.filter((m) => m.to === u.email)).toHaveLength(5);
    expect((await pool.query('SELECT 1 FROM password_reset_tokens WHERE user_id = $1', [u.id])).rowCount).toBe(5);
  });

  it('answers only once the request is stored: with PostgreSQL down the call fails as unavailable', async () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const down = { ...ctx, pool: { query: () => Promise.reject(refused) } as unknown as Pool };
    const err = await identityRpc(down).requestPasswordReset({ environment: 'live', email: 'someone@example.com' }, call()).then(() => undefined, (e: unknown) => e);
    expect(err).toBe(refused);
    expect(toAppError(err).code).toBe('unavailable');
    expect(await mailJobs(pool)).toEqual([]);
  });

  it('refuses expired, garbage and unknown tokens, naming no one', async () => {
    const u = await userWithPassword();
    await rpc.requestPasswordReset({ environment: 'live', email: u.email }, call());
    const token = await resetMailFor(u.email);
    await pool.query(`UPDATE password_reset_tokens SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [u.id]);
    for (const t of [token, 'garbage', 'prt_' + 'A'.repeat(49)]) {
      expect((await rejected(rpc.confirmPasswordReset({ environment: 'live', token: t, password: 'a brand new passphrase' }, call()))).details[0]!.field).toBe('token');
    }
    const anon = await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.password_reset.failed' AND payload->'actor'->>'type' = 'anonymous'`);
    expect(anon.rows.length).toBeGreaterThanOrEqual(2);
  });

  it('checks the new password against the rules', async () => {
    const u = await userWithPassword();
    await rpc.requestPasswordReset({ environment: 'live', email: u.email }, call());
    const token = await resetMailFor(u.email);
    expect((await rejected(rpc.confirmPasswordReset({ environment: 'live', token, password: 'short' }, call()))).details[0]!.field).toBe('password');
    // the token was not used up by the refused attempt
    await rpc.confirmPasswordReset({ environment: 'live', token, password: 'a long enough passphrase' }, call());
  });
});
