import type Redis from 'ioredis';
import type { Metrics } from '@secsvc/shared';
import { RedisScript, type RedisHealth } from '../redis';
import type { CredentialChanges } from './changes';
import { cacheStats, tokenDigest, type CacheStats } from './feed-cache';
import type { VerifyAnswer, VerifyCache } from './verify-cache';

// RedisVerifyCache: the verify cache every gateway replica shares when REDIS_URL is set (Lua scripts keep
// an invalidation from being overwritten by an answer fetched before it).

/*
 * Keys (prefix secsvc:vc:):
 *   e:<token digest>  "<ticket>:<answer JSON>", expiring with the cache TTL or the session, whichever is first
 *   i:<ses_/user_ id> the entry keys cached for that session or user (what an invalidation deletes)
 *   x:<id>, x:e:<digest>  tombstones: the epoch at which that session, user or token was invalidated
 *   epoch             a counter bumped by every invalidation (seeded from the server clock in µs, so it
 *                     keeps growing across a Redis restart that lost it)
 *   floor             entries with a ticket below it are void (set when a gateway lost the change stream)
 * A lookup that misses returns the current epoch as its ticket; the answer fetched from identity is stored
 * only if no tombstone of its session, user or token (and no floor) is newer than that ticket, so an answer
 * fetched before a revocation can never be written back after the revocation deleted the entry.
 * Single-instance (or primary/replica) Redis: the scripts touch keys of several slots.
 */
const EPOCH_FN = `
local function epoch(key)
  local e = redis.call('GET', key)
  if e then return tonumber(e) end
  local t = redis.call('TIME')
  local v = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', key, string.format('%.0f', v))
  return v
end
`;

/** KEYS: entry, epoch, floor. Returns {1, answer JSON} or {0, ticket}. */
const LOOKUP_LUA = `${EPOCH_FN}
local v = redis.call('GET', KEYS[1])
if v then
  local sep = string.find(v, ':', 1, true)
  local ticket = tonumber(string.sub(v, 1, sep - 1))
  local floor = tonumber(redis.call('GET', KEYS[3]) or '0')
  if ticket >= floor then return {1, string.sub(v, sep + 1)} end
  redis.call('DEL', KEYS[1])
end
return {0, string.format('%.0f', epoch(KEYS[2]))}
`;

/** KEYS: entry, index of session, index of user, tombstones of session, user and token, floor. ARGV: answer, ticket, ttl ms, index ttl ms. */
const STORE_LUA = `
local ticket = tonumber(ARGV[2])
for i = 4, 7 do
  local x = redis.call('GET', KEYS[i])
  if x and tonumber(x) > ticket then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2] .. ':' .. ARGV[1], 'PX', ARGV[3])
for i = 2, 3 do
  redis.call('SADD', KEYS[i], KEYS[1])
  redis.call('PEXPIRE', KEYS[i], ARGV[4])
end
return 1
`;

/** KEYS: tombstone, epoch, index (ARGV[2] = index) or entry (ARGV[2] = entry). ARGV[1]: tombstone ttl ms. */
const INVALIDATE_LUA = `${EPOCH_FN}
epoch(KEYS[2])
local e = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], e, 'PX', ARGV[1])
if ARGV[2] == 'index' then
  for _, k in ipairs(redis.call('SMEMBERS', KEYS[3])) do redis.call('DEL', k) end
end
redis.call('DEL', KEYS[3])
return e
`;

/** KEYS: epoch, floor. Voids every entry cached so far. */
const RESET_LUA = `${EPOCH_FN}
epoch(KEYS[1])
local e = redis.call('INCR', KEYS[1])
redis.call('SET', KEYS[2], e)
return e
`;

const P = 'secsvc:vc:';
const EPOCH = `${P}epoch`;
const FLOOR = `${P}floor`;

/**
 * The verify cache shared by every gateway replica (REDIS_URL set). Used only while this gateway's change
 * stream is live. Invalidation is immediate for every replica: a revocation through any gateway deletes the
 * shared entry before that gateway answers; changes made elsewhere arrive through every gateway's change
 * stream. When Redis fails the cache is bypassed (identity answers); a failed invalidation makes this
 * gateway void the whole shared cache before it trusts it again.
 */
export class RedisVerifyCache implements VerifyCache {
  private readonly lookup: RedisScript;
  private readonly store: RedisScript;
  private readonly invalidate: RedisScript;
  private readonly resetScript: RedisScript;
  /** An invalidation could not be written: void the shared cache before using it again. */
  private dirty = false;
  private readonly tombstoneMs: number;
  private readonly stats: CacheStats;

  constructor(
    redis: Redis,
    private readonly changes: CredentialChanges,
    private readonly ttlMs: number,
    /** A verification that took longer than this is not stored (the tombstones outlive it). */
    private readonly maxLookupMs: number,
    private readonly health?: Pick<RedisHealth, 'failed' | 'succeeded'>,
    metrics?: Metrics,
  ) {
    this.stats = cacheStats(metrics, 'session_verify');
    this.lookup = new RedisScript(redis, LOOKUP_LUA);
    this.store = new RedisScript(redis, STORE_LUA);
    this.invalidate = new RedisScript(redis, INVALIDATE_LUA);
    this.resetScript = new RedisScript(redis, RESET_LUA);
    this.tombstoneMs = Math.max(ttlMs, 60_000) + 2 * maxLookupMs;
    changes.onChange((id) => {
      if (id === undefined) void this.reset();
      else if (id.startsWith('ses_') || id.startsWith('user_')) void this.drop(`${P}x:${id}`, `${P}i:${id}`, 'index');
    });
  }

  async get(key: string, fetch: () => Promise<VerifyAnswer>): Promise<unknown> {
    if (!this.changes.isLive || this.ttlMs <= 0) {
      this.stats.miss();
      return (await fetch()).body;
    }
    const digest = tokenDigest(key);
    const entry = `${P}e:${digest}`;
    let ticket: string | undefined;
    if (await this.clean()) {
      try {
        const [hit, value] = (await this.lookup.run([entry, EPOCH, FLOOR], [])) as [number, string];
        this.health?.succeeded();
        if (hit === 1) {
          this.stats.hit();
          return JSON.parse(value) as unknown;
        }
        ticket = value;
      } catch (err) {
        this.health?.failed('verify_cache', err);
      }
    }
    this.stats.miss();
    const started = Date.now();
    const answer = await fetch();
    const s = answer.session;
    if (!s || ticket === undefined || !this.changes.isLive || Date.now() - started > this.maxLookupMs) return answer.body;
    const ttl = Math.min(this.ttlMs, s.expiresAt - Date.now());
    if (ttl < 1) return answer.body;
    const keys = [entry, `${P}i:${s.sessionId}`, `${P}i:${s.userId}`, `${P}x:${s.sessionId}`, `${P}x:${s.userId}`, `${P}x:e:${digest}`, FLOOR];
    try {
      await this.store.run(keys, [JSON.stringify(answer.body), ticket, Math.ceil(ttl), this.ttlMs]);
    } catch (err) {
      this.health?.failed('verify_cache', err);
    }
    return answer.body;
  }

  dropToken(key: string): Promise<void> {
    const digest = tokenDigest(key);
    return this.drop(`${P}x:e:${digest}`, `${P}e:${digest}`, 'entry');
  }

  dropUser(userId: string): Promise<void> {
    return this.drop(`${P}x:${userId}`, `${P}i:${userId}`, 'index');
  }

  private async drop(tombstone: string, target: string, mode: 'index' | 'entry'): Promise<void> {
    try {
      await this.invalidate.run([tombstone, EPOCH, target], [this.tombstoneMs, mode]);
    } catch (err) {
      this.dirty = true;
      this.health?.failed('verify_cache', err);
    }
  }

  /** Voids every shared entry (this gateway lost its change stream, or could not write an invalidation). */
  private async reset(): Promise<boolean> {
    try {
      await this.resetScript.run([EPOCH, FLOOR], []);
      this.dirty = false;
      return true;
    } catch (err) {
      this.dirty = true;
      this.health?.failed('verify_cache', err);
      return false;
    }
  }

  /** True when the shared cache may be used: nothing this gateway failed to invalidate is pending. */
  private async clean(): Promise<boolean> {
    return !this.dirty || this.reset();
  }
}
