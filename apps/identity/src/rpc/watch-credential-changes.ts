import type { identity } from '@secsvc/proto';
import type { CallContext, ServerStream } from '@secsvc/shared';
import type { CredentialChangeFeed } from '../domain/credential-change-feed';

/** Streams "ready", then one "changed" per credential change, until the client goes or the feed resets. */
export const watchCredentialChanges =
  (feed: CredentialChangeFeed) =>
  (_req: identity.WatchCredentialChangesRequest, _call: CallContext, stream: ServerStream<identity.CredentialChange>): void => {
    let unsubscribe: (() => void) | undefined;
    let closed = false;
    stream.onClose(() => {
      closed = true;
      unsubscribe?.();
    });
    void feed.whenLive().then(() => {
      if (closed) return;
      unsubscribe = feed.subscribe({
        onChange: (id) => stream.write({ kind: 'changed', id }),
        onReset: () => stream.end(),
      });
      stream.write({ kind: 'ready', id: '' });
    });
  };
