// The one interface every credential cache of the gateway follows: identity's credential change feed
// (WatchCredentialChanges), as AuthCache relays it. Caches depend on this, never on AuthCache itself.

/** identity's credential change feed, as the caches follow it. */
export interface CredentialChanges {
  /** True while the change stream is live: only then may a cache serve or store an entry. */
  readonly isLive: boolean;
  /**
   * Calls `listener` with each changed id (key_, ses_, grt_, user_, cli_), and with undefined when the stream
   * is lost (drop everything). Returns the unsubscribe function.
   */
  onChange(listener: (id: string | undefined) => void): () => void;
}
