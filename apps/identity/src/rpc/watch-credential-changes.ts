import type { identity } from '@secsvc/proto';
import type { CallContext, ServerStream } from '@secsvc/shared';
import type { CredentialChangesService } from '../services/credential-changes';

/**
 * Streams the sessions and OAuth grants revoked or deleted within the access-token lifetime, then "ready", then
 * one "changed" per credential change, until the client goes or the feed resets.
 */
export const watchCredentialChanges =
  (changes: CredentialChangesService) =>
  (_req: identity.WatchCredentialChangesRequest, _call: CallContext, stream: ServerStream<identity.CredentialChange>): void => {
    const stop = changes.watch({
      changed: (id) => stream.write({ kind: 'changed', id }),
      ready: () => stream.write({ kind: 'ready', id: '' }),
      end: () => stream.end(),
    });
    stream.onClose(stop);
  };
