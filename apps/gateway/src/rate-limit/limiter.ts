import { AppError } from '@secsvc/shared';
import type { Decision } from './gcra';
import { MemoryRateLimitStore } from './memory-store';
import type { RateLimitStore } from './store';

export type FailMode = 'open' | 'closed';

/** Told about every failed and every successful call of the store (see RedisHealth). */
export interface StoreHealth {
  failed(use: 'rate_limit', err: unknown): void;
  succeeded(): void;
}

export interface RateLimiterOptions {
  store: RateLimitStore;
  /**
   * When the store fails (Redis unreachable): `open` keeps serving, limited by a per-replica memory store
   * with the same limits (so the headers stay true for this replica); `closed` refuses with 503.
   */
  failMode?: FailMode;
  health?: StoreHealth;
  /** Injected clock in µs (tests). Without it the stores use their own clock (Redis: the server's). */
  clockUs?: () => number;
}

/** Thrown in fail-closed mode when the store cannot decide; carries the limit for the headers. */
export class RateLimitUnavailable extends AppError {
  constructor(readonly limit: number) {
    super('unavailable', 'Rate limiting is unavailable; retry shortly', [], 1);
  }
}

/** Decides each request with the store, and what to do when the store fails. */
export class RateLimiter {
  readonly failMode: FailMode;
  private readonly fallback = new MemoryRateLimitStore();

  constructor(private readonly options: RateLimiterOptions) {
    this.failMode = options.failMode ?? 'open';
  }

  /** Milliseconds on the limiter's clock (the injected one in tests). */
  nowMs(): number {
    return this.options.clockUs ? this.options.clockUs() / 1000 : Date.now();
  }

  async consume(subject: string, limit: number): Promise<Decision> {
    const now = this.options.clockUs?.();
    try {
      const decision = await this.options.store.consume(subject, limit, now);
      this.options.health?.succeeded();
      return decision;
    } catch (err) {
      this.options.health?.failed('rate_limit', err);
      if (this.failMode === 'closed') throw new RateLimitUnavailable(limit);
      return this.fallback.consume(subject, limit, now);
    }
  }
}
