import { Backoff, type Logger, type Metrics } from '@secsvc/shared';
import type { Principal } from '../context';
import type { CredentialChanges } from './changes';
import { cacheStats, FeedCache, tokenDigest, type CacheStats } from './feed-cache';

// AuthCache: follows identity's credential change stream (the CredentialChanges every other cache listens
// to), caches API key and session authentications, and remembers recently revoked sessions for JWTs.

/** The part of a gRPC readable stream the cache uses (identity's WatchCredentialChanges). */
export interface ChangeStream {
  on(event: 'data', fn: (msg: { kind: string; id: string }) => void): unknown;
  on(event: 'error' | 'end', fn: () => void): unknown;
  cancel(): void;
}

/**
 * Caches authentications (API keys, session tokens) so most requests make one gRPC call instead of two,
 * without ever serving a revoked credential: entries are used only while identity's change stream is live, a change drops that key's
 * entries at once, and a lost stream drops everything until a new stream is ready. Keys are held only as
 * SHA-256 digests. A lookup that raced a change is not cached (generation check).
 */
export class AuthCache implements CredentialChanges {
  private readonly revokedSessions = new Map<string, number>();
  private readonly listeners = new Set<(id: string | undefined) => void>();
  private stream: ChangeStream | undefined;
  private live = false;
  private stopped = false;
  private readonly backoff = new Backoff({ baseMs: 250, maxMs: 5_000 });
  private readonly principals: FeedCache<Principal>;
  private readonly stats: { apiKey: CacheStats; session: CacheStats };

  constructor(
    private readonly open: () => ChangeStream,
    private readonly logger: Logger,
    ttlMs = 60_000,
    maxEntries = 10_000,
    /** How long a revoked session id is remembered: the access-token lifetime plus leeway. */
    private readonly revokedRetentionMs = 17 * 60_000,
    metrics?: Metrics,
  ) {
    this.stats = { apiKey: cacheStats(metrics, 'api_key'), session: cacheStats(metrics, 'session') };
    this.principals = new FeedCache(this, { ttlMs, maxEntries, changedBy: (id, principal) => principal.credentialId === id });
  }

  /** Taken before a lookup and handed to `set`: a lookup that raced a change (or the stream's loss) is not cached. */
  get generation(): number {
    return this.principals.ticket;
  }

  /** True when the session was revoked (or ended) recently enough for its access tokens to still be unexpired. */
  isSessionRevoked(sessionId: string): boolean {
    const until = this.revokedSessions.get(sessionId);
    if (until === undefined) return false;
    if (until > Date.now()) return true;
    this.revokedSessions.delete(sessionId);
    return false;
  }

  get isLive(): boolean {
    return this.live;
  }

  get size(): number {
    return this.principals.size;
  }

  start(): void {
    if (this.stopped || this.stream) return;
    const stream = this.open();
    this.stream = stream;
    stream.on('data', (msg) => {
      if (msg.kind === 'ready') {
        this.live = true;
        this.backoff.reset();
      } else {
        this.invalidate(msg.id);
      }
    });
    stream.on('error', () => this.lost(stream));
    stream.on('end', () => this.lost(stream));
  }

  private lost(stream: ChangeStream): void {
    if (stream !== this.stream) return;
    this.stream = undefined;
    this.live = false;
    // The next stream replays the recent revocations before it is ready.
    this.revokedSessions.clear();
    for (const l of this.listeners) l(undefined);
    if (this.stopped) return;
    const retryMs = this.backoff.next();
    this.logger.warn({ retryMs }, 'API key change stream lost; authenticating every request until it is back');
    const timer = setTimeout(() => this.start(), retryMs);
    timer.unref();
  }

  /**
   * Follows the change stream: called with each changed id (key_, ses_, user_), and with undefined when the
   * stream is lost (drop everything). Returns the unsubscribe function.
   */
  onChange(listener: (id: string | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * This gateway changed how a session authenticated (a step-up it just answered): its cached principals are
   * dropped now, before the change feed says so, so the caller's next request sees the new MFA.
   */
  authenticationChanged(sessionId: string): void {
    this.invalidate(`auth:${sessionId}`);
  }

  private invalidate(change: string): void {
    // `auth:<session id>`: the session's authentication changed (a step-up), not a revocation: its cached
    // principals are dropped (its new MFA counts at once) and its access tokens stay valid.
    const stepUp = change.startsWith('auth:');
    const credentialId = stepUp ? change.slice(5) : change;
    // The listeners include this cache's own principals (dropped when their credential changed).
    for (const l of this.listeners) l(credentialId);
    if (stepUp) return;
    // Access tokens (JWTs) of a changed session or OAuth grant are refused while they could still be unexpired.
    if (credentialId.startsWith('ses_') || credentialId.startsWith('grt_')) this.revokedSessions.set(credentialId, Date.now() + this.revokedRetentionMs);
  }

  /** The cached authentication of an API key or session token (counted as api_key or session). */
  get(key: string): Principal | undefined {
    const found = this.principals.peek(tokenDigest(key));
    const stats = key.startsWith('sst_') ? this.stats.session : this.stats.apiKey;
    if (found) stats.hit();
    else stats.miss();
    return found;
  }

  /** Caches a lookup that started at `generation`, for the TTL or until the key expires, whichever is first. */
  set(key: string, principal: Principal, keyExpiresAt: number | undefined, generation: number): void {
    this.principals.store(tokenDigest(key), principal, generation, keyExpiresAt);
  }

  stop(): void {
    this.stopped = true;
    this.live = false;
    this.principals.clear();
    this.stream?.cancel();
  }
}
