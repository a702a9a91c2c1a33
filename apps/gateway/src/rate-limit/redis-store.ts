import type Redis from 'ioredis';
import { RedisScript } from '../redis';
import { decisionOf, intervalUs, WINDOW_SECONDS, type Decision } from './gcra';
import type { RateLimitStore } from './store';

/**
 * gcra.ts's step as one atomic Lua script: one round trip per request, shared by every gateway replica.
 * KEYS[1] the subject's TAT (µs), KEYS[2] until when its refusal has been reported (µs).
 * ARGV: limit, emission interval (µs), now (µs; empty = the Redis server's clock), report window (ms).
 * Returns {allowed, remaining, fullAt, nextAt, report, now} (µs, integers).
 * Numbers are Lua doubles: exact for integers below 2^53 (µs since 1970 are about 2^51). The TAT is written
 * with %.0f because tostring() would round it to 14 significant digits.
 */
const GCRA_LUA = `
local limit = tonumber(ARGV[1])
local t = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local burst = limit * t
local tat = tonumber(redis.call('GET', KEYS[1])) or 0
local base = math.max(tat, now)
if base + t - now <= burst then
  local nxt = base + t
  redis.call('SET', KEYS[1], string.format('%.0f', nxt), 'PX', math.ceil((nxt - now) / 1000))
  return {1, math.floor((burst - (nxt - now)) / t), nxt, now, 0, now}
end
local report = 0
local reported = tonumber(redis.call('GET', KEYS[2]))
if not reported or reported <= now then
  report = 1
  redis.call('SET', KEYS[2], string.format('%.0f', now + ARGV[4] * 1000), 'PX', ARGV[4])
end
return {0, 0, base, base + t - burst, report, now}
`;

export class RedisRateLimitStore implements RateLimitStore {
  readonly kind = 'redis';
  private readonly script: RedisScript;

  constructor(
    redis: Redis,
    private readonly prefix = 'secsvc:rl:',
  ) {
    this.script = new RedisScript(redis, GCRA_LUA);
  }

  async consume(subject: string, limit: number, nowUs?: number): Promise<Decision> {
    // The hash tag keeps both keys of a subject in one slot (Redis Cluster).
    const key = `${this.prefix}{${subject}}`;
    const r = (await this.script.run([key, `${key}:reported`], [limit, intervalUs(limit), nowUs ?? '', WINDOW_SECONDS * 1000])) as number[];
    const [allowed, remaining, fullAt, nextAt, report, now] = r as [number, number, number, number, number, number];
    return decisionOf({ allowed: allowed === 1, tat: fullAt, remaining, fullAt, nextAt }, now, limit, report === 1);
  }
}
