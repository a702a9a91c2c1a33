import { EventEmitter } from 'node:events';
import { createLogger } from '@secsvc/shared';
import { AuthCache, type ChangeStream } from '../../src/auth/auth-cache';

/** identity's credential change stream, driven by the test. */
export class FakeStream extends EventEmitter implements ChangeStream {
  cancelled = false;
  cancel(): void {
    this.cancelled = true;
    this.emit('error');
  }
  push(kind: string, id = ''): void {
    this.emit('data', { kind, id });
  }
}

/** An AuthCache over fake change streams (every stream it opened, newest last), started. */
export function authCacheWithFakeStreams(ttlMs = 60_000, maxEntries = 100): { cache: AuthCache; streams: FakeStream[] } {
  const streams: FakeStream[] = [];
  const cache = new AuthCache(
    () => {
      const s = new FakeStream();
      streams.push(s);
      return s;
    },
    createLogger('test', 'silent'),
    ttlMs,
    maxEntries,
  );
  cache.start();
  return { cache, streams };
}
