import type { Logger, Metrics, Pool } from '@secsvc/shared';

/**
 * Retention of identity's short-lived rows: what no request can use any more is deleted once it is older than
 * the retention period (IDENTITY_RETENTION_DAYS), so tables do not grow without end. Users, API keys, clients,
 * connections and live credentials are never touched; the audit log keeps the history of every event.
 */
interface Rule {
  table: string;
  /** The primary key's columns (the batch selects by them). */
  key: string;
  /** Rows of no further use; `$1` is the retention period as an interval. */
  where: string;
}

const RULES: Rule[] = [
  // Ended sessions (expired or revoked): their tokens are refused anyway; the deletion tombstone (0008) lets
  // gateways that reconnect later still drop cached verifications.
  { table: 'sessions', key: 'id', where: `expires_at < now() - $1::interval OR revoked_at < now() - $1::interval` },
  { table: 'password_reset_tokens', key: 'id', where: `expires_at < now() - $1::interval OR used_at < now() - $1::interval` },
  // Throttle counts look back minutes; a day is kept for investigation (the audit log has every failure).
  { table: 'login_failures', key: 'id', where: `failed_at < now() - least($1::interval, interval '1 day')` },
  // Codes live 60 s; a day past their expiry they are of no use, not even for reuse detection (this replaced
  // the clean-up that ran on every authorization).
  { table: 'oauth_codes', key: 'code_hash', where: `expires_at < now() - least($1::interval, interval '1 day')` },
  // Expired refresh tokens only: a used (rotated) one that has not expired still detects reuse.
  { table: 'oauth_refresh_tokens', key: 'token_hash', where: `expires_at < now() - $1::interval` },
  // Revoked grants, and grants left without a refresh token (their access tokens live minutes, a day at most).
  {
    table: 'oauth_grants',
    key: 'id',
    where: `revoked_at < now() - $1::interval
      OR (revoked_at IS NULL AND created_at < now() - greatest($1::interval, interval '1 day') AND NOT EXISTS (SELECT 1 FROM oauth_refresh_tokens r WHERE r.grant_id = oauth_grants.id))`,
  },
  // Request and assertion ids are needed until they expire (replay and InResponseTo checks), not after.
  { table: 'saml_requests', key: 'id', where: `expires_at < now()` },
  { table: 'saml_assertions', key: 'connection_id, assertion_id', where: `expires_at < now()` },
  // Second-factor failures count for 15 minutes, like login failures; a day is kept for investigation.
  { table: 'mfa_failures', key: 'id', where: `failed_at < now() - least($1::interval, interval '1 day')` },
  // MFA challenges live minutes (a login's second step, WebAuthn ceremonies); a day past expiry they are of no use.
  { table: 'mfa_challenges', key: 'id', where: `expires_at < now() - interval '1 day'` },
  // TOTP enrollments never confirmed within a day: the secret shown then is abandoned.
  { table: 'mfa_factors', key: 'id', where: `kind = 'totp' AND confirmed_at IS NULL AND created_at < now() - interval '1 day'` },
];

const LOCK = 'secsvc:identity:retention';

export interface SweepResult {
  /** Another replica was sweeping. */
  skipped: boolean;
  deleted: Record<string, number>;
}

/** One sweep: each rule in batches (short transactions, no long locks), under an advisory lock (one replica). */
export async function sweepOnce(pool: Pool, opts: { retentionDays: number; batchSize?: number }): Promise<SweepResult> {
  const batch = opts.batchSize ?? 1000;
  const client = await pool.connect();
  try {
    const { rows } = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS ok', [LOCK]);
    if (!rows[0]!.ok) return { skipped: true, deleted: {} };
    try {
      const deleted: Record<string, number> = {};
      const period = `${opts.retentionDays} days`;
      for (const rule of RULES) {
        deleted[rule.table] = 0;
        for (;;) {
          // Rules without the period (expiry alone decides) take only the batch size.
          const usesPeriod = rule.where.includes('$1');
          const { rowCount } = await client.query(
            `DELETE FROM ${rule.table} WHERE (${rule.key}) IN (SELECT ${rule.key} FROM ${rule.table} WHERE ${rule.where} LIMIT ${usesPeriod ? '$2' : '$1'})`,
            usesPeriod ? [period, batch] : [batch],
          );
          deleted[rule.table] += rowCount ?? 0;
          if ((rowCount ?? 0) < batch) break;
        }
      }
      return { skipped: false, deleted };
    } finally {
      await client.query('SELECT pg_advisory_unlock(hashtext($1))', [LOCK]);
    }
  } finally {
    client.release();
  }
}

/** Sweeps every `intervalMs` (the first one a little after start); close() waits for a running sweep. */
export function startRetention(opts: { pool: Pool; retentionDays: number; intervalMs: number; logger: Logger; metrics?: Metrics }): { close: () => Promise<void> } {
  const counter = opts.metrics?.counter('identity_retention_deleted_total', 'Rows deleted by the retention sweeper', ['table']);
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  const run = async () => {
    try {
      const result = await sweepOnce(opts.pool, { retentionDays: opts.retentionDays });
      const total = Object.values(result.deleted).reduce((a, b) => a + b, 0);
      for (const [table, n] of Object.entries(result.deleted)) if (n) counter?.inc({ table }, n);
      if (total) opts.logger.info({ deleted: result.deleted }, 'retention sweep');
    } catch (err) {
      opts.logger.warn({ err: (err as Error).message }, 'retention sweep failed; next interval retries');
    }
  };
  const schedule = (ms: number) => {
    if (closed) return;
    timer = setTimeout(() => {
      running = run().finally(() => {
        running = undefined;
        schedule(opts.intervalMs);
      });
    }, ms);
    timer.unref();
  };
  // Replicas started together do not all sweep at the same moment.
  schedule(Math.min(opts.intervalMs, 10_000 + Math.floor(Math.random() * 20_000)));
  return {
    close: async () => {
      closed = true;
      clearTimeout(timer);
      await running;
    },
  };
}
