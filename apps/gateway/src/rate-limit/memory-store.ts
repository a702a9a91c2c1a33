import { decisionOf, gcraStep, WINDOW_SECONDS, type Decision } from './gcra';
import type { RateLimitStore } from './store';

interface Bucket {
  /** Theoretical arrival time (µs). */
  tat: number;
  /** Until when a refusal has been reported (µs): rate_limit.exceeded once per subject per window. */
  reportedUntil: number;
}

const WINDOW_US = WINDOW_SECONDS * 1_000_000;
const SWEEP_EVERY_US = 10_000_000;

/**
 * The rate-limit state in this process: the local profile's store (one gateway; with GATEWAY_WORKERS > 1 the
 * primary's, which the workers ask: cluster-store.ts), and the fail-open fallback of the Redis store.
 * Entries whose bucket is full again are swept every 10 s, so memory stays bounded by
 * the subjects seen within the last minute.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  readonly kind = 'memory';
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep = 0;

  constructor(readonly clockUs: () => number = () => Date.now() * 1000) {}

  get size(): number {
    return this.buckets.size;
  }

  async consume(subject: string, limit: number, nowUs?: number): Promise<Decision> {
    return this.consumeSync(subject, limit, nowUs ?? this.clockUs());
  }

  consumeSync(subject: string, limit: number, now: number): Decision {
    if (now - this.lastSweep >= SWEEP_EVERY_US) this.sweep(now);
    const bucket = this.buckets.get(subject);
    const step = gcraStep(bucket?.tat ?? 0, now, limit);
    if (step.allowed) {
      if (bucket) bucket.tat = step.tat;
      else this.buckets.set(subject, { tat: step.tat, reportedUntil: 0 });
      return decisionOf(step, now, limit, false);
    }
    // A refusal means the bucket exists (a fresh subject always gets its first request).
    const b = bucket!;
    const report = b.reportedUntil <= now;
    if (report) b.reportedUntil = now + WINDOW_US;
    return decisionOf(step, now, limit, report);
  }

  private sweep(now: number): void {
    this.lastSweep = now;
    for (const [subject, b] of this.buckets) if (b.tat <= now && b.reportedUntil <= now) this.buckets.delete(subject);
  }
}
