import { createLogger, Metrics } from '@secsvc/shared';
import { describeMailError, MailQueue, type MailQueueOptions } from './mail-queue';
import type { MailMessage, Mailer } from './mailer';

const TOKEN = 'prt_' + 'T'.repeat(43) + 'abcdef';
const message = (to: string): MailMessage => ({ to, subject: 'Reset your password', text: `token ${TOKEN}`, data: { kind: 'password-reset', token: TOKEN } });

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
  const transport: Mailer = {
    kind: 'fake',
    async send(m) {
      const outcome = outcomes.shift() ?? 'ok';
      if (outcome === 'ok') return void sent.push(m);
      throw Object.assign(new Error(`server said no to ${m.to} (${TOKEN})`), { code: outcome === 'transient' ? 'ECONNECTION' : 'EENVELOPE' });
    },
    isTransient: (err) => (err as { code?: string }).code === 'ECONNECTION',
    ...extra,
  };
  return { transport, sent };
}

function setup(transport: Mailer, options: Partial<MailQueueOptions> = {}) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('identity', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) });
  const metrics = new Metrics('identity');
  const queue = new MailQueue({ transport, logger, metrics, baseDelayMs: 1, maxDelayMs: 4, random: () => 0, ...options });
  const count = async (name: string, labels: Record<string, string>) => {
    const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
    return metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))?.value ?? 0;
  };
  return { queue, lines, count, metrics };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('MailQueue', () => {
  it('exports its counters at 0 from the start, for every reason', async () => {
    const { metrics } = setup(manualTransport().transport);
    const series = async (name: string) => (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name)?.values.map((v) => [v.labels.reason ?? '-', v.value]);
    expect(await series('identity_mail_sent_total')).toEqual([['-', 0]]);
    expect(((await series('identity_mail_failed_total')) ?? []).sort()).toEqual([
      ['gave_up', 0],
      ['queue_full', 0],
      ['rejected', 0],
      ['shutdown', 0],
    ]);
  });

  it('returns from enqueue before the transport has sent anything', async () => {
    const fake = manualTransport();
    const { queue, count } = setup(fake.transport);
    queue.enqueue(message('a@example.com'));
    expect(queue.size).toBe(1);
    expect(fake.calls).toHaveLength(1);
    expect(await count('identity_mail_sent_total', { transport: 'fake' })).toBe(0);
    fake.calls[0]!.resolve();
    await queue.idle();
    expect(await count('identity_mail_sent_total', { transport: 'fake' })).toBe(1);
  });

  it('sends at most `concurrency` messages at once, in order', async () => {
    const fake = manualTransport();
    const { queue } = setup(fake.transport, { concurrency: 2 });
    for (let i = 0; i < 5; i++) queue.enqueue(message(`m${i}@example.com`));
    expect(fake.calls.map((c) => c.message.to)).toEqual(['m0@example.com', 'm1@example.com']);
    for (let i = 0; i < 5; i++) {
      fake.calls[i]!.resolve();
      await tick();
    }
    await queue.idle();
    expect(fake.calls.map((c) => c.message.to)).toEqual(['m0@example.com', 'm1@example.com', 'm2@example.com', 'm3@example.com', 'm4@example.com']);
    expect(fake.maxInFlight()).toBe(2);
  });

  it('refuses messages beyond maxSize, counting and logging them without their text', async () => {
    const fake = manualTransport();
    const { queue, lines, count } = setup(fake.transport, { maxSize: 2, concurrency: 1 });
    queue.enqueue(message('a@example.com'));
    queue.enqueue(message('b@example.com'));
    queue.enqueue(message('c@example.com'));
    expect(queue.size).toBe(2);
    expect(await count('identity_mail_failed_total', { transport: 'fake', reason: 'queue_full' })).toBe(1);
    expect(lines.find((l) => l.msg === 'mail not delivered')).toMatchObject({ level: 'warn', reason: 'queue_full', kind: 'password-reset', attempts: 0 });
    expect(JSON.stringify(lines)).not.toContain(TOKEN);
    fake.calls[0]!.resolve();
    await tick();
    fake.calls[1]!.resolve();
    await queue.idle();
  });

  it('retries transient failures with doubling delays (capped), then delivers', async () => {
    const fake = scriptedTransport(['transient', 'transient', 'transient', 'ok']);
    const { queue, lines, count } = setup(fake.transport, { baseDelayMs: 10, maxDelayMs: 30, maxAttempts: 5 });
    queue.enqueue(message('a@example.com'));
    await queue.idle();
    expect(fake.sent.map((m) => m.to)).toEqual(['a@example.com']);
    // random() = 0: half of min(30, 10 * 2^(n-1)).
    expect(lines.filter((l) => l.msg === 'mail send failed; retrying').map((l) => [l.attempt, l.retryInMs])).toEqual([
      [1, 5],
      [2, 10],
      [3, 15],
    ]);
    expect(await count('identity_mail_sent_total', { transport: 'fake' })).toBe(1);
  });

  it('gives up after maxAttempts with one warning naming no token, and counts it', async () => {
    const fake = scriptedTransport(['transient', 'transient', 'transient']);
    const { queue, lines, count } = setup(fake.transport, { maxAttempts: 3 });
    queue.enqueue(message('a@example.com'));
    await queue.idle();
    const warnings = lines.filter((l) => l.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ msg: 'mail not delivered', reason: 'gave_up', attempts: 3, error: { code: 'ECONNECTION' } });
    expect(JSON.stringify(lines)).not.toContain(TOKEN);
    expect(await count('identity_mail_failed_total', { transport: 'fake', reason: 'gave_up' })).toBe(1);
  });

  it('does not retry a permanent failure', async () => {
    const fake = scriptedTransport(['permanent', 'ok']);
    const { queue, count } = setup(fake.transport);
    queue.enqueue(message('a@example.com'));
    await queue.idle();
    expect(fake.sent).toEqual([]);
    expect(await count('identity_mail_failed_total', { transport: 'fake', reason: 'rejected' })).toBe(1);
  });

  it('retries every failure of a transport that does not classify its errors', async () => {
    const fake = scriptedTransport(['permanent', 'ok'], { isTransient: undefined });
    const { queue } = setup(fake.transport);
    queue.enqueue(message('a@example.com'));
    await queue.idle();
    expect(fake.sent).toHaveLength(1);
  });

  it('close() gives messages waiting for a retry one last attempt now, sends what arrives meanwhile, closes the transport', async () => {
    let closed = false;
    const fake = scriptedTransport(['transient', 'ok', 'ok'], { close: async () => void (closed = true) });
    const { queue, count } = setup(fake.transport, { baseDelayMs: 3_600_000, maxDelayMs: 3_600_000 });
    queue.enqueue(message('a@example.com'));
    await tick();
    expect(queue.size).toBe(1); // waiting an hour for its retry
    const closing = queue.close(10_000);
    queue.enqueue(message('b@example.com'));
    await closing;
    expect(fake.sent.map((m) => m.to).sort()).toEqual(['a@example.com', 'b@example.com']);
    expect(await count('identity_mail_sent_total', { transport: 'fake' })).toBe(2);
    expect(closed).toBe(true);
  });

  it('close() stops waiting after its time limit: what is left is counted as failed (shutdown)', async () => {
    const fake = manualTransport();
    const { queue, lines, count } = setup(fake.transport, { concurrency: 1 });
    queue.enqueue(message('stuck@example.com'));
    queue.enqueue(message('behind@example.com'));
    await queue.close(20);
    expect(queue.size).toBe(0);
    expect(await count('identity_mail_failed_total', { transport: 'fake', reason: 'shutdown' })).toBe(2);
    expect(lines.find((l) => l.msg === 'mail queue closed before it drained; messages left undelivered')).toMatchObject({ undelivered: 2 });
    // A send that finishes after the queue gave up on it is not counted again.
    fake.calls[0]!.resolve();
    await tick();
    expect(await count('identity_mail_sent_total', { transport: 'fake' })).toBe(0);
    queue.enqueue(message('late@example.com'));
    expect(await count('identity_mail_failed_total', { transport: 'fake', reason: 'shutdown' })).toBe(3);
    expect(fake.calls).toHaveLength(1);
  });
});

describe('describeMailError', () => {
  it('keeps codes and a short message without the message data', () => {
    const err = Object.assign(new Error(`550 rejected: ${TOKEN} ${'x'.repeat(400)}`), { code: 'EENVELOPE', responseCode: 550 });
    const d = describeMailError(err, message('a@example.com'));
    expect(d).toMatchObject({ code: 'EENVELOPE', responseCode: 550 });
    expect(d.message).toMatch(/^550 rejected: \[redacted\] x+$/);
    expect(d.message.length).toBe(300);
    expect(describeMailError('plain', message('a@example.com'))).toEqual({ message: 'plain' });
  });
});
