import { createLogger, Metrics, type Logger, type Pool } from '@secsvc/shared';
import type { MailMessage, Mailer } from '../../src/domain/mailer';
import { MailQueue, mailQueueKey, type MailComposer, type MailQueueOptions } from '../../src/mail/queue';
import { mailRepository } from '../../src/repositories/mail';
import { identityMailComposers } from '../../src/services';

/** A token-shaped secret the `test` kind puts into every message (logs and the table must never show it). */
export const TEST_TOKEN = 'prt_' + 'T'.repeat(43) + 'abcdef';

/** The `test` kind: a message to request.to, carrying TEST_TOKEN. */
export const testComposer: MailComposer = async (_client, job) => ({
  to: String(job.request.to),
  subject: 'Reset your password',
  text: `token:\n\n${TEST_TOKEN}\n`,
  data: { kind: 'test', token: TEST_TOKEN },
});

/** Queues a `test` job to `to`, as an RPC would (without waking anyone). */
export const enqueueTest = (pool: Pool, to: string): Promise<string> => mailRepository.enqueue(pool, { kind: 'test', environment: 'live', request: { to } });

/** A logger whose JSON lines the test can read. */
export function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[]; text: () => string } {
  const raw: string[] = [];
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger('identity-mail-test', 'debug', {
    write: (line: string) => {
      raw.push(line);
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  return { logger, lines, text: () => raw.join('') };
}

/** The value of one series of a counter or gauge (0 when absent). */
export async function counted(metrics: Metrics, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const value = metric?.values.find((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l));
  return value?.value ?? 0;
}

/** Polls `condition` until it holds, failing after `timeoutMs`. */
export async function until(condition: () => Promise<boolean> | boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A transport that keeps what it is given. */
export function capturingTransport(): { transport: Mailer; sent: MailMessage[] } {
  const sent: MailMessage[] = [];
  return { transport: { kind: 'capture', send: async (m) => void sent.push(m) }, sent };
}

/**
 * A mail queue over `pool` with the `test` and password reset composers, fast timings (poll every 10 ms, retries
 * after 1..4 ms, no jitter) unless `options` say otherwise; its logger and metrics are returned with it. Not
 * started: the caller starts or polls it.
 */
export function testQueue(pool: Pool, transport: Mailer, options: Partial<MailQueueOptions> & { serverSecret?: string } = {}) {
  const { logger, lines, text } = capturingLogger();
  const metrics = new Metrics('identity');
  const { serverSecret = 's'.repeat(40), ...rest } = options;
  const queue = new MailQueue({
    pool,
    key: mailQueueKey(serverSecret),
    transport,
    composers: { test: testComposer, ...identityMailComposers({ SERVER_SECRET: serverSecret }) },
    logger,
    metrics,
    baseDelayMs: 1,
    maxDelayMs: 4,
    pollMs: 10,
    random: () => 0,
    ...rest,
  });
  return { queue, lines, logText: text, metrics, count: (name: string, labels?: Record<string, string>) => counted(metrics, name, labels) };
}

export interface JobRow {
  id: string;
  kind: string;
  request: Record<string, unknown>;
  message_enc: Buffer | null;
  attempts: number;
  next_attempt_at: Date;
  last_error: string | null;
  /** next_attempt_at − now() in ms (negative when due). */
  due_in_ms: number;
}

/** The rows of mail_jobs, oldest first. */
export async function mailJobs(pool: Pool): Promise<JobRow[]> {
  const { rows } = await pool.query<JobRow>(
    `SELECT id, kind, request, message_enc, attempts, next_attempt_at, last_error,
            (extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS due_in_ms
     FROM mail_jobs ORDER BY id`,
  );
  return rows;
}
