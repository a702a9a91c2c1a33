import { backoffDelay, GAUGE_STATEMENT_TIMEOUT_MS, withStatementTimeout, withTransaction, type Logger, type Metrics, type Pool, type PoolClient } from '@secsvc/shared';
import type { MailMessage, Mailer } from '../domain/mailer';
import { deriveKey, open, seal } from '../domain/sealing';
import { mailRepository, type MailJobRow } from '../repositories/mail';

/** A queued job as its composer sees it: the request the RPC stored (never a secret). */
export interface MailJob {
  id: string;
  kind: string;
  environment: string;
  request: Record<string, unknown>;
}

/**
 * Builds the message of a job of one kind, inside the transaction that claimed the job: what it writes (a reset
 * token, an audit event) commits together with the sealed message, so it happens exactly once however often the
 * message is then sent. Undefined: nothing to send (the job is deleted in that transaction).
 */
export type MailComposer = (client: PoolClient, job: MailJob) => Promise<MailMessage | undefined>;

/** The key that seals composed messages (they hold tokens) in mail_jobs.message_enc. */
export const mailQueueKey = (serverSecret: string): Buffer => deriveKey(serverSecret, 'mail-queue-encryption');

export interface MailQueueOptions {
  pool: Pool;
  /** AES-256 key of the sealed messages: mailQueueKey(SERVER_SECRET). */
  key: Buffer;
  transport: Mailer;
  /** The composer of each job kind. */
  composers: Record<string, MailComposer>;
  logger: Logger;
  metrics?: Metrics;
  /** Jobs being sent at the same time by this worker. */
  concurrency?: number;
  /** Attempts per job, the first included, while its failures are transient. */
  maxAttempts?: number;
  /** Wait before the second attempt; it doubles for each further one (with jitter), up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** How long a claimed job is this worker's: longer than any send (else it may be sent twice). */
  leaseMs?: number;
  /** How often the table is polled for due jobs (retries, jobs of other or dead replicas) and the gauges. */
  pollMs?: number;
  /** Random source of the jitter, in [0, 1). */
  random?: () => number;
}

export const MAIL_QUEUE_DEFAULTS = { concurrency: 2, maxAttempts: 5, baseDelayMs: 2000, maxDelayMs: 60_000, leaseMs: 60_000, pollMs: 1000 };

/**
 * The lease for a transport whose steps (connecting, the greeting, each quiet moment) may each take
 * `timeoutMs`: 60 s, or three such steps when that is longer, so a send that is still alive is not sent again.
 */
export const mailLeaseMs = (timeoutMs: number): number => Math.max(MAIL_QUEUE_DEFAULTS.leaseMs, 3 * timeoutMs);

/** Why a message was not delivered (the `reason` label of identity_mail_failed_total). */
export type MailFailure = (typeof MAIL_FAILURES)[number];
const MAIL_FAILURES = ['rejected', 'gave_up', 'unreadable'] as const;

interface LabelledCounter<L extends string> {
  inc(labels: Record<L, string>, value?: number): void;
}

/** A job this worker leased: `attempts` is the lease's fence; the message is in memory or still sealed. */
interface Leased {
  job: MailJobRow;
  attempts: number;
  message?: MailMessage;
}

/**
 * The durable mail queue (identity.mail_jobs), worked by every replica. RPCs insert a job and wake() the local
 * worker; the worker claims due jobs one at a time (FOR UPDATE SKIP LOCKED: replicas never take the same job),
 * composes each once (sealed in the row), leases it, sends it outside any transaction and deletes it once the
 * transport accepted it. A replica that dies leaves its leased jobs, due again when the lease ends: delivery is
 * at least once. Transient failures are retried with exponential backoff and jitter; a message that cannot be
 * delivered is logged as a warning naming its kind and the error, never its text or data (tokens).
 */
export class MailQueue {
  private readonly opts: Required<Omit<MailQueueOptions, 'metrics'>>;
  private state: 'open' | 'closing' | 'closed' = 'open';
  private started = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> | undefined;
  private again = false;
  private readonly active = new Set<Promise<void>>();
  private outage = false;
  private readonly transportKind: string;
  private readonly sent?: LabelledCounter<'transport'>;
  private readonly failed?: LabelledCounter<'transport' | 'reason'>;

  constructor(options: MailQueueOptions) {
    this.opts = { ...MAIL_QUEUE_DEFAULTS, random: Math.random, ...options };
    this.transportKind = options.transport.kind ?? 'custom';
    const { metrics } = options;
    this.sent = metrics?.counter('identity_mail_sent_total', 'Mail messages the transport accepted', ['transport']);
    this.failed = metrics?.counter('identity_mail_failed_total', 'Mail messages given up on, by reason', ['transport', 'reason']);
    // Read from the table when scraped (a query that fails or hangs counts in metrics_refresh_errors_total).
    metrics?.scrapedGauges(
      'mail_queue',
      {
        depth: { name: 'identity_mail_queue_depth', help: 'Mail jobs in identity.mail_jobs (due, being sent or waiting for a retry)' },
        oldest: { name: 'identity_mail_queue_oldest_seconds', help: 'Age of the oldest mail job in identity.mail_jobs (0 when empty)' },
      },
      async (g) => {
        const { depth, oldestSeconds } = await withStatementTimeout(this.opts.pool, GAUGE_STATEMENT_TIMEOUT_MS, (c) => mailRepository.stats(c));
        g.depth.set(depth);
        g.oldest.set(oldestSeconds);
      },
    );
    // Every series exists from the start (at 0), so an alert on its increase sees the first failure.
    this.sent?.inc({ transport: this.transportKind }, 0);
    for (const reason of MAIL_FAILURES) this.failed?.inc({ transport: this.transportKind, reason }, 0);
  }

  /** Starts polling: at once (jobs left by a previous run), then every `pollMs`. */
  start(): this {
    if (this.state === 'open' && !this.started) {
      this.started = true;
      void this.poll().finally(() => this.schedulePoll());
    }
    return this;
  }

  /** A job was enqueued in this process: look for due jobs now rather than at the next poll. */
  wake(): void {
    if (this.state === 'open') void this.tick();
  }

  /** One poll: claims what is due (as far as `concurrency` allows). Never throws. */
  async poll(): Promise<void> {
    await this.tick();
  }

  /** Resolves once no claim is running and no send is in flight (jobs waiting for a retry are not waited for). */
  async idle(): Promise<void> {
    while (this.ticking || this.active.size > 0) {
      await this.ticking;
      await Promise.all([...this.active]);
    }
  }

  /**
   * Stops claiming and waits for the sends in flight, at most `timeoutMs`; then closes the transport. Nothing is
   * given up: jobs not sent stay in the table (a send cut off is sent again once its lease ends).
   */
  async close(timeoutMs = 5000): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'closing';
    clearTimeout(this.pollTimer);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.idle().then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    this.state = 'closed';
    if (timedOut) {
      this.opts.logger.warn(
        { transport: this.transportKind, inFlight: this.active.size, timeoutMs },
        'mail queue closed with sends in flight; their jobs stay queued and are sent again when their lease ends',
      );
    }
    await this.opts.transport.close?.();
  }

  private schedulePoll(): void {
    if (this.state !== 'open') return;
    this.pollTimer = setTimeout(() => void this.poll().finally(() => this.schedulePoll()), this.opts.pollMs);
    this.pollTimer.unref();
  }

  /** Claims due jobs while a send slot is free; one tick at a time (a wake-up meanwhile runs it once more). */
  private tick(): Promise<void> {
    if (this.ticking) {
      this.again = true;
      return this.ticking;
    }
    this.ticking = (async () => {
      do {
        this.again = false;
        while (this.state === 'open' && this.active.size < this.opts.concurrency) {
          const leased = await this.claim();
          this.reachable();
          if (leased === 'none') break;
          if (leased !== 'handled') this.track(this.deliver(leased));
        }
      } while (this.again && this.state === 'open');
    })()
      .catch((err: unknown) => this.unreachable(err))
      .finally(() => (this.ticking = undefined));
    return this.ticking;
  }

  private track(delivery: Promise<void>): void {
    const done: Promise<void> = delivery
      .catch((err: unknown) => this.unreachable(err))
      .finally(() => {
        this.active.delete(done);
        // A slot is free: the next due job goes now.
        this.wake();
      });
    this.active.add(done);
  }

  /**
   * Claims the next due job in one transaction: composes it when it has no message yet (the composer's writes
   * and the sealed message commit together) and leases it. 'handled': the job needed no send (nothing to send,
   * or composing failed and it was rescheduled or given up).
   */
  private async claim(): Promise<Leased | 'none' | 'handled'> {
    const { pool, leaseMs, key } = this.opts;
    // What a failed composition reports (a metric, a log line), said once its transaction committed.
    let report: (() => void) | undefined;
    const claimed = await withTransaction(pool, async (client): Promise<Leased | 'none' | 'handled'> => {
      const job = await mailRepository.claimDue(client, Object.keys(this.opts.composers));
      if (!job) return 'none';
      if (job.message_enc) return { job, attempts: await mailRepository.lease(client, job.id, leaseMs) };
      await client.query('SAVEPOINT compose');
      let message: MailMessage | undefined;
      try {
        const composer = this.opts.composers[job.kind];
        if (!composer) throw new Error(`no composer for mail kind ${job.kind}`);
        message = await composer(client, { id: job.id, kind: job.kind, environment: job.environment, request: job.request });
      } catch (err) {
        // What the composer wrote is undone; the job, still locked, waits (no hot loop) or is given up.
        await client.query('ROLLBACK TO SAVEPOINT compose');
        report = await this.composeFailed(client, job, err);
        return 'handled';
      }
      if (!message) {
        await mailRepository.delete(client, job.id);
        return 'handled';
      }
      const attempts = await mailRepository.lease(client, job.id, leaseMs, seal(key, job.id, JSON.stringify(message)));
      return { job, attempts, message };
    });
    report?.();
    return claimed;
  }

  /** Gives the job up or reschedules it in the claim's transaction; returns what to report once that committed. */
  private async composeFailed(client: PoolClient, job: MailJobRow, err: unknown): Promise<() => void> {
    const attempts = job.attempts + 1;
    const error = describeMailError(err);
    if (attempts >= this.opts.maxAttempts) {
      await mailRepository.delete(client, job.id);
      return () => this.notDelivered(job.kind, 'gave_up', attempts, error);
    }
    const delayMs = this.backoff(attempts);
    await mailRepository.composeFailed(client, job.id, delayMs, error.message);
    return () => this.opts.logger.warn({ kind: job.kind, attempt: attempts, retryInMs: delayMs, error }, 'mail compose failed; retrying');
  }

  /** Sends a leased job outside any transaction; then deletes it, reschedules it or gives it up. */
  private async deliver({ job, attempts, message: composed }: Leased): Promise<void> {
    let message: MailMessage;
    try {
      message = composed ?? (JSON.parse(open(this.opts.key, job.id, job.message_enc!)) as MailMessage);
    } catch (err) {
      // Sealed under another SERVER_SECRET (or damaged): no replica can ever send it.
      return this.drop(job, attempts, 'unreadable', err);
    }
    try {
      await this.opts.transport.send(message);
    } catch (err) {
      const transient = this.opts.transport.isTransient?.(err) ?? true;
      if (!transient) return this.drop(job, attempts, 'rejected', err, message);
      if (attempts >= this.opts.maxAttempts) return this.drop(job, attempts, 'gave_up', err, message);
      const delayMs = this.backoff(attempts);
      const error = describeMailError(err, message);
      if (!(await mailRepository.retryLater(this.opts.pool, job.id, attempts, delayMs, error.message))) return;
      this.opts.logger.info({ transport: this.transportKind, kind: job.kind, attempt: attempts, retryInMs: delayMs, error }, 'mail send failed; retrying');
      return;
    }
    this.sent?.inc({ transport: this.transportKind });
    // Should this fail (or the process die first), the job is sent again after its lease: at least once.
    await mailRepository.delete(this.opts.pool, job.id);
  }

  /** Deletes a job that will not be delivered, unless its lease ran out and another worker has it now. */
  private async drop(job: MailJobRow, attempts: number, reason: MailFailure, err: unknown, message?: MailMessage): Promise<void> {
    if (!(await mailRepository.delete(this.opts.pool, job.id, attempts))) return;
    this.notDelivered(job.kind, reason, attempts, describeMailError(err, message));
  }

  private notDelivered(kind: string, reason: MailFailure, attempts: number, error: ReturnType<typeof describeMailError>): void {
    this.failed?.inc({ transport: this.transportKind, reason });
    this.opts.logger.warn({ transport: this.transportKind, kind, reason, attempts, error }, 'mail not delivered');
  }

  /** The wait after failed attempt number `attempts`: base × 2^(attempts−1), capped, × 50–150 % (jitter). */
  private backoff(attempts: number): number {
    return backoffDelay(attempts, { baseMs: this.opts.baseDelayMs, maxMs: this.opts.maxDelayMs, jitter: 0.5, random: this.opts.random });
  }

  /** PostgreSQL failed us: one warning per outage; the next poll tries again. */
  private unreachable(err: unknown): void {
    if (this.outage) return;
    this.outage = true;
    this.opts.logger.warn({ error: describeMailError(err) }, 'mail queue cannot reach PostgreSQL; retrying at each poll');
  }

  private reachable(): void {
    if (!this.outage) return;
    this.outage = false;
    this.opts.logger.info('mail queue reaches PostgreSQL again');
  }
}

/**
 * What a log may say about an error: its codes and a short message from which the message's data (the reset
 * token) is cut out, in case a server echoes it.
 */
export function describeMailError(error: unknown, message?: MailMessage): { code?: string; responseCode?: number; message: string } {
  const e = (error ?? {}) as { code?: unknown; responseCode?: unknown; message?: unknown };
  let text = typeof e.message === 'string' ? e.message : String(error);
  for (const value of Object.values(message?.data ?? {})) if (value.length >= 16) text = text.split(value).join('[redacted]');
  text = text.replace(/prt_[A-Za-z0-9_-]+/g, '[redacted]').slice(0, 300);
  return {
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.responseCode === 'number' ? { responseCode: e.responseCode } : {}),
    message: text,
  };
}
