import { Backoff, backoffDelay } from './backoff';

describe('backoff with jitter', () => {
  it('doubles from the base up to the maximum', () => {
    const b = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0.5 });
    expect([1, 2, 3, 4, 5, 6].map(() => b.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(b.attempts).toBe(6);
  });

  it('starts again from the base after a success', () => {
    const b = new Backoff({ baseMs: 100, maxMs: 1000, random: () => 0.5 });
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(100);
  });

  it('spreads each delay by the jitter fraction around it', () => {
    expect(backoffDelay(3, { baseMs: 100, maxMs: 10_000, random: () => 0 })).toBe(320);
    expect(backoffDelay(3, { baseMs: 100, maxMs: 10_000, random: () => 0.999999 })).toBe(480);
    expect(backoffDelay(1, { baseMs: 100, maxMs: 10_000, jitter: 0.5, random: () => 0 })).toBe(50);
    expect(backoffDelay(1, { baseMs: 100, maxMs: 10_000, jitter: 0, random: () => 0.9 })).toBe(100);
  });
});
