import type { identity } from '@secsvc/proto';
import type { CallContext, Pool, ServerStream } from '@secsvc/shared';
import type { CredentialChangeFeed } from '../domain/credential-change-feed';

/**
 * Streams the sessions and OAuth grants revoked or deleted within the access-token lifetime (a new gateway must refuse their
 * JWTs too), then "ready", then one "changed" per credential change, until the client goes or the feed resets.
 * Subscribing before the snapshot means no change falls between the two.
 */
export const watchCredentialChanges =
  (feed: CredentialChangeFeed, pool: Pool, accessTokenTtlSeconds: number) =>
  (_req: identity.WatchCredentialChangesRequest, _call: CallContext, stream: ServerStream<identity.CredentialChange>): void => {
    let unsubscribe: (() => void) | undefined;
    let closed = false;
    stream.onClose(() => {
      closed = true;
      unsubscribe?.();
    });
    void feed.whenLive().then(async () => {
      if (closed) return;
      unsubscribe = feed.subscribe({
        onChange: (id) => stream.write({ kind: 'changed', id }),
        onReset: () => stream.end(),
      });
      try {
        const { rows } = await pool.query<{ id: string }>(
          `SELECT id FROM sessions WHERE revoked_at > now() - make_interval(secs => $1)
           UNION ALL SELECT id FROM ended_sessions WHERE ended_at > now() - make_interval(secs => $1)
           UNION ALL SELECT id FROM oauth_grants WHERE revoked_at > now() - make_interval(secs => $1)`,
          [accessTokenTtlSeconds + 60],
        );
        for (const r of rows) stream.write({ kind: 'changed', id: r.id });
        stream.write({ kind: 'ready', id: '' });
      } catch {
        stream.end();
      }
    });
  };
