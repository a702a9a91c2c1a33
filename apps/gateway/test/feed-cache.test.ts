/** The skeleton of the credential caches (auth/feed-cache.ts) over a change feed the test drives. */
import type { CredentialChanges } from '../src/auth/changes';
import { FeedCache } from '../src/auth/feed-cache';

function feed() {
  const listeners = new Set<(id: string | undefined) => void>();
  const changes: CredentialChanges & { isLive: boolean; emit: (id: string | undefined) => void } = {
    isLive: true,
    onChange: (l) => (listeners.add(l), () => listeners.delete(l)),
    emit: (id) => listeners.forEach((l) => l(id)),
  };
  return changes;
}

/** Entries keyed by user id, voided by a change of that user. */
const cacheOver = (changes: CredentialChanges, ttlMs = 60_000, maxEntries = 10) =>
  new FeedCache<{ userId: string; n: number }>(changes, { ttlMs, maxEntries, changedBy: (id, v) => v.userId === id });

describe('FeedCache', () => {
  afterEach(() => jest.useRealTimers());

  it('serves a fetched answer again, and drops it when the feed names its user or is lost', async () => {
    const changes = feed();
    const cache = cacheOver(changes);
    let calls = 0;
    const fetch = (userId: string) => async () => ({ userId, n: ++calls });
    await cache.get('a', fetch('user_a'));
    await cache.get('b', fetch('user_b'));
    expect(await cache.get('a', fetch('user_a'))).toEqual({ userId: 'user_a', n: 1 });
    changes.emit('user_a');
    expect(cache.peek('a')).toBeUndefined();
    expect(cache.peek('b')).toBeDefined();
    changes.emit(undefined);
    expect(cache.size).toBe(0);
  });

  it('keeps nothing a change overtook, nothing fetched while the feed was down, and nothing `expiry` refuses', async () => {
    const changes = feed();
    const cache = cacheOver(changes);
    await cache.get('a', async () => (changes.emit('user_x'), { userId: 'user_a', n: 1 }));
    changes.isLive = false;
    const ticket = cache.ticket;
    changes.isLive = true;
    cache.store('b', { userId: 'user_b', n: 2 }, ticket);
    await cache.get('c', async () => ({ userId: 'user_c', n: 3 }), () => false);
    expect(cache.size).toBe(0);
    // The feed down: nothing is served either.
    await cache.get('d', async () => ({ userId: 'user_d', n: 4 }));
    changes.isLive = false;
    expect(cache.peek('d')).toBeUndefined();
  });

  it('ages entries out by the TTL or their own expiry, and evicts the oldest beyond its bound', async () => {
    jest.useFakeTimers();
    const cache = cacheOver(feed(), 1_000, 2);
    cache.store('a', { userId: 'user_a', n: 1 }, cache.ticket);
    cache.store('b', { userId: 'user_b', n: 2 }, cache.ticket, Date.now() + 100);
    jest.advanceTimersByTime(150);
    expect([cache.peek('a')?.n, cache.peek('b')]).toEqual([1, undefined]);
    cache.store('c', { userId: 'user_c', n: 3 }, cache.ticket);
    cache.store('d', { userId: 'user_d', n: 4 }, cache.ticket);
    expect([cache.size, cache.peek('a'), cache.peek('d')?.n]).toEqual([2, undefined, 4]);
    jest.advanceTimersByTime(1_000);
    expect(cache.peek('d')).toBeUndefined();
  });

  it('drops what this gateway changed at once, voiding the lookups in flight', async () => {
    const cache = cacheOver(feed());
    cache.store('a', { userId: 'user_a', n: 1 }, cache.ticket);
    const ticket = cache.ticket;
    cache.drop('a');
    cache.store('a', { userId: 'user_a', n: 2 }, ticket);
    expect(cache.peek('a')).toBeUndefined();
    cache.store('b', { userId: 'user_b', n: 3 }, cache.ticket);
    cache.dropWhere((v) => v.userId === 'user_b');
    expect(cache.size).toBe(0);
  });
});
