import pg from 'pg';
import { Gauge } from 'prom-client';
import { Backoff } from './backoff';
import { isBackendUnavailable } from './errors';
import type { Logger } from './logger';
import { tracePool } from './tracing/postgres';
import type { Metrics } from './metrics';

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/**
 * A Postgres pool whose connections default to the service's own schema; idle-client errors are logged
 * instead of crashing the process.
 */
export function createPool(url: string, max: number, logger?: Logger, schema?: string): pg.Pool {
  if (schema !== undefined && !/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const pool = new pg.Pool({
    connectionString: url,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 5_000,
    ...(schema ? { options: `-c search_path=${schema}` } : {}),
  });
  pool.on('error', (err) => logger?.error({ err: { message: err.message } }, 'postgres idle client error'));
  // A connection PostgreSQL drops while it is checked out (a transaction waiting on other work, a LISTEN-free
  // gap between queries) emits 'error' on its client: without a listener that ends the process. The next
  // query on it fails instead (503 unavailable), and the pool discards it on release.
  pool.on('connect', (client) => client.on('error', (err) => logger?.warn({ err: { message: err.message } }, 'postgres connection lost')));
  // With tracing on, queries run inside a trace are spans (tracing/postgres.ts).
  tracePool(pool, schema);
  return pool;
}

const observedPools = new WeakMap<Metrics, Map<string, pg.Pool>>();

/**
 * Reports a pool in db_pool_connections{pool,state} (state total, idle, or waiting: callers queued for a
 * connection) and db_pool_max_connections{pool}, read from the pool when /metrics is scraped. `name` is
 * `main` for a process's own pool; other pools (the Postgres event bus) name themselves.
 */
export function observePool(metrics: Metrics, pool: pg.Pool, name = 'main'): void {
  let pools = observedPools.get(metrics);
  if (!pools) {
    const observed = (pools = new Map<string, pg.Pool>());
    observedPools.set(metrics, observed);
    new Gauge({
      name: 'db_pool_connections',
      help: 'PostgreSQL pool connections by state: total (open), idle, waiting (callers queued for one)',
      labelNames: ['pool', 'state'],
      registers: [metrics.registry],
      collect() {
        for (const [p, o] of observed) {
          this.set({ pool: p, state: 'total' }, o.totalCount);
          this.set({ pool: p, state: 'idle' }, o.idleCount);
          this.set({ pool: p, state: 'waiting' }, o.waitingCount);
        }
      },
    });
    new Gauge({
      name: 'db_pool_max_connections',
      help: 'The most connections a PostgreSQL pool opens',
      labelNames: ['pool'],
      registers: [metrics.registry],
      collect() {
        for (const [p, o] of observed) this.set({ pool: p }, o.options.max ?? 10);
      },
    });
  }
  pools.set(name, pool);
}

/**
 * A connection once PostgreSQL accepts one: at start-up the database may be restarting (a supervised
 * restart, a rolling upgrade), so "unavailable" errors are retried with backoff for up to `timeoutMs`, with one
 * log line while waiting. Any other error (a wrong password, a missing database) is thrown at once.
 */
export async function connectWhenUp(pool: pg.Pool, logger?: Logger, timeoutMs = 120_000): Promise<pg.PoolClient> {
  const deadline = Date.now() + timeoutMs;
  const backoff = new Backoff({ baseMs: 250, maxMs: 5000 });
  for (;;) {
    try {
      return await pool.connect();
    } catch (err) {
      if (!isBackendUnavailable(err) || Date.now() > deadline) throw err;
      if (backoff.attempts === 0) logger?.warn({ err: { message: (err as Error).message } }, 'waiting for PostgreSQL');
      await new Promise((r) => setTimeout(r, backoff.next()));
    }
  }
}

/** Runs `fn` in one transaction: committed when it resolves, rolled back when it throws. */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** How long PostgreSQL may run a statement behind a scrape-time gauge (Metrics.scrapedGauges) before cancelling it. */
export const GAUGE_STATEMENT_TIMEOUT_MS = 2_000;

/**
 * `fn` in one transaction whose statements PostgreSQL cancels after `ms` (SQLSTATE 57014): `SET LOCAL` ends
 * with the transaction, so the pool's connections keep their own settings. For reads that must not hold a
 * connection while the database is stuck (locks, I/O): the gauges read when /metrics is scraped.
 */
export async function withStatementTimeout<T>(pool: pg.Pool, ms: number, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withTransaction(pool, async (client) => {
    await client.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.trunc(ms))}`);
    return fn(client);
  });
}

/** True when the database answers. */
export async function pingDatabase(pool: pg.Pool): Promise<boolean> {
  try {
    await pool.query('SELECT 1');
    return true;
  } catch {
    return false;
  }
}

/** Postgres foreign-key violation (23503): a row referred to was deleted meanwhile. */
export const isForeignKeyViolation = (err: unknown): boolean => (err as { code?: string } | undefined)?.code === '23503';

/** Postgres unique-violation (23505) test, for mapping to 409 conflict. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint?: string };
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}
