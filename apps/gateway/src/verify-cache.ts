import { createHash } from 'node:crypto';
import type { AuthCache } from './auth-cache';

interface Entry {
  body: unknown;
  sessionId: string;
  userId: string;
  until: number;
}

const digest = (token: string) => createHash('sha256').update(token).digest('base64url');

/**
 * Caches positive session verifications (the answer of POST /sessions/verify) for at most `ttlMs`, only while
 * the credential change stream is live; a change of the session or of its user drops the entry at once.
 * Negative answers are never cached. Tokens are held only as SHA-256 digests.
 */
export class VerifyCache {
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

  /**
   * Drops what this gateway itself just changed (a revoked token, a changed user) without waiting for the
   * change stream, so the caller's next request already sees it.
   */
  dropToken(token: string): void {
    this.generation++;
    this.entries.delete(digest(token));
  }

  dropUser(userId: string): void {
    this.generation++;
    for (const [k, e] of this.entries) if (e.userId === userId) this.entries.delete(k);
  }

  snapshot(): number {
    return this.generation;
  }

  get(token: string): unknown {
    if (!this.changes.isLive) return undefined;
    const k = digest(token);
    const e = this.entries.get(k);
    if (!e) return undefined;
    if (e.until <= Date.now()) {
      this.entries.delete(k);
      return undefined;
    }
    return e.body;
  }

  set(token: string, body: unknown, sessionId: string, userId: string, sessionExpiresAt: number, generation: number): void {
    if (!this.changes.isLive || generation !== this.generation || this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(digest(token), { body, sessionId, userId, until: Math.min(Date.now() + this.ttlMs, sessionExpiresAt) });
  }
}
