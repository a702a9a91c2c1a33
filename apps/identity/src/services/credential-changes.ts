import type { CredentialChangeFeed } from '../domain/credential-change-feed';
import type { credentialChangesRepository } from '../repositories/credential-changes';
import type { Database } from './ports';

export interface CredentialChangesDeps {
  db: Database;
  feed: Pick<CredentialChangeFeed, 'whenLive' | 'subscribe'>;
  changes: typeof credentialChangesRepository;
  /** How long an access token lives: a credential ended longer ago (plus a minute) has no token left to refuse. */
  accessTokenTtlSeconds: number;
}

/** Where a watch goes: one id per changed credential, `ready` once the snapshot is through, `end` when it stops. */
export interface CredentialChangeSink {
  changed(id: string): void;
  ready(): void;
  end(): void;
}

/** The credential changes the gateways watch, so they stop trusting cached credentials at once. */
export class CredentialChangesService {
  constructor(private readonly deps: CredentialChangesDeps) {}

  /**
   * Once the feed is live: every session and OAuth grant ended within the access-token lifetime (a new gateway
   * must refuse their JWTs too), then ready, then each change as it comes, until the feed resets (end) or the
   * returned stop is called. Subscribing before the snapshot means no change falls between the two.
   */
  watch(sink: CredentialChangeSink): () => void {
    const { db, feed, changes, accessTokenTtlSeconds } = this.deps;
    let unsubscribe: (() => void) | undefined;
    let stopped = false;
    void feed.whenLive().then(async () => {
      if (stopped) return;
      unsubscribe = feed.subscribe({ onChange: (id) => sink.changed(id), onReset: () => sink.end() });
      try {
        for (const id of await changes.recentlyEnded(db.pool, accessTokenTtlSeconds + 60)) sink.changed(id);
        sink.ready();
      } catch {
        sink.end();
      }
    });
    return () => {
      stopped = true;
      unsubscribe?.();
    };
  }
}
