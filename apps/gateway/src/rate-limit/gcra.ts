/**
 * The rate-limit algorithm: GCRA (generic cell rate algorithm, the virtual-scheduling form of a token bucket)
 * with a burst of exactly `limit` requests and a refill of `limit` requests per window (one minute).
 *
 * Why GCRA rather than a sliding window counter:
 * - it is exact: a fresh subject gets exactly `limit` requests at once and request limit+1 is refused, and
 *   every figure in the headers is a fact, not an estimate (a sliding window counter weights the previous
 *   window by assuming its requests were spread evenly, so its "remaining" is an approximation);
 * - one number per subject (the theoretical arrival time, TAT) and one atomic read-modify-write, which is
 *   what a single Lua round trip to Redis does cheaply; the key expires by itself when the bucket is full;
 * - no window edges: a client cannot double its rate by bursting at the end of one window and the start of
 *   the next, and refills are smooth (one request every window/limit) instead of all at once.
 * The price: over any 60 s span a subject can get at most 2 × limit − 1 requests (a full burst plus a
 * minute of refill); over longer spans the rate converges to `limit` per minute.
 *
 * All arithmetic is in whole microseconds so the Redis script (Lua doubles) and this TypeScript agree
 * exactly; the emission interval is rounded up, so the rate never exceeds the limit.
 */

export const WINDOW_SECONDS = 60;
const WINDOW_US = WINDOW_SECONDS * 1_000_000;

/** Time between two requests at the sustained rate, in whole microseconds (rounded up). */
export const intervalUs = (limit: number): number => Math.ceil(WINDOW_US / limit);

/** What one request is told. Times are Unix seconds (integers), as the headers carry them. */
export interface Decision {
  allowed: boolean;
  limit: number;
  /** Requests that would be allowed right now, after this one. */
  remaining: number;
  /** When the full limit is available again (X-RateLimit-Reset), Unix seconds rounded up. */
  reset: number;
  /** Refused only: seconds until the next request is allowed (Retry-After), at least 1. */
  retryAfter: number;
  /** Refused only: the first refusal of this subject in this window (report rate_limit.exceeded once). */
  report: boolean;
}

/** One GCRA step in microseconds: the new TAT to store (allowed only) and what the request is told. */
export interface Step {
  allowed: boolean;
  /** TAT after this request: to be stored when allowed (a refusal changes nothing). */
  tat: number;
  remaining: number;
  /** When the bucket is full again (µs). */
  fullAt: number;
  /** Refused only: when the next request is allowed (µs). */
  nextAt: number;
}

/** `tat` is the stored theoretical arrival time (0 for a fresh subject); `now` the current time (µs). */
export function gcraStep(tat: number, now: number, limit: number): Step {
  const t = intervalUs(limit);
  const burst = limit * t;
  const base = Math.max(tat, now);
  if (base + t - now <= burst) {
    const next = base + t;
    return { allowed: true, tat: next, remaining: Math.floor((burst - (next - now)) / t), fullAt: next, nextAt: now };
  }
  return { allowed: false, tat: base, remaining: Math.max(0, Math.floor((burst - (base - now)) / t)), fullAt: base, nextAt: base + t - burst };
}

/** The decision for a step taken at `now` (µs). */
export function decisionOf(step: Step, now: number, limit: number, report: boolean): Decision {
  return {
    allowed: step.allowed,
    limit,
    remaining: step.allowed ? step.remaining : 0,
    reset: Math.ceil(step.fullAt / 1_000_000),
    retryAfter: step.allowed ? 0 : Math.max(1, Math.ceil((step.nextAt - now) / 1_000_000)),
    report: !step.allowed && report,
  };
}
