import { AppError } from '@secsvc/shared';
import type { MailJob } from '../mail/queue';
import { PASSWORD_RESET_MAIL, passwordResetComposer, PasswordsService, RESET_MAILS_PER_HOUR } from './passwords';
import { SessionsService } from './sessions';
import { FAKE_TRACE_ID, fakeAuthFailures, fakeCall, FakeDatabase, fakeHasher, FakePasswords, fakeSamlSubjects, FakeSessions, FakeUsers, keyCall } from './testing/fakes';

const SECRET = 'p'.repeat(40);
const GOOD = 'correct horse battery';

function setup() {
  const db = new FakeDatabase();
  const users = new FakeUsers();
  const passwords = new FakePasswords(users);
  const sessionRows = new FakeSessions();
  const sessions = new SessionsService({ db, sessions: sessionRows, users, samlSessions: fakeSamlSubjects(), outbox: db, serverSecret: SECRET, authEvents: fakeAuthFailures() });
  const hasher = fakeHasher();
  const queued: { kind: string; environment: string; request: Record<string, unknown> }[] = [];
  const woken: number[] = [];
  const revokedGrants: string[] = [];
  const service = new PasswordsService({
    db,
    passwords,
    users,
    sessions,
    sessionRows,
    grants: { revokeAllOfUser: async (_db, _env, userId) => (revokedGrants.push(userId), ['grt_1', 'grt_2']) },
    mailJobs: { enqueue: async (_db, job) => (queued.push(job), String(queued.length)) },
    mailWorker: { wake: () => void woken.push(1) },
    outbox: db,
    serverSecret: SECRET,
    hasher,
  });
  const composer = passwordResetComposer({ passwords, outbox: db, serverSecret: SECRET });
  return { db, users, passwords, sessionRows, hasher, queued, woken, revokedGrants, service, composer };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const attempt = (over: Partial<Parameters<PasswordsService['login']>[1]> = {}) => ({
  email: 'ada@example.com',
  password: GOOD,
  ip: '203.0.113.1',
  userAgent: 'jest',
  expiresInSeconds: 0,
  oauthClientId: '',
  ...over,
});

describe('PasswordsService: login', () => {
  it('opens a day-long session for the right password, clears the failures, and records user.login by the user', async () => {
    const { db, users, passwords, sessionRows, service } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' }, `v2$${GOOD}`);
    await passwords.recordFailure(db.pool, 'live', 'ada@example.com', '198.51.100.1');
    const { row, token } = (await service.login('live', attempt({ email: 'ADA@example.com' }), fakeCall({ 'x-client-ip': '10.0.0.1' }))).session!;
    expect(token).toMatch(/^sst_/);
    expect(row.expires_at.getTime() - row.created_at.getTime()).toBe(24 * 3600_000);
    expect(JSON.parse(sessionRows.rows.get(row.id)!.metadata)).toEqual({ ip: '203.0.113.1', userAgent: 'jest' });
    expect(passwords.failed).toEqual([]);
    expect(db.events).toEqual([
      expect.objectContaining({
        type: 'user.login',
        result: 'success',
        actor: { id: 'user_ada', email: 'ada@example.com', type: 'user' },
        // the client the gateway saw, not the caller of the RPC
        context: { ip: '203.0.113.1', userAgent: 'jest' },
        target: { id: row.id, type: 'session' },
        metadata: { authMethod: 'password', mfaUsed: false, amr: ['pwd'] },
      }),
    ]);
  });

  it('names the OAuth client on an OAuth login page', async () => {
    const { db, users, service } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' }, `v2$${GOOD}`);
    await service.login('live', attempt({ oauthClientId: 'cli_1' }), fakeCall());
    expect(db.events[0]!.metadata).toEqual({ authMethod: 'oauth', clientId: 'cli_1', mfaUsed: false, amr: ['pwd'] });
  });

  it('refuses a wrong password, an unknown email and an account without password alike, each verified once', async () => {
    const { db, users, passwords, hasher, service } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' }, `v2$${GOOD}`);
    users.add({ id: 'user_nopw', email: 'nopw@example.com' });
    for (const a of [attempt({ password: 'wrong password!' }), attempt({ email: 'nobody@example.com' }), attempt({ email: 'nopw@example.com' })]) {
      const err = await refusal(service.login('live', a, fakeCall()));
      expect(err).toMatchObject({ code: 'unauthorized', message: 'Invalid email or password' });
    }
    expect(hasher.verified).toEqual([`v2$${GOOD}`, 'v2$dummy-password-nobody-knows', 'v2$dummy-password-nobody-knows']);
    expect(passwords.failed.map((f) => f.email)).toEqual(['ada@example.com', 'nobody@example.com', 'nopw@example.com']);
    expect(db.events.map((e) => [e.result, e.actor])).toEqual([
      ['failure', { id: 'user_ada', email: 'ada@example.com', type: 'user' }],
      ['failure', { email: 'nobody@example.com', type: 'anonymous' }],
      ['failure', { id: 'user_nopw', email: 'nopw@example.com', type: 'user' }],
    ]);
    expect(db.events[0]!.metadata).toEqual({ authMethod: 'password', mfaUsed: false, reason: 'invalid_credentials' });
  });

  it('throttles after 5 failures for the account or 20 for the ip, before checking the password', async () => {
    const { db, users, passwords, hasher, service } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' }, `v2$${GOOD}`);
    for (let i = 0; i < 5; i++) await passwords.recordFailure(db.pool, 'live', 'ada@example.com', `198.51.100.${i}`);
    const err = await refusal(service.login('live', attempt(), fakeCall()));
    expect(err).toMatchObject({ code: 'rate_limited', retryAfterSeconds: 900 });
    passwords.failed.length = 0;
    for (let i = 0; i < 20; i++) await passwords.recordFailure(db.pool, 'live', `spray${i}@example.com`, '192.0.2.7');
    expect((await refusal(service.login('live', attempt({ ip: '192.0.2.7' }), fakeCall()))).code).toBe('rate_limited');
    expect((await service.login('live', attempt({ ip: '192.0.2.8' }), fakeCall())).session!.token).toMatch(/^sst_/);
    expect(hasher.verified).toHaveLength(1);
  });

  it('refuses session lifetimes outside 1m..30d', async () => {
    const { service } = setup();
    for (const expiresInSeconds of [30, 31 * 86_400]) expect((await refusal(service.login('live', attempt({ expiresInSeconds }), fakeCall()))).details[0]!.field).toBe('expiresIn');
  });
});

describe('PasswordsService: hashes below the current parameters', () => {
  it('are replaced at a successful login, in its transaction; a second login does not rehash', async () => {
    const { db, users, hasher, service } = setup();
    const ada = users.add({ id: 'user_ada', email: 'ada@example.com' }, `v1$${GOOD}`);
    const updatedAt = ada.updated_at;
    await service.login('live', attempt(), fakeCall());
    expect(users.rows.get('user_ada')!.password_hash).toBe(`v2$${GOOD}`);
    expect(users.rows.get('user_ada')!.updated_at).toBe(updatedAt);
    expect(hasher.hashed).toBe(1);
    expect(db.transactions).toBe(1);
    await service.login('live', attempt(), fakeCall());
    expect(hasher.hashed).toBe(1);
  });

  it('stay after a failed login', async () => {
    const { users, hasher, service } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' }, `v1$${GOOD}`);
    await refusal(service.login('live', attempt({ password: 'wrong password!' }), fakeCall()));
    expect(users.rows.get('user_ada')!.password_hash).toBe(`v1$${GOOD}`);
    expect(hasher.hashed).toBe(0);
  });

  it('are not written over a password set since the login read the hash', async () => {
    const { db, users, passwords, service } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' }, `v1$${GOOD}`);
    const rehash = passwords.rehash.bind(passwords);
    passwords.rehash = async (tx, environment, userId, previous, hash) => {
      await passwords.setHash(db.pool, environment, userId, 'v2$set meanwhile');
      return rehash(tx, environment, userId, previous, hash);
    };
    await service.login('live', attempt(), fakeCall());
    expect(users.rows.get('user_ada')!.password_hash).toBe('v2$set meanwhile');
  });
});

describe('PasswordsService: setting and resetting passwords', () => {
  it('sets a password under the rules, with user.password_changed by the caller', async () => {
    const { db, users, service } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' });
    expect((await refusal(service.set('live', 'user_ada', 'short', keyCall()))).details[0]!.field).toBe('password');
    expect((await refusal(service.set('live', 'user_nobody', GOOD, keyCall()))).code).toBe('not_found');
    await service.set('live', 'user_ada', GOOD, keyCall('key_admin'));
    expect(users.rows.get('user_ada')!.password_hash).toBe(`v2$${GOOD}`);
    expect(db.events).toEqual([
      expect.objectContaining({ type: 'user.password_changed', actor: expect.objectContaining({ id: 'key_admin' }), target: { id: 'user_ada', type: 'user' }, result: 'success' }),
    ]);
  });

  it('queues a reset request (the same for any email) and wakes the mail worker', async () => {
    const { db, queued, woken, service } = setup();
    await service.requestReset('live', 'ghost@example.com', keyCall('key_pub'));
    expect(queued).toEqual([
      { kind: PASSWORD_RESET_MAIL, environment: 'live', request: { email: 'ghost@example.com', caller: expect.objectContaining({ actor: expect.objectContaining({ id: 'key_pub' }) }), traceId: FAKE_TRACE_ID } },
    ]);
    expect(woken).toHaveLength(1);
    expect(db.events).toEqual([]);
  });

  it('composes a token only for an existing account; user.password_reset.requested names who asked', async () => {
    const { db, users, passwords, queued, service, composer } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' });
    await service.requestReset('live', 'ada@example.com', keyCall('key_pub'));
    await service.requestReset('live', 'ghost@example.com', keyCall('key_pub'));
    const jobs: MailJob[] = queued.map((q, i) => ({ id: String(i), ...q }));
    const message = await db.transaction((tx) => composer(tx, jobs[0]!));
    expect(message).toMatchObject({ to: 'ada@example.com', data: { kind: PASSWORD_RESET_MAIL, token: expect.stringMatching(/^prt_/) } });
    expect(await db.transaction((tx) => composer(tx, jobs[1]!))).toBeUndefined();
    expect(passwords.resetTokens.size).toBe(1);
    expect(db.events.map((e) => [e.type, e.result, e.actor, e.target, e.metadata, e.traceId])).toEqual([
      ['user.password_reset.requested', 'success', { id: 'user_ada', email: 'ada@example.com', type: 'user' }, { id: 'user_ada', type: 'user' }, {}, FAKE_TRACE_ID],
      ['user.password_reset.requested', 'failure', { email: 'ghost@example.com', type: 'anonymous' }, undefined, { reason: 'unknown_email' }, FAKE_TRACE_ID],
    ]);
    expect(JSON.stringify(db.events)).not.toContain(message!.data.token!.slice(4, 30));
  });

  it(`sends one account at most ${RESET_MAILS_PER_HOUR} tokens an hour: past that no token, no mail, a throttled failure event`, async () => {
    const { db, users, passwords, queued, service, composer } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' });
    for (let i = 0; i <= RESET_MAILS_PER_HOUR; i++) await service.requestReset('live', 'ada@example.com', keyCall('key_pub'));
    const messages = [];
    for (const [i, q] of queued.entries()) messages.push(await db.transaction((tx) => composer(tx, { id: String(i), ...q })));
    expect(messages.filter(Boolean)).toHaveLength(RESET_MAILS_PER_HOUR);
    expect(messages.at(-1)).toBeUndefined();
    expect(passwords.resetTokens.size).toBe(RESET_MAILS_PER_HOUR);
    expect(db.events.at(-1)).toMatchObject({ type: 'user.password_reset.requested', result: 'failure', actor: { id: 'user_ada' }, metadata: { reason: 'throttled', limitPerHour: RESET_MAILS_PER_HOUR } });
    // An hour on, the account gets mail again.
    for (const t of passwords.resetTokens.values()) t.created_at = new Date(Date.now() - 3_601_000);
    await service.requestReset('live', 'ada@example.com', keyCall('key_pub'));
    expect(await db.transaction((tx) => composer(tx, { id: 'later', ...queued.at(-1)! }))).toMatchObject({ to: 'ada@example.com' });
  });

  it('confirms a reset once: new password, every session and grant ended; then the token is refused', async () => {
    const { db, users, sessionRows, revokedGrants, service, composer, queued } = setup();
    users.add({ id: 'user_ada', email: 'ada@example.com' }, `v2$${GOOD}`);
    const session = (await service.login('live', attempt(), fakeCall())).session!;
    await service.requestReset('live', 'ada@example.com', keyCall());
    const { token } = (await db.transaction((tx) => composer(tx, { id: '1', ...queued[0]! })))!.data;
    expect((await refusal(service.confirmReset('live', token!, 'short', keyCall()))).details[0]!.field).toBe('password');
    await service.confirmReset('live', token!, 'a brand new passphrase', keyCall());
    expect(users.rows.get('user_ada')!.password_hash).toBe('v2$a brand new passphrase');
    expect(sessionRows.rows.get(session.row.id)!.revoked_at).not.toBeNull();
    expect(revokedGrants).toEqual(['user_ada']);
    expect(db.eventsOf('user.password_reset.completed')).toEqual([
      expect.objectContaining({ actor: { id: 'user_ada', email: 'ada@example.com', type: 'user' }, metadata: { sessionsRevoked: 1, oauthGrantsRevoked: 2 } }),
    ]);
    const reuse = await refusal(service.confirmReset('live', token!, 'another new passphrase', keyCall()));
    expect(reuse.details).toEqual([{ field: 'token', message: 'invalid, used or expired token' }]);
    expect((await refusal(service.confirmReset('live', 'garbage', 'another new passphrase', keyCall()))).details[0]!.field).toBe('token');
    expect(db.eventsOf('user.password_reset.failed').map((e) => [e.actor, e.metadata])).toEqual([
      [{ id: 'user_ada', email: 'ada@example.com', type: 'user' }, { reason: 'used_token' }],
      [{ type: 'anonymous' }, { reason: 'unknown_token' }],
    ]);
  });
});
