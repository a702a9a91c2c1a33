import { createHash } from 'node:crypto';
import type { AuthCache } from './auth-cache';

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

/** The cache key of a token: a SHA-256 digest, so neither memory nor Redis ever holds the token. */
export const tokenDigest = (key: string) => createHash('sha256').update(key).digest('base64url');

interface Entry {
  body: unknown;
  sessionId: string;
  userId: string;
  until: number;
}

/** The in-process verify cache (one gateway; the local profile). Bounded in size and age. */
export class MemoryVerifyCache implements VerifyCache {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;

  constructor(
    private readonly changes: AuthCache,
    private readonly ttlMs = 60_000,
    private readonly maxEntries = 10_000,
  ) {
    changes.onChange((id) => {
      this.generation++;
      if (id === undefined) return this.entries.clear();
      for (const [k, e] of this.entries) if (e.sessionId === id || e.userId === id) this.entries.delete(k);
    });
  }

  async get(key: string, fetch: () => Promise<VerifyAnswer>): Promise<unknown> {
    const k = tokenDigest(key);
    if (this.changes.isLive) {
      const e = this.entries.get(k);
      if (e && e.until > Date.now()) return e.body;
      if (e) this.entries.delete(k);
    }
    const generation = this.generation;
    const answer = await fetch();
    const s = answer.session;
    if (s && this.changes.isLive && generation === this.generation && this.ttlMs > 0) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(k, { body: answer.body, sessionId: s.sessionId, userId: s.userId, until: Math.min(Date.now() + this.ttlMs, s.expiresAt) });
    }
    return answer.body;
  }

  async dropToken(key: string): Promise<void> {
    this.generation++;
    this.entries.delete(tokenDigest(key));
  }

  async dropUser(userId: string): Promise<void> {
    this.generation++;
    for (const [k, e] of this.entries) if (e.userId === userId) this.entries.delete(k);
  }
}
