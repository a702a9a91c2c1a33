/**
 * The durable mail queue (identity.mail_jobs) over real PostgreSQL: claiming, composing once, leases, retries
 * with backoff, what is given up and counted, several workers on one table, a worker that dies, PostgreSQL
 * going away, and close().
 */
import { Metadata } from '@grpc/grpc-js';
import type { CallContext, Pool } from '@secsvc/shared';
import type { IdentityContext } from '../src/context';
import type { MailMessage, Mailer } from '../src/domain/mailer';
import { seal } from '../src/domain/sealing';
import { describeMailError, mailLeaseMs, mailQueueKey, type MailComposer, type MailQueue } from '../src/mail/queue';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { capturingTransport, enqueueTest, mailJobs, sleep, testComposer, testQueue, TEST_TOKEN, until } from './support/mail';
import { identityRpc } from './support/rpc';
import type { IdentityRpc } from '../src/rpc';

const SECRET = 'q'.repeat(40);
let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;
let rpc: IdentityRpc;
const queues: MailQueue[] = [];
let n = 0;

/** The W3C trace id of the calls (their traceparent): the trace id of their events. */
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const call = (): CallContext => {
  const metadata = new Metadata();
  metadata.set('x-client-ip', '198.51.100.7');
  metadata.set('x-user-agent', 'mail-queue-test');
  metadata.set('traceparent', `00-${TRACE_ID}-00f067aa0ba902b7-01`);
  return { requestId: 'req_mailqueuetests00000', metadata };
};

/** A queue over the test database, closed after the test. */
function setup(transport: Mailer, options: Parameters<typeof testQueue>[2] = {}) {
  const q = testQueue(pool, transport, { serverSecret: SECRET, ...options });
  queues.push(q.queue);
  return q;
}

/** A transport whose sends settle when the test says: each call waits for resolve/reject of its own. */
function manualTransport(extra: Partial<Mailer> = {}) {
  const calls: { message: MailMessage; resolve: () => void; reject: (err: unknown) => void }[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const transport: Mailer = {
    kind: 'fake',
    send: (m) =>
      new Promise<void>((resolve, reject) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        const done = () => inFlight--;
        calls.push({ message: m, resolve: () => (done(), resolve()), reject: (err) => (done(), reject(err)) });
      }),
    ...extra,
  };
  return { transport, calls, maxInFlight: () => maxInFlight };
}

/** A transport that fails (or succeeds) by a script of outcomes, one per call. */
function scriptedTransport(outcomes: ('ok' | 'transient' | 'permanent')[], extra: Partial<Mailer> = {}) {
  const sent: MailMessage[] = [];
  const tried: MailMessage[] = [];
  const transport: Mailer = {
    kind: 'fake',
    async send(m) {
      tried.push(m);
      const outcome = outcomes.shift() ?? 'ok';
      if (outcome === 'ok') return void sent.push(m);
      throw Object.assign(new Error(`server said no to ${m.to} (${m.data.token})`), { code: outcome === 'transient' ? 'ECONNECTION' : 'EENVELOPE' });
    },
    isTransient: (err) => (err as { code?: string }).code === 'ECONNECTION',
    ...extra,
  };
  return { transport, sent, tried };
}

async function user() {
  return rpc.createUser({ environment: 'live', email: `queue${n++}@example.com`, name: 'Q', roles: [], metadataJson: '' }, call());
}

const resetEvents = async (email: string) =>
  (await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.password_reset.requested' AND payload->'actor'->>'email' = $1`, [email])).rows.map(
    (r) => r.payload as { result: string; actor: Record<string, unknown>; target?: { id: string }; context: Record<string, string>; traceId: string; metadataJson: string },
  );

beforeAll(async () => {
  t = await identityTestDb({ SERVER_SECRET: SECRET });
  ({ pool, ctx } = t);
  rpc = identityRpc(ctx);
});

afterEach(async () => {
  for (const q of queues.splice(0)) await q.close(100);
  await pool.query('DELETE FROM mail_jobs');
});

afterAll(() => closeIdentityTestDb(t));

describe('MailQueue', () => {
  it('exports its counters at 0 from the start, for every reason, and the gauges', async () => {
    const { metrics } = setup(manualTransport().transport);
    const series = async (name: string) => (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name)?.values.map((v) => [v.labels.reason ?? '-', v.value]);
    expect(await series('identity_mail_sent_total')).toEqual([['-', 0]]);
    expect(((await series('identity_mail_failed_total')) ?? []).sort()).toEqual([
      ['gave_up', 0],
      ['rejected', 0],
      ['unreadable', 0],
    ]);
    const names = (await metrics.registry.getMetricsAsJSON()).map((m) => m.name);
    expect(names).toEqual(expect.arrayContaining(['identity_mail_queue_depth', 'identity_mail_queue_oldest_seconds']));
  });

  it('reads the gauges from the table when scraped', async () => {
    const { count } = setup(manualTransport().transport);
    await enqueueTest(pool, 'old@example.com');
    await enqueueTest(pool, 'new@example.com');
    await pool.query(`UPDATE mail_jobs SET next_attempt_at = now() + interval '1 hour'`);
    await pool.query(`UPDATE mail_jobs SET created_at = now() - interval '90 seconds' WHERE request->>'to' = 'old@example.com'`);
    expect(await count('identity_mail_queue_depth')).toBe(2);
    expect(await count('identity_mail_queue_oldest_seconds')).toBeGreaterThanOrEqual(90);
    expect(await count('identity_mail_queue_oldest_seconds')).toBeLessThan(100);
    await pool.query('DELETE FROM mail_jobs');
    expect([await count('identity_mail_queue_depth'), await count('identity_mail_queue_oldest_seconds')]).toEqual([0, 0]);
  });

  it('delivers and deletes each job, at most `concurrency` at once, oldest first', async () => {
    const fake = manualTransport();
    const { queue, count } = setup(fake.transport, { concurrency: 2 });
    for (let i = 0; i < 5; i++) await enqueueTest(pool, `m${i}@example.com`);
    queue.start();
    await until(() => fake.calls.length === 2);
    await sleep(50);
    expect(fake.calls.map((c) => c.message.to)).toEqual(['m0@example.com', 'm1@example.com']);
    for (let i = 0; i < 5; i++) {
      await until(() => fake.calls.length > i);
      fake.calls[i]!.resolve();
    }
    await until(async () => (await mailJobs(pool)).length === 0);
    expect(fake.calls.map((c) => c.message.to)).toEqual(['m0@example.com', 'm1@example.com', 'm2@example.com', 'm3@example.com', 'm4@example.com']);
    expect(fake.maxInFlight()).toBe(2);
    await until(async () => (await count('identity_mail_sent_total', { transport: 'fake' })) === 5);
  });

  it('claims at once on wake(), else at the next poll', async () => {
    const fake = capturingTransport();
    const { queue } = setup(fake.transport, { pollMs: 3_600_000 });
    queue.start();
    await queue.idle();
    await enqueueTest(pool, 'woken@example.com');
    await sleep(100);
    expect(fake.sent).toHaveLength(0);
    queue.wake();
    await until(() => fake.sent.length === 1);
  });

  it('retries transient failures with doubling delays (capped), keeping a redacted last_error, then delivers', async () => {
    const fake = scriptedTransport(['transient', 'transient', 'transient', 'ok']);
    const { queue, lines, count } = setup(fake.transport, { baseDelayMs: 400, maxDelayMs: 1200, maxAttempts: 5 });
    await enqueueTest(pool, 'a@example.com');
    queue.start();
    await until(() => fake.tried.length === 1);
    await until(async () => (await mailJobs(pool))[0]?.last_error !== null);
    const [waiting] = await mailJobs(pool);
    expect(waiting).toMatchObject({ attempts: 1, last_error: 'server said no to a@example.com ([redacted])' });
    expect(waiting!.due_in_ms).toBeGreaterThan(0);
    expect(waiting!.due_in_ms).toBeLessThanOrEqual(200);
    await until(() => fake.sent.length === 1);
    await until(async () => (await mailJobs(pool)).length === 0);
    // random() = 0: half of min(1200, 400 * 2^(n-1)).
    expect(lines.filter((l) => l.msg === 'mail send failed; retrying').map((l) => [l.attempt, l.retryInMs])).toEqual([
      [1, 200],
      [2, 400],
      [3, 600],
    ]);
    expect(await count('identity_mail_sent_total', { transport: 'fake' })).toBe(1);
  });

  it('gives up after maxAttempts with one warning naming no token, counts it and deletes the job', async () => {
    const fake = scriptedTransport(['transient', 'transient', 'transient', 'ok']);
    const { queue, lines, logText, count } = setup(fake.transport, { maxAttempts: 3 });
    await enqueueTest(pool, 'a@example.com');
    queue.start();
    await until(async () => (await count('identity_mail_failed_total', { transport: 'fake', reason: 'gave_up' })) === 1);
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ msg: 'mail not delivered', kind: 'test', reason: 'gave_up', attempts: 3, error: { code: 'ECONNECTION' } });
    expect(logText()).not.toContain(TEST_TOKEN);
    expect(await mailJobs(pool)).toEqual([]);
    await sleep(50);
    expect(fake.tried).toHaveLength(3);
  });

  it('does not retry a permanent failure', async () => {
    const fake = scriptedTransport(['permanent', 'ok']);
    const { queue, count } = setup(fake.transport);
    await enqueueTest(pool, 'a@example.com');
    queue.start();
    await until(async () => (await count('identity_mail_failed_total', { transport: 'fake', reason: 'rejected' })) === 1);
    await sleep(50);
    expect(fake.tried).toHaveLength(1);
    expect(fake.sent).toEqual([]);
    expect(await mailJobs(pool)).toEqual([]);
  });

  it('retries every failure of a transport that does not classify its errors', async () => {
    const fake = scriptedTransport(['permanent', 'ok'], { isTransient: undefined });
    const { queue } = setup(fake.transport);
    await enqueueTest(pool, 'a@example.com');
    queue.start();
    await until(() => fake.sent.length === 1);
  });

  it('a composer that throws: its writes roll back, the job waits (attempts + 1, backoff), then is given up', async () => {
    let composed = 0;
    const failing: MailComposer = async (client) => {
      composed++;
      await client.query(`INSERT INTO login_failures (environment, email, ip) VALUES ('live', 'composer@example.com', '192.0.2.1')`);
      throw new Error(`broken composer ${TEST_TOKEN}`);
    };
    const fake = capturingTransport();
    const { queue, lines, count } = setup(fake.transport, { baseDelayMs: 3_600_000, maxDelayMs: 3_600_000, maxAttempts: 2, composers: { test: failing } });
    await enqueueTest(pool, 'a@example.com');
    queue.start();
    await until(() => composed === 1);
    await sleep(100);
    // No hot loop: the job waits half an hour to an hour.
    expect(composed).toBe(1);
    const [job] = await mailJobs(pool);
    expect(job).toMatchObject({ attempts: 1, message_enc: null, last_error: 'broken composer [redacted]' });
    expect(job!.due_in_ms).toBeGreaterThan(1_700_000);
    expect((await pool.query(`SELECT 1 FROM login_failures WHERE email = 'composer@example.com'`)).rowCount).toBe(0);
    expect(lines.find((l) => l.msg === 'mail compose failed; retrying')).toMatchObject({ level: 'warn', kind: 'test', attempt: 1 });
    await pool.query('UPDATE mail_jobs SET next_attempt_at = now()');
    await until(async () => (await count('identity_mail_failed_total', { transport: 'capture', reason: 'gave_up' })) === 1);
    expect(composed).toBe(2);
    expect(await mailJobs(pool)).toEqual([]);
    expect(fake.sent).toEqual([]);
    expect(JSON.stringify(lines)).not.toContain(TEST_TOKEN);
  });

  it('leaves a job of a kind it cannot compose to a replica that can (a rolling deploy), and goes on with the others', async () => {
    const fake = capturingTransport();
    const { queue } = setup(fake.transport, { composers: { test: testComposer } });
    await pool.query(`INSERT INTO mail_jobs (kind, environment, request) VALUES ('from-a-newer-version', 'live', '{}')`);
    await enqueueTest(pool, 'known@example.com');
    queue.start();
    await until(() => fake.sent.length === 1);
    await sleep(100);
    expect(fake.sent.map((m) => m.to)).toEqual(['known@example.com']);
    expect((await mailJobs(pool)).map((j) => [j.kind, j.attempts])).toEqual([['from-a-newer-version', 0]]);
  });

  it('close() stops claiming, lets the send in flight finish, leaves the rest queued, closes the transport', async () => {
    let closed = false;
    const fake = manualTransport({ close: async () => void (closed = true) });
    const { queue, count } = setup(fake.transport, { concurrency: 1 });
    await enqueueTest(pool, 'first@example.com');
    await enqueueTest(pool, 'second@example.com');
    queue.start();
    await until(() => fake.calls.length === 1);
    const closing = queue.close(10_000);
    fake.calls[0]!.resolve();
    await closing;
    expect(closed).toBe(true);
    expect(fake.calls).toHaveLength(1);
    expect(await count('identity_mail_sent_total', { transport: 'fake' })).toBe(1);
    expect((await mailJobs(pool)).map((j) => [j.request.to, j.attempts])).toEqual([['second@example.com', 0]]);
    queue.wake();
    await queue.poll();
    expect(fake.calls).toHaveLength(1);
  });

  it('close() stops waiting after its time limit: the job in flight stays queued, nothing is counted failed', async () => {
    const fake = manualTransport();
    const { queue, lines, count } = setup(fake.transport, { concurrency: 1 });
    await enqueueTest(pool, 'stuck@example.com');
    queue.start();
    await until(() => fake.calls.length === 1);
    await queue.close(20);
    expect(lines.find((l) => l.msg === 'mail queue closed with sends in flight; their jobs stay queued and are sent again when their lease ends')).toMatchObject({
      level: 'warn',
      inFlight: 1,
    });
    const [job] = await mailJobs(pool);
    expect(job).toMatchObject({ attempts: 1 });
    expect(job!.due_in_ms).toBeGreaterThan(50_000);
    for (const reason of ['rejected', 'gave_up', 'unreadable']) expect(await count('identity_mail_failed_total', { transport: 'fake', reason })).toBe(0);
  });

  it('a worker that dies while sending: another picks its job up once the lease ends and delivers the same message', async () => {
    const hung = manualTransport();
    const a = setup(hung.transport, { leaseMs: 600 });
    const ctxA: IdentityContext = { ...ctx, mail: a.queue };
    const u = await user();
    await identityRpc(ctxA).requestPasswordReset({ environment: 'live', email: u.email }, call());
    a.queue.start();
    await until(() => hung.calls.length === 1);
    // "Killed": stops claiming without the send ever finishing (its socket would just be gone).
    await a.queue.close(0);
    const delivered = capturingTransport();
    const b = setup(delivered.transport, { leaseMs: 600 });
    b.queue.start();
    await sleep(300);
    expect(delivered.sent).toHaveLength(0); // still leased to the dead worker
    await until(() => delivered.sent.length === 1);
    expect(delivered.sent[0]).toEqual(hung.calls[0]!.message);
    await until(async () => (await mailJobs(pool)).length === 0);
    expect(await resetEvents(u.email)).toHaveLength(1);
    expect(await rpc.confirmPasswordReset({ environment: 'live', token: delivered.sent[0]!.data.token!, password: 'a brand new passphrase' }, call())).toEqual({});
  });

  it('a request acknowledged while no worker runs (the process was killed) is delivered when a worker starts', async () => {
    const u = await user();
    expect(await rpc.requestPasswordReset({ environment: 'live', email: u.email }, call())).toEqual({});
    await sleep(100);
    const [job] = await mailJobs(pool);
    expect(job).toMatchObject({ kind: 'password-reset', attempts: 0, message_enc: null });
    expect(job!.request).toEqual({
      email: u.email,
      caller: { actor: { type: 'anonymous' }, context: { ip: '198.51.100.7', userAgent: 'mail-queue-test' }, authMethod: 'none' },
      traceId: TRACE_ID,
    });
    expect(await resetEvents(u.email)).toHaveLength(0);
    const fake = capturingTransport();
    setup(fake.transport).queue.start();
    await until(() => fake.sent.length === 1);
    expect(fake.sent[0]).toMatchObject({ to: u.email, subject: 'Reset your password', data: { kind: 'password-reset', email: u.email } });
    expect(fake.sent[0]!.text).toContain(fake.sent[0]!.data.token!);
    await until(async () => (await mailJobs(pool)).length === 0);
    const [event] = await resetEvents(u.email);
    expect(event).toMatchObject({ result: 'success', actor: { id: u.id, email: u.email, type: 'user' }, target: { id: u.id }, context: { ip: '198.51.100.7', userAgent: 'mail-queue-test' }, traceId: TRACE_ID });
  });

  it('stores the message sealed (no token in clear), and composes once: one event and one token across a retry', async () => {
    const fake = scriptedTransport(['transient', 'ok']);
    const { queue } = setup(fake.transport, { baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 });
    const u = await user();
    await identityRpc({ ...ctx, mail: queue }).requestPasswordReset({ environment: 'live', email: u.email }, call());
    queue.start();
    await until(() => fake.tried.length === 1);
    await until(async () => (await mailJobs(pool))[0]?.last_error !== null);
    const token = fake.tried[0]!.data.token!;
    const [job] = await mailJobs(pool);
    expect(job!.message_enc).toBeInstanceOf(Buffer);
    for (const needle of [token, token.slice(4, 24), u.email]) {
      expect(job!.message_enc!.includes(Buffer.from(needle))).toBe(false);
      expect(job!.message_enc!.toString('base64')).not.toContain(needle);
    }
    expect(JSON.stringify(job!.request)).not.toContain(token);
    expect(job!.last_error).not.toContain(token.slice(4));
    await pool.query('UPDATE mail_jobs SET next_attempt_at = now()');
    await until(() => fake.sent.length === 1);
    expect(fake.sent[0]).toEqual(fake.tried[0]);
    await until(async () => (await mailJobs(pool)).length === 0);
    expect(await resetEvents(u.email)).toHaveLength(1);
    expect((await pool.query('SELECT 1 FROM password_reset_tokens WHERE user_id = $1', [u.id])).rowCount).toBe(1);
    expect(await rpc.confirmPasswordReset({ environment: 'live', token, password: 'a brand new passphrase' }, call())).toEqual({});
  });

  it('an unknown email: no mail, the failure event as before, the job deleted', async () => {
    const fake = capturingTransport();
    const { queue, count } = setup(fake.transport);
    queue.start();
    const email = `ghost${n++}@example.com`;
    expect(await identityRpc({ ...ctx, mail: queue }).requestPasswordReset({ environment: 'live', email }, call())).toEqual({});
    await until(async () => (await resetEvents(email)).length === 1);
    await until(async () => (await mailJobs(pool)).length === 0);
    const [event] = await resetEvents(email);
    expect(event).toMatchObject({ result: 'failure', actor: { email, type: 'anonymous' }, context: { ip: '198.51.100.7', userAgent: 'mail-queue-test' }, traceId: TRACE_ID });
    expect(event!.target).toBeUndefined();
    expect(JSON.parse(event!.metadataJson)).toEqual({ authMethod: 'none', mfaUsed: false, reason: 'unknown_email' });
    expect(fake.sent).toEqual([]);
    for (const reason of ['rejected', 'gave_up', 'unreadable']) expect(await count('identity_mail_failed_total', { transport: 'capture', reason })).toBe(0);
  });

  it('two workers on one table deliver each of many jobs exactly once', async () => {
    const sent: string[] = [];
    const slow = (kind: string): Mailer => ({
      kind,
      async send(m) {
        await sleep(5);
        sent.push(m.to);
      },
    });
    const a = setup(slow('a'), { concurrency: 2 });
    const b = setup(slow('b'), { concurrency: 2 });
    const recipients = Array.from({ length: 40 }, (_, i) => `many${i}@example.com`);
    for (const to of recipients) await enqueueTest(pool, to);
    a.queue.start();
    b.queue.start();
    await until(async () => (await mailJobs(pool)).length === 0);
    await Promise.all([a.queue.idle(), b.queue.idle()]);
    expect([...sent].sort()).toEqual([...recipients].sort());
    expect((await a.count('identity_mail_sent_total', { transport: 'a' })) + (await b.count('identity_mail_sent_total', { transport: 'b' }))).toBe(40);
  });

  it('a message sealed under another SERVER_SECRET is dropped and counted unreadable', async () => {
    const fake = capturingTransport();
    const { queue, lines, count } = setup(fake.transport);
    const id = await enqueueTest(pool, 'sealed@example.com');
    const message = { to: 'sealed@example.com', subject: 's', text: TEST_TOKEN, data: { kind: 'test', token: TEST_TOKEN } };
    await pool.query('UPDATE mail_jobs SET message_enc = $2 WHERE id = $1', [id, seal(mailQueueKey('another secret'.repeat(3)), id, JSON.stringify(message))]);
    // Sealed for another row: the right key, the wrong id.
    const moved = await enqueueTest(pool, 'moved@example.com');
    await pool.query('UPDATE mail_jobs SET message_enc = $2 WHERE id = $1', [moved, seal(mailQueueKey(SECRET), id, JSON.stringify(message))]);
    queue.start();
    await until(async () => (await count('identity_mail_failed_total', { transport: 'capture', reason: 'unreadable' })) === 2);
    expect(fake.sent).toEqual([]);
    expect(await mailJobs(pool)).toEqual([]);
    expect(lines.filter((l) => l.msg === 'mail not delivered')).toEqual([
      expect.objectContaining({ level: 'warn', kind: 'test', reason: 'unreadable', attempts: 1 }),
      expect.objectContaining({ level: 'warn', kind: 'test', reason: 'unreadable', attempts: 1 }),
    ]);
  });

  it('PostgreSQL down: polling goes on, one warning per outage, and delivery resumes', async () => {
    let down = true;
    const refused = () => Promise.reject(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }));
    const flaky = {
      connect: (() => (down ? refused() : pool.connect())) as Pool['connect'],
      query: ((...args: Parameters<Pool['query']>) => (down ? refused() : (pool.query as (...a: unknown[]) => unknown)(...args))) as Pool['query'],
    } as Pool;
    const fake = capturingTransport();
    const { queue, lines } = setup(fake.transport, { pool: flaky });
    await enqueueTest(pool, 'later@example.com');
    queue.start();
    await sleep(150);
    const outages = () => lines.filter((l) => l.msg === 'mail queue cannot reach PostgreSQL; retrying at each poll');
    expect(outages()).toHaveLength(1);
    expect(outages()[0]).toMatchObject({ level: 'warn', error: { code: 'ECONNREFUSED' } });
    down = false;
    await until(() => fake.sent.length === 1);
    expect(lines.filter((l) => l.msg === 'mail queue reaches PostgreSQL again')).toHaveLength(1);
    down = true;
    await sleep(100);
    expect(outages()).toHaveLength(2);
  });
});

describe('mailLeaseMs', () => {
  it('is 60 s, or three transport time limits when longer: always more than one', () => {
    expect(mailLeaseMs(10_000)).toBe(60_000);
    expect(mailLeaseMs(20_000)).toBe(60_000);
    expect(mailLeaseMs(30_000)).toBe(90_000);
    expect(mailLeaseMs(600_000)).toBe(1_800_000);
  });
});

describe('describeMailError', () => {
  it('keeps codes and a short message without the message data', () => {
    const message: MailMessage = { to: 'a@example.com', subject: 's', text: TEST_TOKEN, data: { kind: 'test', token: TEST_TOKEN } };
    const err = Object.assign(new Error(`550 rejected: ${TEST_TOKEN} ${'x'.repeat(400)}`), { code: 'EENVELOPE', responseCode: 550 });
    const d = describeMailError(err, message);
    expect(d).toMatchObject({ code: 'EENVELOPE', responseCode: 550 });
    expect(d.message).toMatch(/^550 rejected: \[redacted\] x+$/);
    expect(d.message.length).toBe(300);
    expect(describeMailError('plain', message)).toEqual({ message: 'plain' });
    expect(describeMailError(new Error(`no ${TEST_TOKEN}`))).toEqual({ message: 'no [redacted]' });
  });
});
