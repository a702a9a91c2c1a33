import type Redis from 'ioredis';
import { createLogger } from '@secsvc/shared';
import { redisSkipReason, startTestRedis, type TestRedis } from '@secsvc/dev/testing';
import { RateLimiter, RateLimitUnavailable } from '../../src/rate-limit/limiter';
import { RedisRateLimitStore } from '../../src/rate-limit/redis-store';
import { createRedis, RedisHealth } from '../../src/redis';
import { describeStoreContract, fresh, T0 } from './store-contract';

// Against a real redis-server started for this file (scripts/.ci/run installs it; CI never skips).
const skip = redisSkipReason();
if (skip) process.stderr.write(`SKIPPED "Redis rate-limit store": ${skip}\n`);
const describeRedis = skip ? describe.skip : describe; // skip reason: no redis-server outside CI (CI=true throws instead)

let server: TestRedis;
const clients: Redis[] = [];
/** A client as the gateway makes it (fail fast, reconnect by itself). */
const client = (health = new RedisHealth(createLogger('test', 'silent'))) => {
  const c = createRedis(server.url, health, 250);
  clients.push(c);
  return c;
};
const ready = (c: Redis) => (c.status === 'ready' ? Promise.resolve() : new Promise<void>((r) => c.once('ready', () => r())));

let store: RedisRateLimitStore;

describeRedis('Redis rate-limit store', () => {
  beforeAll(async () => {
    server = await startTestRedis();
    const c = client();
    await ready(c);
    store = new RedisRateLimitStore(c);
  });

  afterAll(async () => {
    for (const c of clients) c.disconnect();
    await server?.stop();
  });

  describeStoreContract('redis', () => store);

  it('shares one limit between two gateways (two connections), exactly, also when they race', async () => {
    const [a, b] = [client(), client()];
    await Promise.all([ready(a), ready(b)]);
    const gateways = [new RedisRateLimitStore(a), new RedisRateLimitStore(b)];
    const subject = fresh();
    // 2 × 150 requests at once, alternating between the gateways: exactly 200 pass.
    const decisions = await Promise.all(Array.from({ length: 300 }, (_, i) => gateways[i % 2]!.consume(subject, 200, T0)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(200);
    // Every remaining value from 199 down to 0 was handed out exactly once.
    expect(decisions.filter((d) => d.allowed).map((d) => d.remaining).sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(decisions.filter((d) => d.report)).toHaveLength(1);
  });

  it("lets a subject's key expire once its bucket is full again", async () => {
    const c = client();
    await ready(c);
    const subject = fresh();
    await store.consume(subject, 100, undefined);
    const ttl = await c.pttl(`secsvc:rl:{${subject}}`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
  });

  it('survives a Redis restart: fail-open falls back to memory limits, fail-closed refuses, both reconnect by themselves', async () => {
    const warnings: string[] = [];
    const logger = createLogger('test', 'silent');
    logger.warn = ((_obj: unknown, msg?: string) => void warnings.push(msg ?? '')) as typeof logger.warn;
    logger.info = (() => undefined) as typeof logger.info;
    const health = new RedisHealth(logger, undefined, 60_000);
    const c = client(health);
    await ready(c);
    const open = new RateLimiter({ store: new RedisRateLimitStore(c), failMode: 'open', health });
    const closed = new RateLimiter({ store: new RedisRateLimitStore(c), failMode: 'closed', health });
    const subject = fresh();
    for (let i = 0; i < 3; i++) expect((await open.consume(subject, 5)).remaining).toBe(4 - i);

    await server.stop();
    // Fail-open: served, under a per-replica memory limit with the same limit (fresh: 5 in a burst).
    const during = [];
    for (let i = 0; i < 6; i++) during.push((await open.consume(subject, 5)).allowed);
    expect(during).toEqual([true, true, true, true, true, false]);
    // Fail-closed: refused as unavailable.
    await expect(closed.consume(subject, 5)).rejects.toBeInstanceOf(RateLimitUnavailable);
    // Logged once for all these failures (one interval), not once per request.
    expect(warnings.filter((w) => w.startsWith('Redis unreachable'))).toHaveLength(1);
    expect(health.isFailing).toBe(true);

    await server.restart();
    await ready(c);
    // Shared limiting resumes on the fresh (empty) Redis without a new client.
    const after = await closed.consume(subject, 5);
    expect(after).toMatchObject({ allowed: true, remaining: 4 });
    expect(health.isFailing).toBe(false);
  });
});
