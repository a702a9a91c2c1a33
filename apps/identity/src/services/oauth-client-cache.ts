import type { CredentialChangeFeed } from '../domain/credential-change-feed';
import type { OAuthClientRow } from '../repositories/oauth';

/**
 * OAuth clients by id for the token endpoints, so a grant does not read its client from the database every
 * time. Kept only while identity's credential change feed is live: oauth_clients' trigger announces every
 * update and deletion of a client (its id on the feed), which drops it at once; a lost feed drops everything
 * and nothing is served until it is live again; entries age out after `ttlMs`. A read that a change (or the
 * feed's loss) overtook is not kept. Rows hold only the secret's HMAC, as the table does: the secret itself is
 * still compared on every request, in constant time, by the caller.
 */
export class OAuthClientCache {
  private readonly rows = new Map<string, { row: OAuthClientRow; until: number }>();
  /** Bumped by every change and loss: a read that started before a bump is not kept. */
  private generation = 0;
  private live = false;

  constructor(
    private readonly feed: Pick<CredentialChangeFeed, 'whenLive' | 'subscribe'>,
    private readonly ttlMs = 60_000,
    private readonly maxEntries = 10_000,
  ) {
    this.follow();
  }

  private follow(): void {
    void this.feed.whenLive().then(() => {
      this.feed.subscribe({
        onChange: (id) => this.drop(id),
        onReset: () => {
          this.live = false;
          this.generation++;
          this.rows.clear();
          this.follow();
        },
      });
      this.live = true;
    });
  }

  /** Forgets the client `id` at once (changed through this process: the feed would say so a moment later). */
  drop(id: string): void {
    this.generation++;
    this.rows.delete(id);
  }

  /** The client `id`: cached, else `read`'s answer (kept when found and nothing changed meanwhile). */
  async get(id: string, read: () => Promise<OAuthClientRow | undefined>): Promise<OAuthClientRow | undefined> {
    if (this.live) {
      const hit = this.rows.get(id);
      if (hit && hit.until > Date.now()) return hit.row;
      if (hit) this.rows.delete(id);
    }
    const ticket = this.live ? this.generation : -1;
    const row = await read();
    if (row && this.live && ticket === this.generation) {
      if (this.rows.size >= this.maxEntries) this.rows.delete(this.rows.keys().next().value!);
      this.rows.set(id, { row, until: Date.now() + this.ttlMs });
    }
    return row;
  }
}
