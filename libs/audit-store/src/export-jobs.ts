import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { events } from '@secsvc/proto';
import { appendEvent, GAUGE_STATEMENT_TIMEOUT_MS, migrate, readMigrations, traceparentFor, withStatementTimeout, withTransaction, type Logger, type Pool, type PoolClient } from '@secsvc/shared';

/** The audit schema's numbered SQL migrations (outside src/, the same path from src/ and dist/). */
export const auditMigrationsDir = path.join(__dirname, '..', 'migrations');

/** Applies the audit schema's migrations (under the migration advisory lock: audit and workers may race). */
export async function migrateAuditSchema(pool: Pool, logger?: Logger): Promise<number> {
  return migrate(pool, 'audit', await readMigrations(auditMigrationsDir), logger);
}

/** The channel the export_jobs trigger notifies when jobs are committed. */
export const EXPORT_JOBS_CHANNEL = 'secsvc_export_jobs';

export const EXPORT_FORMATS = ['json', 'csv', 'ndjson'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export type ExportStatus = 'processing' | 'completed' | 'failed' | 'expired';

/** Who asked for an export, from where and how: the actor and context of the job's events. */
export interface Requester {
  actor: events.Actor;
  context: events.Context;
  authMethod: string;
}

/** What is exported: a time window of one environment, optionally narrowed by event kinds and a search query. */
export interface ExportSpec {
  environment: string;
  from: string;
  to: string;
  events: string[];
  query: string;
}

export interface ExportJob extends ExportSpec {
  id: string;
  status: ExportStatus;
  format: ExportFormat;
  estimatedRecords: number;
  processedRecords: number;
  totalRecords?: number;
  fileSizeBytes?: number;
  sha256?: string;
  objectKey?: string;
  /** Completed: the lowest and highest chain positions of the file's entries. */
  firstPosition?: number;
  lastPosition?: number;
  attempts: number;
  errorCode?: string;
  errorMessage?: string;
  requestedBy: Requester;
  traceId: string;
  /** The W3C traceparent of the request that created the job: each worker run continues its trace. */
  traceparent?: string;
  createdAt: string;
  startedAt?: string;
  completedAt?: string;
  expiresAt?: string;
}

/** A job as a worker holds it: the lease token proves the claim is still its own. */
export interface ClaimedJob extends ExportJob {
  leaseToken: string;
}

export interface CompletedFile {
  objectKey: string;
  totalRecords: number;
  fileSizeBytes: number;
  sha256: string;
  /** How long the download link (and the file) last from completion (expiresAt = completedAt + this). */
  linkTtlMs: number;
  /** The chain positions of the file's entries, lowest and highest (0: none chained). */
  firstPosition?: number;
  lastPosition?: number;
}

interface JobRow {
  id: string;
  environment: string;
  status: ExportStatus;
  format: ExportFormat;
  from_time: Date;
  to_time: Date;
  events: string[];
  query: string;
  estimated_records: string;
  processed_records: string;
  total_records: string | null;
  file_size_bytes: string | null;
  sha256: string | null;
  object_key: string | null;
  first_position: string | null;
  last_position: string | null;
  attempts: number;
  lease_token: string | null;
  error_code: string | null;
  error_message: string | null;
  requested_by: Requester;
  trace_id: string;
  traceparent: string | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  expires_at: Date | null;
}

const iso = (d: Date | null) => (d ? d.toISOString() : undefined);
const num = (v: string | null) => (v === null ? undefined : Number(v));

function toJob(r: JobRow): ExportJob {
  return {
    id: r.id,
    environment: r.environment,
    status: r.status,
    format: r.format,
    from: r.from_time.toISOString(),
    to: r.to_time.toISOString(),
    events: r.events,
    query: r.query,
    estimatedRecords: Number(r.estimated_records),
    processedRecords: Number(r.processed_records),
    totalRecords: num(r.total_records),
    fileSizeBytes: num(r.file_size_bytes),
    sha256: r.sha256 ?? undefined,
    objectKey: r.object_key ?? undefined,
    firstPosition: num(r.first_position),
    lastPosition: num(r.last_position),
    attempts: r.attempts,
    errorCode: r.error_code ?? undefined,
    errorMessage: r.error_message ?? undefined,
    requestedBy: r.requested_by,
    traceId: r.trace_id,
    ...(r.traceparent && { traceparent: r.traceparent }),
    createdAt: r.created_at.toISOString(),
    startedAt: iso(r.started_at),
    completedAt: iso(r.completed_at),
    expiresAt: iso(r.expires_at),
  };
}

/** The job's own event (log.export.*): target the export, actor whoever asked for it. */
async function jobEvent(db: PoolClient | Pool, job: ExportJob, type: string, result: 'success' | 'failure', metadata: Record<string, unknown>, who?: Requester) {
  const by = who ?? job.requestedBy;
  await appendEvent(db, {
    environment: job.environment,
    type,
    actor: by.actor,
    target: { id: job.id, type: 'export' },
    context: by.context,
    result,
    traceId: job.traceId,
    authMethod: by.authMethod,
    metadata: { format: job.format, ...metadata },
  });
}

export interface NewExport extends ExportSpec {
  id: string;
  format: ExportFormat;
  estimatedRecords: number;
  requestedBy: Requester;
  traceId: string;
}

/**
 * The export-job repository (Postgres, schema `audit`, pool with that search_path). Jobs are claimed with
 * FOR UPDATE SKIP LOCKED under a lease that the worker renews (heartbeat); every write a worker makes is
 * conditional on its lease token, so a worker that lost its lease (it stalled, another took over) can
 * neither report progress nor complete. State changes and their log.export.* events commit together.
 */
export class ExportJobs {
  constructor(private readonly pool: Pool) {}

  async create(input: NewExport): Promise<ExportJob> {
    return withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<JobRow>(
        `INSERT INTO export_jobs (id, environment, status, format, from_time, to_time, events, query, estimated_records, requested_by, trace_id, traceparent)
         VALUES ($1, $2, 'processing', $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING *`,
        [
          ...[input.id, input.environment, input.format, input.from, input.to, input.events, input.query, input.estimatedRecords, input.requestedBy, input.traceId],
          traceparentFor(input.traceId) ?? null,
        ],
      );
      const job = toJob(rows[0]!);
      await jobEvent(db, job, 'log.export.created', 'success', { from: job.from, to: job.to, events: job.events, query: job.query, estimatedRecords: job.estimatedRecords });
      return job;
    });
  }

  async get(environment: string, id: string): Promise<ExportJob | undefined> {
    const { rows } = await this.pool.query<JobRow>('SELECT * FROM export_jobs WHERE id = $1 AND environment = $2', [id, environment]);
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  /** Any environment's job (downloads: the signed token names the job, its environment is checked after). */
  async byId(id: string): Promise<ExportJob | undefined> {
    const { rows } = await this.pool.query<JobRow>('SELECT * FROM export_jobs WHERE id = $1', [id]);
    return rows[0] ? toJob(rows[0]) : undefined;
  }

  /**
   * Claims the oldest processing job that nobody holds (never leased, or its lease lapsed) for `leaseMs`.
   * Concurrent claimers skip each other's locked rows, so each job goes to one worker at a time. A job whose
   * attempts are used up is not claimed again (failExhausted ends it).
   */
  async claim(workerId: string, leaseMs: number, maxAttempts: number): Promise<ClaimedJob | undefined> {
    const token = randomBytes(16).toString('hex');
    const { rows } = await this.pool.query<JobRow>(
      `WITH next AS (
         SELECT id FROM export_jobs
          WHERE status = 'processing' AND run_after <= now() AND (lease_expires_at IS NULL OR lease_expires_at < now())
            AND attempts < $4
          ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
       UPDATE export_jobs j
          SET attempts = attempts + 1, lease_token = $1, worker_id = $2, processed_records = 0,
              lease_expires_at = now() + make_interval(secs => $3::double precision / 1000), started_at = coalesce(started_at, now())
         FROM next WHERE j.id = next.id
       RETURNING j.*`,
      [token, workerId, leaseMs, maxAttempts],
    );
    return rows[0] ? { ...toJob(rows[0]), leaseToken: token } : undefined;
  }

  /**
   * The queue as export_queue_depth and export_queue_oldest_age_seconds show it: processing jobs nobody holds
   * (queued: new, waiting for a retry, or whose worker's lease lapsed), those a worker holds (running), and the
   * age of the oldest queued one (0 when none). One walk of the partial index `export_jobs_claimable`.
   */
  async queueStats(): Promise<{ queued: number; running: number; oldestQueuedSeconds: number }> {
    const { rows } = await withStatementTimeout(this.pool, GAUGE_STATEMENT_TIMEOUT_MS, (c) =>
      c.query<{ queued: string; running: string; oldest: number }>(
        `SELECT count(*) FILTER (WHERE NOT held) AS queued, count(*) FILTER (WHERE held) AS running,
                coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE NOT held)), 0)::float8 AS oldest
           FROM (SELECT created_at, coalesce(lease_expires_at >= now(), false) AS held FROM export_jobs WHERE status = 'processing') j`,
      ),
    );
    const r = rows[0]!;
    return { queued: Number(r.queued), running: Number(r.running), oldestQueuedSeconds: Math.max(0, r.oldest) };
  }

  /** Renews the lease and records progress; false when the lease is no longer this worker's. */
  async heartbeat(job: ClaimedJob, processed: number, leaseMs: number): Promise<boolean> {
    const res = await this.pool.query(
      `UPDATE export_jobs SET processed_records = $3, lease_expires_at = now() + make_interval(secs => $4::double precision / 1000)
        WHERE id = $1 AND lease_token = $2 AND status = 'processing'`,
      [job.id, job.leaseToken, processed, leaseMs],
    );
    return res.rowCount === 1;
  }

  /** Gives a claimed job back unfinished (the worker is shutting down): its attempt does not count. */
  async release(job: ClaimedJob): Promise<void> {
    await this.pool.query(
      `UPDATE export_jobs SET lease_token = NULL, lease_expires_at = NULL, attempts = greatest(attempts - 1, 0), processed_records = 0
        WHERE id = $1 AND lease_token = $2 AND status = 'processing'`,
      [job.id, job.leaseToken],
    );
  }

  /** processing → completed, once: false (and nothing changes) when the lease is not this worker's. */
  async complete(job: ClaimedJob, file: CompletedFile): Promise<boolean> {
    return withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<JobRow>(
        `UPDATE export_jobs SET status = 'completed', completed_at = now(), expires_at = now() + make_interval(secs => $3::double precision / 1000),
                total_records = $4, processed_records = $4,
                file_size_bytes = $5, sha256 = $6, object_key = $7, first_position = $8, last_position = $9,
                lease_token = NULL, lease_expires_at = NULL
          WHERE id = $1 AND lease_token = $2 AND status = 'processing' RETURNING *`,
        [job.id, job.leaseToken, file.linkTtlMs, file.totalRecords, file.fileSizeBytes, file.sha256, file.objectKey, file.firstPosition || null, file.lastPosition || null],
      );
      if (!rows[0]) return false;
      const done = toJob(rows[0]);
      await jobEvent(db, done, 'log.export.completed', 'success', {
        totalRecords: file.totalRecords,
        fileSizeBytes: file.fileSizeBytes,
        sha256: file.sha256,
        attempts: done.attempts,
        expiresAt: done.expiresAt,
      });
      return true;
    });
  }

  /**
   * An attempt failed: the job is released for another attempt after `retryInMs`, or, when this was attempt
   * `maxAttempts`, ends as failed (with its log.export.failed event). An attempt `notCounted` (the log store was
   * unavailable: nothing about the job) is given back, while the job is younger than an hour. Returns the job's
   * status afterwards, or undefined when the lease was not this worker's any more.
   */
  async attemptFailed(
    job: ClaimedJob,
    error: { code: string; message: string },
    maxAttempts: number,
    retryInMs: number,
    notCounted = false,
  ): Promise<ExportStatus | undefined> {
    return withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<JobRow>(
        `WITH given AS (
           SELECT id, attempts - CASE WHEN $7 AND created_at > now() - interval '1 hour' THEN 1 ELSE 0 END AS attempts
             FROM export_jobs WHERE id = $1)
         UPDATE export_jobs j
            SET attempts = given.attempts,
                status = CASE WHEN given.attempts >= $5 THEN 'failed' ELSE j.status END,
                completed_at = CASE WHEN given.attempts >= $5 THEN now() ELSE j.completed_at END,
                error_code = $3, error_message = $4, lease_token = NULL, lease_expires_at = NULL,
                run_after = now() + make_interval(secs => $6::double precision / 1000)
           FROM given
          WHERE j.id = given.id AND j.lease_token = $2 AND j.status = 'processing' RETURNING j.*`,
        [job.id, job.leaseToken, error.code, error.message, maxAttempts, retryInMs, notCounted],
      );
      if (!rows[0]) return undefined;
      const after = toJob(rows[0]);
      if (after.status === 'failed') await jobEvent(db, after, 'log.export.failed', 'failure', { error, attempts: after.attempts });
      return after.status;
    });
  }

  /**
   * Ends as failed every processing job whose attempts are used up and whose last lease lapsed (its worker
   * died each time, so no attempt could report its own failure). Returns how many.
   */
  async failExhausted(maxAttempts: number): Promise<number> {
    return withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<JobRow>(
        `UPDATE export_jobs SET status = 'failed', completed_at = now(), lease_token = NULL, lease_expires_at = NULL,
                error_code = coalesce(error_code, 'worker_lost'),
                error_message = coalesce(error_message, 'The worker stopped during every attempt')
          WHERE id IN (SELECT id FROM export_jobs
                        WHERE status = 'processing' AND attempts >= $1 AND (lease_expires_at IS NULL OR lease_expires_at < now())
                        FOR UPDATE SKIP LOCKED)
          RETURNING *`,
        [maxAttempts],
      );
      for (const r of rows) {
        const job = toJob(r);
        await jobEvent(db, job, 'log.export.failed', 'failure', { error: { code: job.errorCode, message: job.errorMessage }, attempts: job.attempts });
      }
      return rows.length;
    });
  }

  /**
   * Completed exports whose link expired: each is locked (SKIP LOCKED: one cleaner per job), `remove`
   * deletes its file, then it becomes expired. Returns how many.
   */
  async expireDue(remove: (objectKey: string) => Promise<void>, limit = 100): Promise<number> {
    return withTransaction(this.pool, async (db) => {
      const { rows } = await db.query<{ id: string; object_key: string | null }>(
        `SELECT id, object_key FROM export_jobs WHERE status = 'completed' AND expires_at <= now()
          ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED`,
        [limit],
      );
      for (const r of rows) {
        if (r.object_key) await remove(r.object_key);
        await db.query(`UPDATE export_jobs SET status = 'expired' WHERE id = $1`, [r.id]);
      }
      return rows.length;
    });
  }

  /**
   * Jobs that ended (expired: file already deleted; failed) more than `days` ago are deleted, in batches; a
   * status request for one then answers 404. The audit log keeps their log.export.* events. Returns how many.
   */
  async deleteEnded(days: number, limit = 1000): Promise<number> {
    let total = 0;
    for (;;) {
      const { rowCount } = await this.pool.query(
        `DELETE FROM export_jobs WHERE id IN (SELECT id FROM export_jobs WHERE status IN ('expired', 'failed')
           AND coalesce(expires_at, completed_at, created_at) < now() - make_interval(days => $1) LIMIT $2)`,
        [days, limit],
      );
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < limit) return total;
    }
  }

  /** log.export.downloaded: the link's holder (anonymous, with their ip and user agent) fetched the file. */
  async recordDownload(job: ExportJob, by: Requester, traceId: string, bytes: { start: number; end: number; size: number }): Promise<void> {
    const range = bytes.start === 0 && bytes.end === bytes.size - 1 ? 'full' : `${bytes.start}-${bytes.end}`;
    await jobEvent(this.pool, { ...job, traceId }, 'log.export.downloaded', 'success', { range, requestedBy: job.requestedBy.actor.id ?? null }, by);
  }
}
