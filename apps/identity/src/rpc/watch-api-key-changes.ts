import type { identity } from '@secsvc/proto';
import type { CallContext, ServerStream } from '@secsvc/shared';
import type { KeyChangeFeed } from '../domain/key-change-feed';

/** Streams "ready", then one "changed" per API key change, until the client goes or the feed resets. */
export const watchApiKeyChanges =
  (feed: KeyChangeFeed) =>
  (_req: identity.WatchApiKeyChangesRequest, _call: CallContext, stream: ServerStream<identity.ApiKeyChange>): void => {
    let unsubscribe: (() => void) | undefined;
    let closed = false;
    stream.onClose(() => {
      closed = true;
      unsubscribe?.();
    });
    void feed.whenLive().then(() => {
      if (closed) return;
      unsubscribe = feed.subscribe({
        onChange: (keyId) => stream.write({ kind: 'changed', keyId }),
        onReset: () => stream.end(),
      });
      stream.write({ kind: 'ready', keyId: '' });
    });
  };
