import type { CredentialChangeListener } from '../domain/credential-change-feed';
import type { OAuthClientRow } from '../repositories/oauth';
import { OAuthClientCache } from './oauth-client-cache';

/** A feed the test drives: live or not, changes and resets sent to the subscribers. */
function fakeFeed() {
  const listeners = new Set<CredentialChangeListener>();
  let waiters: (() => void)[] = [];
  const feed = {
    live: false,
    whenLive: () => (feed.live ? Promise.resolve() : new Promise<void>((r) => waiters.push(r))),
    subscribe: (l: CredentialChangeListener) => (listeners.add(l), () => listeners.delete(l)),
    goLive: async () => {
      feed.live = true;
      for (const w of waiters.splice(0)) w();
      waiters = [];
      await new Promise((r) => setImmediate(r));
    },
    change: (id: string) => listeners.forEach((l) => l.onChange(id)),
    reset: () => {
      feed.live = false;
      const all = [...listeners];
      listeners.clear();
      all.forEach((l) => l.onReset());
    },
  };
  return feed;
}

const row = (id: string, name: string) => ({ id, name }) as OAuthClientRow;

describe('OAuthClientCache', () => {
  it('keeps clients only while the feed is live, and drops one on its change, all on a reset', async () => {
    const feed = fakeFeed();
    const cache = new OAuthClientCache(feed);
    let reads = 0;
    const read = (name: string) => async () => (reads++, row('cli_a', name));
    // Not live yet: every lookup reads.
    await cache.get('cli_a', read('v1'));
    expect((await cache.get('cli_a', read('v2')))?.name).toBe('v2');
    await feed.goLive();
    await cache.get('cli_a', read('v3'));
    expect((await cache.get('cli_a', read('v4')))?.name).toBe('v3');
    expect(reads).toBe(3);
    feed.change('cli_other');
    expect((await cache.get('cli_a', read('v5')))?.name).toBe('v3');
    feed.change('cli_a');
    expect((await cache.get('cli_a', read('v6')))?.name).toBe('v6');
    // Lost: nothing served or kept until the feed is live again.
    feed.reset();
    expect((await cache.get('cli_a', read('v7')))?.name).toBe('v7');
    expect((await cache.get('cli_a', read('v8')))?.name).toBe('v8');
    await feed.goLive();
    await cache.get('cli_a', read('v9'));
    expect((await cache.get('cli_a', read('v10')))?.name).toBe('v9');
    // Unknown clients are not kept.
    await cache.get('cli_b', async () => undefined);
    expect((await cache.get('cli_b', async () => row('cli_b', 'now')))?.name).toBe('now');
  });

  it('does not keep a read that a change overtook, and ages entries out', async () => {
    const feed = fakeFeed();
    const cache = new OAuthClientCache(feed, 1_000);
    await feed.goLive();
    await cache.get('cli_a', async () => {
      feed.change('cli_a'); // committed while the read was under way
      return row('cli_a', 'stale');
    });
    expect((await cache.get('cli_a', async () => row('cli_a', 'fresh')))?.name).toBe('fresh');
    cache.drop('cli_a');
    expect((await cache.get('cli_a', async () => row('cli_a', 'after drop')))?.name).toBe('after drop');
    const now = Date.now();
    jest.spyOn(Date, 'now').mockReturnValue(now + 1_001);
    expect((await cache.get('cli_a', async () => row('cli_a', 'aged')))?.name).toBe('aged');
    jest.restoreAllMocks();
  });
});
