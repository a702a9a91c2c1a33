import type { Logger, Metrics } from '@secsvc/shared';
import type { MailMessage, Mailer, MailOutbox } from './mailer';

export interface MailQueueOptions {
  transport: Mailer;
  logger: Logger;
  metrics?: Metrics;
  /** Messages held at once (waiting, being sent or between attempts); more are refused and counted failed. */
  maxSize?: number;
  /** Messages sent at the same time. */
  concurrency?: number;
  /** Attempts per message, the first included, while its failures are transient. */
  maxAttempts?: number;
  /** Wait before the second attempt; it doubles for each further one (with jitter), up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Random source of the jitter, in [0, 1). */
  random?: () => number;
}

export const MAIL_QUEUE_DEFAULTS = { maxSize: 1000, concurrency: 2, maxAttempts: 5, baseDelayMs: 2000, maxDelayMs: 60_000 };

/** Why a message was not delivered (the `reason` label of identity_mail_failed_total). */
export type MailFailure = (typeof MAIL_FAILURES)[number];
const MAIL_FAILURES = ['rejected', 'gave_up', 'queue_full', 'shutdown'] as const;

interface LabelledCounter<L extends string> {
  inc(labels: Record<L, string>, value?: number): void;
}

interface Job {
  message: MailMessage;
  attempts: number;
  timer?: NodeJS.Timeout;
  /** Counted as failed when the queue stopped waiting for it; a late outcome is not counted again. */
  abandoned?: boolean;
}

/**
 * Delivery off the RPC's path: `enqueue` returns at once, whether or not a message is sent, so no caller
 * (password reset) can tell anything by the time it takes. Bounded in size and concurrency; transient
 * failures (the transport says which) are retried with exponential backoff and jitter; a message that cannot
 * be delivered is logged as a warning naming its kind and the error, never its text or data (tokens).
 */
export class MailQueue implements MailOutbox {
  private readonly opts: Required<Omit<MailQueueOptions, 'metrics'>>;
  private readonly waiting: Job[] = [];
  private readonly delayed = new Set<Job>();
  private readonly active = new Set<Job>();
  private readonly idleWaiters: (() => void)[] = [];
  private state: 'open' | 'draining' | 'closed' = 'open';
  private readonly sent?: LabelledCounter<'transport'>;
  private readonly failed?: LabelledCounter<'transport' | 'reason'>;
  private readonly transportKind: string;

  constructor(options: MailQueueOptions) {
    this.opts = { ...MAIL_QUEUE_DEFAULTS, random: Math.random, ...options };
    this.transportKind = options.transport.kind ?? 'custom';
    this.sent = options.metrics?.counter('identity_mail_sent_total', 'Mail messages the transport accepted', ['transport']);
    this.failed = options.metrics?.counter('identity_mail_failed_total', 'Mail messages given up on, by reason', ['transport', 'reason']);
    // Every series exists from the start (at 0), so an alert on its increase sees the first failure.
    this.sent?.inc({ transport: this.transportKind }, 0);
    for (const reason of MAIL_FAILURES) this.failed?.inc({ transport: this.transportKind, reason }, 0);
  }

  /** Messages held: waiting, being sent, or waiting to be retried. */
  get size(): number {
    return this.waiting.length + this.delayed.size + this.active.size;
  }

  enqueue(message: MailMessage): void {
    if (this.state === 'closed') return this.fail({ message, attempts: 0 }, 'shutdown');
    if (this.size >= this.opts.maxSize) return this.fail({ message, attempts: 0 }, 'queue_full');
    this.waiting.push({ message, attempts: 0 });
    this.pump();
  }

  /** Resolves once nothing is held (for tests and the drain). */
  idle(): Promise<void> {
    if (this.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Drains: messages waiting for a retry get one last attempt now, what is queued is sent, and messages that
   * arrive meanwhile too; after `timeoutMs` whatever is left is given up (counted, one warning). Then the
   * transport is closed.
   */
  async close(timeoutMs = 5000): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'draining';
    for (const job of this.delayed) {
      clearTimeout(job.timer);
      this.waiting.push(job);
    }
    this.delayed.clear();
    this.pump();
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
      const left = [...this.waiting.splice(0), ...this.active];
      this.opts.logger.warn({ transport: this.transportKind, undelivered: left.length, timeoutMs }, 'mail queue closed before it drained; messages left undelivered');
      for (const job of left) {
        job.abandoned = true;
        this.failed?.inc({ transport: this.transportKind, reason: 'shutdown' });
      }
      this.active.clear();
      this.settle();
    }
    await this.opts.transport.close?.();
  }

  private pump(): void {
    while (this.active.size < this.opts.concurrency && this.waiting.length > 0) {
      const job = this.waiting.shift()!;
      this.active.add(job);
      void this.attempt(job);
    }
  }

  private async attempt(job: Job): Promise<void> {
    job.attempts++;
    let error: unknown;
    let ok = false;
    try {
      await this.opts.transport.send(job.message);
      ok = true;
    } catch (err) {
      error = err;
    }
    if (job.abandoned) return;
    this.active.delete(job);
    if (ok) {
      this.sent?.inc({ transport: this.transportKind });
    } else {
      const transient = this.opts.transport.isTransient?.(error) ?? true;
      if (!transient) this.fail(job, 'rejected', error);
      else if (job.attempts >= this.opts.maxAttempts) this.fail(job, 'gave_up', error);
      else if (this.state !== 'open') this.fail(job, 'shutdown', error);
      else this.retryLater(job, error);
    }
    this.pump();
    this.settle();
  }

  private retryLater(job: Job, error: unknown): void {
    const exponential = Math.min(this.opts.maxDelayMs, this.opts.baseDelayMs * 2 ** (job.attempts - 1));
    const delayMs = Math.round(exponential * (0.5 + this.opts.random() / 2));
    this.opts.logger.info(
      { transport: this.transportKind, kind: job.message.data.kind, attempt: job.attempts, retryInMs: delayMs, error: describeMailError(error, job.message) },
      'mail send failed; retrying',
    );
    this.delayed.add(job);
    job.timer = setTimeout(() => {
      this.delayed.delete(job);
      this.waiting.push(job);
      this.pump();
    }, delayMs);
    job.timer.unref();
  }

  private fail(job: Job, reason: MailFailure, error?: unknown): void {
    this.failed?.inc({ transport: this.transportKind, reason });
    this.opts.logger.warn(
      { transport: this.transportKind, kind: job.message.data.kind, reason, attempts: job.attempts, ...(error === undefined ? {} : { error: describeMailError(error, job.message) }) },
      'mail not delivered',
    );
  }

  private settle(): void {
    if (this.size > 0) return;
    for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}

/**
 * What a log may say about a transport error: its codes and a short message from which the message's data
 * (the reset token) is cut out, in case a server echoes it.
 */
export function describeMailError(error: unknown, message: MailMessage): { code?: string; responseCode?: number; message: string } {
  const e = (error ?? {}) as { code?: unknown; responseCode?: unknown; message?: unknown };
  let text = typeof e.message === 'string' ? e.message : String(error);
  for (const value of Object.values(message.data)) if (value.length >= 16) text = text.split(value).join('[redacted]');
  text = text.replace(/prt_[A-Za-z0-9_-]+/g, '[redacted]').slice(0, 300);
  return {
    ...(typeof e.code === 'string' ? { code: e.code } : {}),
    ...(typeof e.responseCode === 'number' ? { responseCode: e.responseCode } : {}),
    message: text,
  };
}
