import type { Principal } from '../src/context';
import { authCacheWithFakeStreams } from './support/fake-stream';

const principal = (id: string): Principal => ({ type: 'api_key', id, credentialId: id, keyType: 'secret', environment: 'live', plan: 'free' });
const KEY_A = 'svc_sk_' + 'a'.repeat(40);
const KEY_B = 'svc_sk_' + 'b'.repeat(40);

const setup = authCacheWithFakeStreams;

describe('AuthCache', () => {
  afterEach(() => jest.useRealTimers());

  it('caches nothing until the change stream says ready', () => {
    const { cache, streams } = setup();
    cache.set(KEY_A, principal('key_a'), undefined, cache.generation);
    expect(cache.get(KEY_A)).toBeUndefined();
    streams[0]!.push('ready');
    cache.set(KEY_A, principal('key_a'), undefined, cache.generation);
    expect(cache.get(KEY_A)).toEqual(principal('key_a'));
    expect(cache.get(KEY_B)).toBeUndefined();
  });

  it('drops the entries of a changed key at once and keeps the others', () => {
    const { cache, streams } = setup();
    streams[0]!.push('ready');
    cache.set(KEY_A, principal('key_a'), undefined, cache.generation);
    cache.set(KEY_B, principal('key_b'), undefined, cache.generation);
    streams[0]!.push('changed', 'key_a');
    expect(cache.get(KEY_A)).toBeUndefined();
    expect(cache.get(KEY_B)).toEqual(principal('key_b'));
  });

  it('drops a stepped-up session (auth:<id>) without refusing its access tokens; a revocation refuses them', () => {
    const { cache, streams } = setup();
    streams[0]!.push('ready');
    const session = (id: string): Principal => ({ type: 'user', id: 'user_a', credentialId: id, keyType: 'session', environment: 'live', plan: 'pro' });
    const [TOKEN_A, TOKEN_B] = ['sst_' + 'a'.repeat(43), 'sst_' + 'b'.repeat(43)];
    cache.set(TOKEN_A, session('ses_a'), undefined, cache.generation);
    cache.set(TOKEN_B, session('ses_b'), undefined, cache.generation);
    streams[0]!.push('changed', 'auth:ses_a');
    expect(cache.get(TOKEN_A)).toBeUndefined();
    expect(cache.get(TOKEN_B)).toEqual(session('ses_b'));
    expect(cache.isSessionRevoked('ses_a')).toBe(false);
    // The gateway that answered the step-up drops it itself, before the feed says so.
    cache.set(TOKEN_B, session('ses_b'), undefined, cache.generation);
    cache.authenticationChanged('ses_b');
    expect(cache.get(TOKEN_B)).toBeUndefined();
    expect(cache.isSessionRevoked('ses_b')).toBe(false);
    streams[0]!.push('changed', 'ses_a');
    expect(cache.isSessionRevoked('ses_a')).toBe(true);
  });

  it('does not cache a lookup that raced a change', () => {
    const { cache, streams } = setup();
    streams[0]!.push('ready');
    const before = cache.generation;
    streams[0]!.push('changed', 'key_a'); // revocation arrives while the lookup is in flight
    cache.set(KEY_A, principal('key_a'), undefined, before);
    expect(cache.get(KEY_A)).toBeUndefined();
  });

  it('forgets everything when the stream ends and resubscribes', () => {
    jest.useFakeTimers();
    const { cache, streams } = setup();
    streams[0]!.push('ready');
    cache.set(KEY_A, principal('key_a'), undefined, cache.generation);
    streams[0]!.emit('end');
    expect(cache.isLive).toBe(false);
    expect(cache.size).toBe(0);
    expect(cache.get(KEY_A)).toBeUndefined();
    jest.advanceTimersByTime(300);
    expect(streams).toHaveLength(2);
    streams[1]!.push('ready');
    expect(cache.isLive).toBe(true);
  });

  it('honours the TTL and the key expiry, whichever comes first', () => {
    jest.useFakeTimers();
    const { cache, streams } = setup(1_000);
    streams[0]!.push('ready');
    cache.set(KEY_A, principal('key_a'), undefined, cache.generation);
    cache.set(KEY_B, principal('key_b'), Date.now() + 100, cache.generation);
    jest.advanceTimersByTime(150);
    expect(cache.get(KEY_B)).toBeUndefined();
    expect(cache.get(KEY_A)).toBeDefined();
    jest.advanceTimersByTime(1_000);
    expect(cache.get(KEY_A)).toBeUndefined();
  });

  it('stays within its size bound, evicting the oldest entry', () => {
    const { cache, streams } = setup(60_000, 2);
    streams[0]!.push('ready');
    const keys = [KEY_A, KEY_B, 'svc_sk_' + 'c'.repeat(40)];
    keys.forEach((k, i) => cache.set(k, principal(`key_${i}`), undefined, cache.generation));
    expect(cache.size).toBe(2);
    expect(cache.get(KEY_A)).toBeUndefined();
    expect(cache.get(keys[2]!)).toBeDefined();
  });

  it('stops without reconnecting', () => {
    jest.useFakeTimers();
    const { cache, streams } = setup();
    streams[0]!.push('ready');
    cache.stop();
    expect(streams[0]!.cancelled).toBe(true);
    jest.advanceTimersByTime(10_000);
    expect(streams).toHaveLength(1);
    expect(cache.isLive).toBe(false);
  });
});
