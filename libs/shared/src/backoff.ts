/**
 * The one retry schedule of the code base: exponential backoff with jitter. Each failure waits
 * `baseMs · 2^(failures − 1)` capped at `maxMs`, scaled by a random factor in [1 − jitter, 1 + jitter), so
 * replicas that failed together do not retry together. A success resets it.
 */
export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
  /** The spread around each delay, as a fraction (default 0.2: ±20 %). */
  jitter?: number;
  /** Random source in [0, 1) (tests pin it). */
  random?: () => number;
}

/** The wait before retry number `failures` (1 = after the first failure). */
export function backoffDelay(failures: number, o: BackoffOptions): number {
  const jitter = o.jitter ?? 0.2;
  const exponential = Math.min(o.maxMs, o.baseMs * 2 ** Math.max(0, failures - 1));
  return Math.round(exponential * (1 - jitter + 2 * jitter * (o.random ?? Math.random)()));
}

/** A retry loop's state: `next()` after each failure gives the wait, `reset()` after a success. */
export class Backoff {
  private failures = 0;

  constructor(private readonly o: BackoffOptions) {}

  /** Failures since the last success. */
  get attempts(): number {
    return this.failures;
  }

  next(): number {
    return backoffDelay(++this.failures, this.o);
  }

  reset(): void {
    this.failures = 0;
  }
}
