import { createHash } from 'node:crypto';
import type { Metrics } from '@secsvc/shared';
import type { CredentialChanges } from './changes';

// The skeleton the gateway's credential caches share (API keys and sessions, verify answers, users, OAuth
// clients): a bounded, aging map served only while the change feed is live, emptied by the changes that
// touch it, and never written with an answer a change overtook.

/** The cache key of a secret (API key, token, client secret): a SHA-256 digest, so no cache holds the secret. */
export const tokenDigest = (secret: string) => createHash('sha256').update(secret).digest('base64url');

/** Counts a cache's lookups: credential_cache_requests_total{cache,result} (result hit or miss). */
export interface CacheStats {
  hit(): void;
  miss(): void;
}

const NO_STATS: CacheStats = { hit: () => undefined, miss: () => undefined };

/** The lookups of cache `cache` (api_key, session, jwt, session_verify, user...), counted in `metrics` (none: not counted). */
export function cacheStats(metrics: Metrics | undefined, cache: string): CacheStats {
  if (!metrics) return NO_STATS;
  const counter = metrics.counter('credential_cache_requests_total', 'Credential cache lookups by cache and result (hit, miss)', ['cache', 'result']);
  const hits = counter.labels({ cache, result: 'hit' });
  const misses = counter.labels({ cache, result: 'miss' });
  return { hit: () => hits.inc(), miss: () => misses.inc() };
}

export interface FeedCacheOptions<V> {
  /** How long an entry is served at most (0: nothing is cached). */
  ttlMs: number;
  /** Beyond this the oldest entry is evicted. */
  maxEntries: number;
  /** Whether a change of the credential or user `id` voids this entry. */
  changedBy: (id: string, value: V, key: string) => boolean;
  /** Counts the lookups of `get` (peek is the caller's to count). */
  stats?: CacheStats;
}

/**
 * Entries are used only while the feed is live; a change drops the entries it touches at once and a lost
 * feed drops everything. A lookup takes a ticket before it asks identity: its answer is stored only if the
 * feed was live then and nothing changed since (a generation check), so no answer a revocation overtook is kept.
 */
export class FeedCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  /** Bumped by every change or drop: a ticket taken before the bump is void. */
  private generation = 0;

  constructor(
    private readonly changes: CredentialChanges,
    private readonly options: FeedCacheOptions<V>,
  ) {
    changes.onChange((id) => (id === undefined ? this.clear() : this.dropWhere((value, key) => options.changedBy(id, value, key))));
  }

  get size(): number {
    return this.entries.size;
  }

  /** Taken before a lookup and handed to `store` (-1 while the feed is not live: such answers are not kept). */
  get ticket(): number {
    return this.changes.isLive ? this.generation : -1;
  }

  /** The unexpired entry of `key`, while the feed is live. */
  peek(key: string): V | undefined {
    if (!this.changes.isLive) return undefined;
    const entry = this.entries.get(key);
    if (entry && entry.until > Date.now()) return entry.value;
    if (entry) this.entries.delete(key);
    return undefined;
  }

  /** Keeps what a lookup that took `ticket` found, for the TTL or until `expiresAt`, whichever is first. */
  store(key: string, value: V, ticket: number, expiresAt = Infinity): void {
    if (!this.changes.isLive || ticket !== this.generation || this.options.ttlMs <= 0) return;
    if (this.entries.size >= this.options.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, { value, until: Math.min(Date.now() + this.options.ttlMs, expiresAt) });
  }

  /** The entry of `key`, else `fetch`'s answer, kept until `expiry` says (false: not kept, e.g. a negative answer). */
  async get(key: string, fetch: () => Promise<V>, expiry: (value: V) => number | false = () => Infinity): Promise<V> {
    const hit = this.peek(key);
    if (hit !== undefined) {
      this.options.stats?.hit();
      return hit;
    }
    this.options.stats?.miss();
    const ticket = this.ticket;
    const value = await fetch();
    const until = expiry(value);
    if (until !== false) this.store(key, value, ticket, until);
    return value;
  }

  /** Drops one entry (a change made through this gateway) and voids the lookups in flight. */
  drop(key: string): void {
    this.generation++;
    this.entries.delete(key);
  }

  /** Drops the entries `matches` names and voids the lookups in flight. */
  dropWhere(matches: (value: V, key: string) => boolean): void {
    this.generation++;
    for (const [key, entry] of this.entries) if (matches(entry.value, key)) this.entries.delete(key);
  }

  clear(): void {
    this.generation++;
    this.entries.clear();
  }
}
