import type { Pool, PoolClient } from '@secsvc/shared';

type Db = Pool | PoolClient;

/** A queued mail job (identity.mail_jobs). `id` is a bigint, as a string. */
export interface MailJobRow {
  id: string;
  kind: string;
  environment: string;
  /** What the composer needs to build the message; never a secret. */
  request: Record<string, unknown>;
  /** The composed message, sealed (null until composed). */
  message_enc: Buffer | null;
  /** Leases taken (sends started) and composing failures so far. */
  attempts: number;
}

const secs = (ms: number) => ms / 1000;

export const mailRepository = {
  async enqueue(db: Db, job: { kind: string; environment: string; request: Record<string, unknown> }): Promise<string> {
    const { rows } = await db.query<{ id: string }>(`INSERT INTO mail_jobs (kind, environment, request) VALUES ($1, $2, $3) RETURNING id`, [
      job.kind,
      job.environment,
      job.request,
    ]);
    return rows[0]!.id;
  },

  /**
   * The next due job, locked for the caller's transaction; jobs another transaction holds are skipped, and so
   * are jobs still to compose of a kind this version has no composer for (during a rolling deploy a newer
   * replica composes them).
   */
  async claimDue(client: PoolClient, composable: string[]): Promise<MailJobRow | undefined> {
    const { rows } = await client.query<MailJobRow>(
      `SELECT id, kind, environment, request, message_enc, attempts FROM mail_jobs
       WHERE next_attempt_at <= now() AND (message_enc IS NOT NULL OR kind = ANY($1::text[]))
       ORDER BY next_attempt_at, id FOR UPDATE SKIP LOCKED LIMIT 1`,
      [composable],
    );
    return rows[0];
  },

  /**
   * Leases the job for `leaseMs` (one more attempt; nobody claims it before the lease ends), storing the
   * sealed message when given. Resolves to the attempts counted so far: the lease's fence.
   */
  async lease(db: Db, id: string, leaseMs: number, messageEnc?: Buffer): Promise<number> {
    const { rows } = await db.query<{ attempts: number }>(
      `UPDATE mail_jobs SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $2),
         message_enc = coalesce($3, message_enc)
       WHERE id = $1 RETURNING attempts`,
      [id, secs(leaseMs), messageEnc ?? null],
    );
    return rows[0]!.attempts;
  },

  /** Composing failed (its transaction rolled back): one attempt more, due again after `delayMs`. */
  async composeFailed(db: Db, id: string, delayMs: number, lastError: string): Promise<void> {
    await db.query(`UPDATE mail_jobs SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $2), last_error = $3 WHERE id = $1`, [
      id,
      secs(delayMs),
      lastError,
    ]);
  },

  /**
   * A send failed: due again after `delayMs`, unless the lease `attempts` is no longer the job's (it ran out
   * and another worker took the job). True when the job was rescheduled.
   */
  async retryLater(db: Db, id: string, attempts: number, delayMs: number, lastError: string): Promise<boolean> {
    const { rowCount } = await db.query(
      `UPDATE mail_jobs SET next_attempt_at = now() + make_interval(secs => $3), last_error = $4 WHERE id = $1 AND attempts = $2`,
      [id, attempts, secs(delayMs), lastError],
    );
    return (rowCount ?? 0) > 0;
  },

  /** Deletes the job; with `attempts`, only while that lease is still the job's. True when a row went. */
  async delete(db: Db, id: string, attempts?: number): Promise<boolean> {
    const { rowCount } = await db.query(`DELETE FROM mail_jobs WHERE id = $1 AND ($2::int IS NULL OR attempts = $2)`, [id, attempts ?? null]);
    return (rowCount ?? 0) > 0;
  },

  /** Jobs waiting (due, leased or waiting for a retry) and the age of the oldest, in seconds (0 when none). */
  async stats(db: Db): Promise<{ depth: number; oldestSeconds: number }> {
    const { rows } = await db.query<{ depth: number; oldest_seconds: number }>(
      `SELECT count(*)::int AS depth, coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest_seconds FROM mail_jobs`,
    );
    return { depth: rows[0]!.depth, oldestSeconds: rows[0]!.oldest_seconds };
  },
};
