import type { Metrics } from '@secsvc/shared';
import type { CredentialChanges } from './changes';
import { cacheStats, FeedCache } from './feed-cache';

// UserCache: the roles and email of users the gateway knows only by id, kept while the change feed is live.

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
  private readonly users: FeedCache<UserFacts>;

  constructor(changes: CredentialChanges, ttlMs = 60_000, maxEntries = 10_000, metrics?: Metrics) {
    // Keys are <environment>:<user id>; a change names the user id.
    this.users = new FeedCache(changes, { ttlMs, maxEntries, changedBy: (id, _facts, key) => key.endsWith(`:${id}`), stats: cacheStats(metrics, 'user') });
  }

  /** The user's facts from the cache, or from `fetch` (then cached unless a change raced it). */
  get(environment: string, userId: string, fetch: () => Promise<UserFacts>): Promise<UserFacts> {
    return this.users.get(`${environment}:${userId}`, fetch);
  }

  /** A change made through this gateway: drop it now rather than when the stream reports it. */
  dropUser(userId: string): void {
    this.users.dropWhere((_facts, key) => key.endsWith(`:${userId}`));
  }
}
