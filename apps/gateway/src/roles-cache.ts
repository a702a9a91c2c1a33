import type { AuthCache } from './auth-cache';

/**
 * Users' roles for the simulator (it evaluates on behalf of a user id), cached while the credential change
 * stream is live; a change of the user (roles, deletion) drops the entry at once. Bounded in size and age.
 */
export class RolesCache {
  private readonly entries = new Map<string, { roles: string[]; until: number }>();
  private generation = 0;

  constructor(
    private readonly changes: AuthCache,
    private readonly ttlMs = 60_000,
    private readonly maxEntries = 10_000,
  ) {
    changes.onChange((id) => {
      this.generation++;
      if (id === undefined) this.entries.clear();
      else for (const k of this.entries.keys()) if (k.endsWith(`:${id}`)) this.entries.delete(k);
    });
  }

  /** The user's roles from the cache, or from `fetch` (then cached unless a change raced it). */
  async get(environment: string, userId: string, fetch: () => Promise<string[]>): Promise<string[]> {
    const key = `${environment}:${userId}`;
    const hit = this.changes.isLive ? this.entries.get(key) : undefined;
    if (hit && hit.until > Date.now()) return hit.roles;
    const generation = this.generation;
    const roles = await fetch();
    if (this.changes.isLive && generation === this.generation && this.ttlMs > 0) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { roles, until: Date.now() + this.ttlMs });
    }
    return roles;
  }

  /** A change made through this gateway: drop it now rather than when the stream reports it. */
  dropUser(userId: string): void {
    this.generation++;
    for (const k of this.entries.keys()) if (k.endsWith(`:${userId}`)) this.entries.delete(k);
  }
}
