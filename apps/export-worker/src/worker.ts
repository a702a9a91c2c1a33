import { Counter } from 'prom-client';
import type { ClaimedJob, CompletedFile, ExportStatus } from '@secsvc/audit-store';
import { Backoff, isAppError, parseTraceparent, SpanKind, Waker, withSpan, type Logger, type Metrics, type ObjectStore } from '@secsvc/shared';
import { writeExportFile } from './export-file';
import type { LogSource } from './log-source';

/** The job repository as the worker uses it (ExportJobs in libs/audit-store; an in-memory fake in unit tests). */
export interface JobQueue {
  claim: (workerId: string, leaseMs: number, maxAttempts: number) => Promise<ClaimedJob | undefined>;
  heartbeat: (job: ClaimedJob, processed: number, leaseMs: number) => Promise<boolean>;
  complete: (job: ClaimedJob, file: CompletedFile) => Promise<boolean>;
  attemptFailed: (job: ClaimedJob, error: { code: string; message: string }, maxAttempts: number, retryInMs: number, notCounted?: boolean) => Promise<ExportStatus | undefined>;
  release: (job: ClaimedJob) => Promise<void>;
  failExhausted: (maxAttempts: number) => Promise<number>;
  expireDue: (remove: (objectKey: string) => Promise<void>) => Promise<number>;
  deleteEnded: (days: number) => Promise<number>;
  /** For the queue gauges (read when /metrics is scraped). */
  queueStats?: () => Promise<{ queued: number; running: number; oldestQueuedSeconds: number }>;
}

export interface WorkerSettings {
  workerId: string;
  /** A claim lasts this long unless renewed; a worker that stops renewing (killed, hung) loses the job. */
  leaseMs: number;
  /** Progress and lease renewal interval. */
  heartbeatMs: number;
  maxAttempts: number;
  retryDelayMs: number;
  /** How long a finished file stays downloadable. */
  linkTtlMs: number;
  /** Jobs run at once by this worker. */
  concurrency: number;
  /** Poll interval when no notification arrives. */
  pollMs: number;
  cleanupIntervalMs: number;
  /** Leftovers of interrupted writes older than this are removed by the cleanup loop. */
  sweepAfterMs: number;
  /** Expired and failed jobs are deleted this many days after they ended. */
  jobRetentionDays: number;
}

/** The object key of one attempt's file: attempts never share a key, so a stale worker cannot overwrite. */
export const objectKeyOf = (job: ClaimedJob) => `${job.environment}/${job.id}/${job.attempts}.${job.format}`;

/** What a failure says to the API: an AppError's own (safe) message, never internal text. */
function publicError(err: unknown): { code: string; message: string; permanent: boolean } {
  if (isAppError(err)) {
    if (err.code === 'invalid_request') return { code: 'invalid_request', message: err.message, permanent: true };
    if (err.code === 'unavailable') return { code: 'source_unavailable', message: 'The log store was unavailable', permanent: false };
    return { code: err.code, message: err.message, permanent: false };
  }
  return { code: 'export_failed', message: 'The export could not be written', permanent: false };
}

class LeaseLost extends Error {
  constructor() {
    super('lease lost');
  }
}

/**
 * The export worker: claims jobs (lease + heartbeat), streams each job's rows from the log source into a file
 * in the object store, and completes it, or records the failed attempt (retried after a delay; failed for
 * good after maxAttempts). A separate loop expires old files, ends jobs whose workers kept dying, and sweeps
 * leftovers of interrupted writes. Domain logic only: Postgres, ClickHouse/gRPC and storage are ports.
 */
export class ExportWorker {
  private stopped = false;
  /** One per loop (a Waker wakes one sleeper): the claim loops, then the cleanup loop. */
  private readonly wakers: Waker[] = [];
  private readonly loops: Promise<void>[] = [];
  private readonly running = new Map<string, AbortController>();
  private readonly jobsTotal: Counter<'outcome'> | undefined;
  private readonly rowsTotal: Counter | undefined;

  constructor(
    private readonly queue: JobQueue,
    private readonly source: LogSource,
    private readonly objects: ObjectStore,
    private readonly s: WorkerSettings,
    private readonly logger: Logger,
    metrics?: Metrics,
  ) {
    if (metrics) {
      this.jobsTotal = new Counter({ name: 'export_jobs_total', help: 'Export attempts by outcome', labelNames: ['outcome'], registers: [metrics.registry] });
      this.rowsTotal = new Counter({ name: 'export_rows_total', help: 'Rows written to export files', registers: [metrics.registry] });
      const stats = queue.queueStats?.bind(queue);
      if (stats) {
        metrics.scrapedGauges(
          'export_queue',
          {
            depth: { name: 'export_queue_depth', help: 'Export jobs by state: queued (waiting for a worker, or a retry) or running (a worker holds it)', labelNames: ['state'] },
            oldest: { name: 'export_queue_oldest_age_seconds', help: 'Age of the oldest queued export job (0 when none)' },
          },
          async (g) => {
            const s = await stats();
            g.depth.set({ state: 'queued' }, s.queued);
            g.depth.set({ state: 'running' }, s.running);
            g.oldest.set(s.oldestQueuedSeconds);
          },
        );
      }
    }
  }

  start(): void {
    for (let i = 0; i < this.s.concurrency; i++) this.loops.push(this.claimLoop(this.newWaker()));
    this.loops.push(this.cleanupLoop(this.newWaker()));
  }

  private newWaker(): Waker {
    const w = new Waker();
    this.wakers.push(w);
    return w;
  }

  /** A job was committed (NOTIFY): claim now instead of at the next poll. */
  wake(): void {
    for (const w of this.wakers.slice(0, this.s.concurrency)) w.wake();
  }

  /** Stops claiming; running exports are aborted and their jobs released for another worker (no attempt used). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const c of this.running.values()) c.abort(new Error('worker stopping'));
    for (const w of this.wakers) w.wake();
    await Promise.all(this.loops);
  }

  private async claimLoop(waker: Waker): Promise<void> {
    const backoff = new Backoff({ baseMs: 100, maxMs: 10_000 });
    while (!this.stopped) {
      try {
        const worked = await this.runOnce();
        backoff.reset();
        if (!worked && !this.stopped) await waker.sleep(this.s.pollMs);
      } catch (err) {
        this.logger.warn({ err: { message: (err as Error).message } }, 'export worker loop failed, retrying');
        if (!this.stopped) await waker.sleep(backoff.next());
      }
    }
  }

  private async cleanupLoop(waker: Waker): Promise<void> {
    while (!this.stopped) {
      await this.cleanupOnce().catch((err: unknown) => this.logger.warn({ err: { message: (err as Error).message } }, 'export cleanup failed'));
      if (!this.stopped) await waker.sleep(this.s.cleanupIntervalMs);
    }
  }

  /** One cleanup round: expired files deleted (jobs → expired), exhausted jobs failed, leftovers swept, old jobs deleted. */
  async cleanupOnce(): Promise<{ expired: number; failed: number; swept: number; deleted: number }> {
    const expired = await this.queue.expireDue((key) => this.objects.delete(key));
    const failed = await this.queue.failExhausted(this.s.maxAttempts);
    const swept = await this.objects.sweep(this.s.sweepAfterMs);
    const deleted = await this.queue.deleteEnded(this.s.jobRetentionDays);
    if (expired + failed + swept + deleted > 0) this.logger.info({ expired, failed, swept, deleted }, 'export cleanup');
    return { expired, failed, swept, deleted };
  }

  /** Claims and runs one job; false when there was none to claim. */
  async runOnce(): Promise<boolean> {
    if (this.stopped) return false;
    const job = await this.queue.claim(this.s.workerId, this.s.leaseMs, this.s.maxAttempts);
    if (!job) return false;
    // The run continues the trace of the request that created the export (its queries, reads, events).
    const attributes = { 'secsvc.export.id': job.id, 'secsvc.export.format': job.format, 'secsvc.export.attempt': job.attempts };
    await withSpan('export.run', parseTraceparent(job.traceparent), { kind: SpanKind.CONSUMER, attributes }, () => this.run(job));
    return true;
  }

  private async run(job: ClaimedJob): Promise<void> {
    const log = this.logger.child({ exportId: job.id, attempt: job.attempts });
    const abort = new AbortController();
    this.running.set(job.id, abort);
    let processed = 0;
    let beating: Promise<void> = Promise.resolve();
    const heartbeat = setInterval(() => {
      beating = beating.then(async () => {
        const held = await this.queue.heartbeat(job, processed, this.s.leaseMs).catch(() => true); // a failed renewal is retried next beat
        if (!held) abort.abort(new LeaseLost());
      });
    }, this.s.heartbeatMs);
    const key = objectKeyOf(job);
    try {
      log.info({ format: job.format, estimatedRecords: job.estimatedRecords }, 'export started');
      const file = await writeExportFile({ source: this.source, objects: this.objects, spec: job, format: job.format, key, signal: abort.signal, progress: (n) => (processed = n) });
      clearInterval(heartbeat);
      await beating;
      if (abort.signal.aborted) throw abort.signal.reason;
      if (await this.queue.complete(job, { ...file, objectKey: key, linkTtlMs: this.s.linkTtlMs })) {
        this.rowsTotal?.inc(file.totalRecords);
        this.jobsTotal?.inc({ outcome: 'completed' });
        log.info({ ...file }, 'export completed');
      } else {
        // Another worker took the job over meanwhile: its attempt is the one that counts.
        await this.objects.delete(key);
        this.jobsTotal?.inc({ outcome: 'superseded' });
        log.warn('export finished after its lease was lost; file discarded');
      }
    } catch (err) {
      clearInterval(heartbeat);
      await beating;
      const reason = abort.signal.aborted ? abort.signal.reason : err;
      if (reason instanceof LeaseLost) {
        // The job is another worker's now: drop this attempt's file if it was finished before the news came.
        await this.objects.delete(key).catch(() => undefined);
        this.jobsTotal?.inc({ outcome: 'lease_lost' });
        log.warn('export aborted: lease lost to another worker');
      } else if (this.stopped && abort.signal.aborted) {
        await this.queue.release(job);
        this.jobsTotal?.inc({ outcome: 'released' });
        log.info('export interrupted by shutdown; job released');
      } else {
        const e = publicError(reason);
        // The log store being down says nothing about the job: that attempt is given back (for an hour).
        const status = await this.queue.attemptFailed(
          job,
          { code: e.code, message: e.message },
          e.permanent ? job.attempts : this.s.maxAttempts,
          this.s.retryDelayMs,
          e.code === 'source_unavailable',
        );
        this.jobsTotal?.inc({ outcome: status === 'failed' ? 'failed' : 'retry' });
        log.warn({ err: { message: (reason as Error)?.message }, status }, 'export attempt failed');
      }
    } finally {
      this.running.delete(job.id);
    }
  }
}
