import type { Decision } from './gcra';

/**
 * Where the rate-limit state lives: in this process (memory, the local profile) or in Redis (shared by every
 * gateway replica). Both run the same GCRA step (gcra.ts) and pass the same contract tests.
 */
export interface RateLimitStore {
  readonly kind: 'memory' | 'redis';
  /**
   * Counts one request of `subject` against `limit` per minute and says whether it may pass. `nowUs` comes
   * from an injected clock (tests); without it the memory store reads Date.now() and the Redis store the
   * Redis server's clock (one clock for every replica).
   */
  consume(subject: string, limit: number, nowUs?: number): Promise<Decision>;
}
