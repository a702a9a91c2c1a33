import type { Metrics } from '@secsvc/shared';
import type { CredentialChanges } from './changes';
import { cacheStats, FeedCache, tokenDigest } from './feed-cache';

// The verify cache of POST /sessions/verify: its interface and answer type, and the in-process variant
// (redis-verify-cache.ts holds the one replicas share).

/** An answer of identity's VerifySession as the route returns it, and what caching it needs to know. */
export interface VerifyAnswer {
  body: unknown;
  /** Set for positive answers only (negative answers are never cached). */
  session?: { sessionId: string; userId: string; expiresAt: number };
}

/**
 * Cache of POST /sessions/verify answers: in memory on one gateway (MemoryVerifyCache), or in Redis shared
 * by every replica when REDIS_URL is set (RedisVerifyCache). Either way only positive answers are cached,
 * only while identity's change stream is live, keyed by a digest of the token (never the token), and a
 * change of the session or of its user drops the answer at once.
 */
export interface VerifyCache {
  /** The cached answer for `key` (environment:token), else `fetch`'s, cached unless a change raced it. */
  get(key: string, fetch: () => Promise<VerifyAnswer>): Promise<unknown>;
  /**
   * Drops what this gateway itself just changed (a revoked token, a changed user) without waiting for the
   * change stream, so the caller's next request already sees it.
   */
  dropToken(key: string): Promise<void>;
  dropUser(userId: string): Promise<void>;
}

/** The in-process verify cache (one gateway; the local profile). Bounded in size and age. */
export class MemoryVerifyCache implements VerifyCache {
  private readonly answers: FeedCache<VerifyAnswer>;

  constructor(changes: CredentialChanges, ttlMs = 60_000, maxEntries = 10_000, metrics?: Metrics) {
    // A change of the session or of its user drops the answer.
    this.answers = new FeedCache(changes, {
      ttlMs,
      maxEntries,
      changedBy: (id, a) => a.session?.sessionId === id || a.session?.userId === id,
      stats: cacheStats(metrics, 'session_verify'),
    });
  }

  async get(key: string, fetch: () => Promise<VerifyAnswer>): Promise<unknown> {
    // Only positive answers are kept, never past the session's own expiry.
    const answer = await this.answers.get(tokenDigest(key), fetch, (a) => a.session?.expiresAt ?? false);
    return answer.body;
  }

  async dropToken(key: string): Promise<void> {
    this.answers.drop(tokenDigest(key));
  }

  async dropUser(userId: string): Promise<void> {
    this.answers.dropWhere((a) => a.session?.userId === userId);
  }
}
