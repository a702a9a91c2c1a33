import type { IdentityContext } from '../../src/context';
import { masterKey, SigningKeyStore } from '../../src/domain/signing-keys';
import { identityService, type IdentityDeps, type IdentityRpc } from '../../src/rpc';

/** A credential change feed that never goes live (for tests that do not watch). */
const idleFeed: IdentityDeps['feed'] = { whenLive: () => new Promise<void>(() => undefined), subscribe: () => () => undefined };

const keysOf = new WeakMap<object, SigningKeyStore>();

/**
 * Every IdentityService RPC over `ctx`, as main.ts registers them; the signing keys default to a store over
 * the context's pool (one per pool) and the feed to one that never goes live.
 */
export function identityRpc(ctx: IdentityContext, deps: Partial<IdentityDeps> = {}): IdentityRpc {
  let signingKeys = deps.signingKeys ?? keysOf.get(ctx.pool);
  if (!signingKeys) keysOf.set(ctx.pool, (signingKeys = new SigningKeyStore(ctx.pool, masterKey(undefined, ctx.config.SERVER_SECRET))));
  return identityService(ctx, { signingKeys, feed: deps.feed ?? idleFeed });
}
