import type { AuthCache } from './auth-cache';

/** What the gateway needs of a user it only knows by id: roles (the simulator) and email (audit actors). */
export interface UserFacts {
  roles: string[];
  email: string;
}

/**
 * Users' roles and email for callers that name a user by id (the simulator) or whose credential does not carry
 * the email (OAuth access tokens without the email scope), cached while the credential change stream is live;
 * a change of the user (roles, email, deletion) drops the entry at once. Bounded in size and age.
 */
export class UserCache {
  private readonly entries = new Map<string, { facts: UserFacts; until: number }>();
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

  /** The user's facts from the cache, or from `fetch` (then cached unless a change raced it). */
  async get(environment: string, userId: string, fetch: () => Promise<UserFacts>): Promise<UserFacts> {
    const key = `${environment}:${userId}`;
    const hit = this.changes.isLive ? this.entries.get(key) : undefined;
    if (hit && hit.until > Date.now()) return hit.facts;
    const generation = this.generation;
    const facts = await fetch();
    if (this.changes.isLive && generation === this.generation && this.ttlMs > 0) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { facts, until: Date.now() + this.ttlMs });
    }
    return facts;
  }

  /** A change made through this gateway: drop it now rather than when the stream reports it. */
  dropUser(userId: string): void {
    this.generation++;
    for (const k of this.entries.keys()) if (k.endsWith(`:${userId}`)) this.entries.delete(k);
  }
}
