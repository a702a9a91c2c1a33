import { intervalUs } from '../../src/rate-limit/gcra';
import type { RateLimitStore } from '../../src/rate-limit/store';

/** A whole second in µs (2026-11-14T22:13:20Z), so reset values are easy to state. */
export const T0 = 1_794_694_400_000_000;
const S = 1_000_000;

let n = 0;
/** A subject no other test has used (the Redis store keeps state between tests). */
export const fresh = (kind = 'key') => `${kind}:contract_${process.pid}_${Date.now()}_${n++}`;

/**
 * The behaviour every rate-limit store must have, run against the memory store and a real Redis: the same
 * GCRA decisions, to the microsecond, from an injected clock.
 */
export function describeStoreContract(name: string, getStore: () => RateLimitStore): void {
  describe(`rate-limit store contract: ${name}`, () => {
    it.each([1, 7, 100, 1000])('gives a fresh subject exactly its limit (%i) in a burst and refuses limit+1', async (limit) => {
      const store = getStore();
      const subject = fresh();
      const remaining: number[] = [];
      for (let i = 0; i < limit; i++) {
        const d = await store.consume(subject, limit, T0);
        expect(d.allowed).toBe(true);
        remaining.push(d.remaining);
      }
      expect(remaining).toEqual(Array.from({ length: limit }, (_, i) => limit - 1 - i));
      const refused = await store.consume(subject, limit, T0);
      expect(refused).toMatchObject({ allowed: false, limit, remaining: 0 });
      // Full again when the whole burst has drained: limit × interval after T0.
      expect(refused.reset).toBe(Math.ceil((T0 + limit * intervalUs(limit)) / S));
      // The next request is allowed one interval later.
      expect(refused.retryAfter).toBe(Math.max(1, Math.ceil(intervalUs(limit) / S)));
    });

    it('tells the truth in reset and retryAfter at the clock edges around the next interval', async () => {
      const store = getStore();
      const subject = fresh();
      const limit = 60; // one request per second: interval = 1 s exactly
      for (let i = 0; i < limit; i++) expect((await store.consume(subject, limit, T0)).allowed).toBe(true);
      // 1 µs before the interval has passed: still refused, and told to wait 1 s (rounded up).
      const early = await store.consume(subject, limit, T0 + S - 1);
      expect(early).toMatchObject({ allowed: false, remaining: 0, retryAfter: 1, reset: T0 / S + 60 });
      // Exactly at the interval: one request passes, the next does not.
      const onTime = await store.consume(subject, limit, T0 + S);
      expect(onTime).toMatchObject({ allowed: true, remaining: 0, reset: T0 / S + 61 });
      expect((await store.consume(subject, limit, T0 + S)).allowed).toBe(false);
      // When reset says the bucket is full, the whole limit is there again.
      const full = await store.consume(subject, limit, (T0 / S + 61) * S);
      expect(full).toMatchObject({ allowed: true, remaining: limit - 1 });
    });

    it('has no window edge: a burst at the end of one minute leaves nothing at the start of the next', async () => {
      const store = getStore();
      const subject = fresh();
      const endOfMinute = T0 + 60 * S - 1;
      for (let i = 0; i < 100; i++) expect((await store.consume(subject, 100, endOfMinute)).allowed).toBe(true);
      const d = await store.consume(subject, 100, endOfMinute + 2);
      expect(d.allowed).toBe(false);
    });

    it('does not count refused requests', async () => {
      const store = getStore();
      const subject = fresh();
      const limit = 100; // interval 0.6 s
      for (let i = 0; i < limit; i++) await store.consume(subject, limit, T0);
      for (let i = 0; i < 50; i++) expect((await store.consume(subject, limit, T0 + i * 1000)).allowed).toBe(false);
      expect((await store.consume(subject, limit, T0 + intervalUs(limit))).allowed).toBe(true);
      expect((await store.consume(subject, limit, T0 + intervalUs(limit))).allowed).toBe(false);
    });

    it('refills smoothly: after a full burst, one request per interval', async () => {
      const store = getStore();
      const subject = fresh();
      const limit = 10; // interval 6 s
      for (let i = 0; i < limit; i++) await store.consume(subject, limit, T0);
      const allowedAt = [];
      for (let s = 1; s <= 30; s++) if ((await store.consume(subject, limit, T0 + s * S)).allowed) allowedAt.push(s);
      expect(allowedAt).toEqual([6, 12, 18, 24, 30]);
    });

    it('keeps subjects apart', async () => {
      const store = getStore();
      const [a, b] = [fresh(), fresh()];
      expect((await store.consume(a, 1, T0)).allowed).toBe(true);
      expect((await store.consume(a, 1, T0)).allowed).toBe(false);
      expect((await store.consume(b, 1, T0)).allowed).toBe(true);
    });

    it('reports the first refusal of a subject once per window, not every refused request', async () => {
      const store = getStore();
      const subject = fresh();
      await store.consume(subject, 1, T0);
      const reports = [];
      for (let i = 0; i < 5; i++) reports.push((await store.consume(subject, 1, T0 + i * S)).report);
      expect(reports).toEqual([true, false, false, false, false]);
      // A minute after the first refusal a new window starts: the next refusal is reported again.
      expect(await store.consume(subject, 1, T0 + 61 * S)).toMatchObject({ allowed: true, report: false });
      expect(await store.consume(subject, 1, T0 + 61 * S)).toMatchObject({ allowed: false, report: true });
    });

    it('handles the largest custom limit (1,000,000 per minute: 60 µs apart)', async () => {
      const store = getStore();
      const subject = fresh();
      expect(await store.consume(subject, 1_000_000, T0)).toMatchObject({ allowed: true, remaining: 999_999, reset: Math.ceil((T0 + 60) / S) });
    });

    it('uses its own clock when none is injected', async () => {
      const store = getStore();
      const before = Math.floor(Date.now() / 1000);
      const d = await store.consume(fresh(), 100, undefined);
      expect(d).toMatchObject({ allowed: true, limit: 100, remaining: 99 });
      // reset = now + 0.6 s, rounded up (allowing 2 s of clock difference with a Redis server)
      expect(d.reset).toBeGreaterThanOrEqual(before - 2);
      expect(d.reset).toBeLessThanOrEqual(before + 3);
    });
  });
}
