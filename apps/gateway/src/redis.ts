import { createHash } from 'node:crypto';
import Redis from 'ioredis';
import { Counter } from 'prom-client';
import { backoffDelay, type Logger, type Metrics } from '@secsvc/shared';

/** What the gateway uses Redis for; the label of redis_errors_total. */
export type RedisUse = 'rate_limit' | 'verify_cache' | 'connection';

/**
 * Redis trouble, reported without flooding: every failure counts in `redis_errors_total{use}`, the log gets
 * at most one warning per interval (with the counts since the last one), and one line when Redis answers
 * again.
 */
export class RedisHealth {
  private readonly errors: Counter<'use'> | undefined;
  private failing = false;
  private lastLog = -Infinity;
  private readonly since = new Map<RedisUse, number>();

  constructor(
    private readonly logger: Logger,
    metrics?: Metrics,
    private readonly intervalMs = 30_000,
    private readonly clock: () => number = Date.now,
  ) {
    this.errors = metrics
      ? new Counter({ name: 'redis_errors_total', help: 'Failed Redis operations by use', labelNames: ['use'], registers: [metrics.registry] })
      : undefined;
  }

  get isFailing(): boolean {
    return this.failing;
  }

  failed(use: RedisUse, err: unknown): void {
    this.errors?.inc({ use });
    this.failing = true;
    this.since.set(use, (this.since.get(use) ?? 0) + 1);
    const now = this.clock();
    if (now - this.lastLog < this.intervalMs) return;
    this.lastLog = now;
    const counts = Object.fromEntries(this.since);
    this.since.clear();
    this.logger.warn(
      { err: { message: (err as Error)?.message }, failuresSinceLastReport: counts },
      'Redis unreachable: rate limits fall back as RATE_LIMIT_FAIL_MODE says and the shared verify cache is bypassed; reconnecting',
    );
  }

  succeeded(): void {
    if (!this.failing) return;
    this.failing = false;
    this.since.clear();
    this.lastLog = -Infinity;
    this.logger.info('Redis reachable again');
  }
}

/**
 * The gateway's Redis connection. Commands fail fast instead of queueing while the connection is down
 * (offline queue off, no per-request retries, a command timeout), so the callers can fall back at once;
 * ioredis reconnects by itself with a capped backoff.
 */
export function createRedis(url: string, health: RedisHealth, commandTimeoutMs: number): Redis {
  const redis = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: commandTimeoutMs,
    connectTimeout: Math.max(1000, commandTimeoutMs),
    // Reconnects with the shared backoff (jitter keeps gateways that lost Redis together from reconnecting together).
    retryStrategy: (times) => backoffDelay(times, { baseMs: 100, maxMs: 2000 }),
    // Many concurrent requests share one round trip per event-loop tick.
    enableAutoPipelining: true,
    lazyConnect: false,
  });
  redis.on('error', (err: Error) => health.failed('connection', err));
  redis.on('ready', () => health.succeeded());
  return redis;
}

/** A Lua script run with EVALSHA (one round trip), loaded again with EVAL when Redis lost it (NOSCRIPT). */
export class RedisScript {
  private readonly sha: string;

  constructor(
    private readonly redis: Redis,
    private readonly lua: string,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await this.redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!String((err as Error).message).startsWith('NOSCRIPT')) throw err;
      return this.redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}
