import type Redis from 'ioredis';
import { createLogger } from '@secsvc/shared';
import { redisSkipReason, startTestRedis, type TestRedis } from '@secsvc/dev/testing';
import type { AuthCache } from '../src/auth/auth-cache';
import { RedisVerifyCache } from '../src/auth/redis-verify-cache';
import type { VerifyAnswer } from '../src/auth/verify-cache';
import { createRedis, RedisHealth } from '../src/redis';
import { authCacheWithFakeStreams, type FakeStream } from './support/fake-stream';

// Against a real redis-server started for this file (CI installs it and never skips).
const skip = redisSkipReason();
if (skip) process.stderr.write(`SKIPPED "Redis verify cache": ${skip}\n`);
const describeRedis = skip ? describe.skip : describe; // skip reason: no redis-server outside CI (CI=true throws instead)

/** One gateway's view: its own change stream (live), Redis connection and shared verify cache. */
interface Gateway {
  cache: RedisVerifyCache;
  stream: () => FakeStream;
  changes: AuthCache;
  redis: Redis;
}

let server: TestRedis;
const gateways: Gateway[] = [];

async function gateway(ttlMs = 60_000): Promise<Gateway> {
  const { cache: changes, streams } = authCacheWithFakeStreams();
  streams[0]!.push('ready');
  const redis = createRedis(server.url, new RedisHealth(createLogger('test', 'silent')), 250);
  await new Promise<void>((r) => redis.once('ready', () => r()));
  const g = { cache: new RedisVerifyCache(redis, changes, ttlMs, 5_000), stream: () => streams[streams.length - 1]!, changes, redis };
  gateways.push(g);
  return g;
}

let n = 0;
/** A session token and the positive answer identity gives for it. */
function session(userId = `user_${n}`) {
  n++;
  const sessionId = `ses_${n}`;
  const token = `sst_token_${n}_${'x'.repeat(20)}`;
  const answer: VerifyAnswer = {
    body: { data: { valid: true, user: { id: userId, email: `u${n}@example.com` }, session: { id: sessionId, expiresAt: '2099-01-01T00:00:00.000Z' } } },
    session: { sessionId, userId, expiresAt: Date.now() + 3_600_000 },
  };
  return { key: `live:${token}`, token, sessionId, userId, answer };
}

/** An identity stand-in that counts how often it is asked. */
function identity(answer: VerifyAnswer) {
  const f = { calls: 0, fetch: async () => (f.calls++, answer) };
  return f;
}

const settle = () => new Promise((r) => setTimeout(r, 50));

describeRedis('Redis verify cache (shared by gateway replicas)', () => {
  beforeAll(async () => {
    server = await startTestRedis();
  });

  afterAll(async () => {
    for (const g of gateways) {
      g.changes.stop();
      g.redis.disconnect();
    }
    await server?.stop();
  });

  it('answers a second gateway from the entry the first one cached', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const s = session();
    const id = identity(s.answer);
    expect(await a.cache.get(s.key, id.fetch)).toEqual(s.answer.body);
    expect(await b.cache.get(s.key, id.fetch)).toEqual(s.answer.body);
    expect(await a.cache.get(s.key, id.fetch)).toEqual(s.answer.body);
    expect(id.calls).toBe(1);
  });

  it('sees a revocation through one gateway at once on another (no stream needed)', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const s = session();
    const id = identity(s.answer);
    await b.cache.get(s.key, id.fetch);
    await a.cache.dropToken(s.key); // POST /sessions/revoke through gateway a
    const invalid: VerifyAnswer = { body: { data: { valid: false } } };
    expect(await b.cache.get(s.key, async () => invalid)).toEqual(invalid.body);
  });

  it('drops the shared entry when any gateway hears of a change of the session or of its user', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const s1 = session();
    const s2 = session();
    const id1 = identity(s1.answer);
    const id2 = identity(s2.answer);
    await a.cache.get(s1.key, id1.fetch);
    await a.cache.get(s2.key, id2.fetch);
    b.stream().push('changed', s1.sessionId);
    b.stream().push('changed', s2.userId);
    await settle();
    await a.cache.get(s1.key, id1.fetch);
    await a.cache.get(s2.key, id2.fetch);
    expect([id1.calls, id2.calls]).toEqual([2, 2]);
  });

  it('drops every session of a user changed through this gateway (dropUser)', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const s1 = session('user_shared');
    const s2 = session('user_shared');
    const [id1, id2] = [identity(s1.answer), identity(s2.answer)];
    await a.cache.get(s1.key, id1.fetch);
    await a.cache.get(s2.key, id2.fetch);
    await b.cache.dropUser('user_shared');
    await a.cache.get(s1.key, id1.fetch);
    await a.cache.get(s2.key, id2.fetch);
    expect([id1.calls, id2.calls]).toEqual([2, 2]);
  });

  it('never writes back an answer fetched before a revocation (tombstone)', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const s = session();
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    // b misses and asks identity; while that answer is on its way, the session is revoked through a.
    const pending = b.cache.get(s.key, async () => {
      await slow;
      return s.answer;
    });
    await settle();
    await a.cache.dropToken(s.key);
    a.stream().push('changed', s.sessionId);
    await settle();
    release();
    await pending;
    const after = identity({ body: { data: { valid: false } } });
    expect(await a.cache.get(s.key, after.fetch)).toEqual({ data: { valid: false } });
    expect(after.calls).toBe(1);
  });

  it('caches no negative answer, and nothing while the change stream is down', async () => {
    const a = await gateway();
    const s = session();
    const negative = identity({ body: { data: { valid: false } } });
    await a.cache.get(s.key, negative.fetch);
    await a.cache.get(s.key, negative.fetch);
    expect(negative.calls).toBe(2);
    const positive = identity(s.answer);
    a.stream().emit('end'); // lost: not live until a new stream is ready
    await a.cache.get(s.key, positive.fetch);
    await a.cache.get(s.key, positive.fetch);
    expect(positive.calls).toBe(2);
  });

  it('voids every shared entry when a gateway loses its change stream (it may have missed changes)', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const s = session();
    const id = identity(s.answer);
    await a.cache.get(s.key, id.fetch);
    b.stream().emit('end');
    await settle();
    await a.cache.get(s.key, id.fetch);
    expect(id.calls).toBe(2);
  });

  it('holds only digests of tokens and what verify returns', async () => {
    const a = await gateway();
    const s = session();
    await a.cache.get(s.key, identity(s.answer).fetch);
    const keys = await a.redis.keys('secsvc:vc:*');
    const values = await Promise.all(keys.map((k) => a.redis.type(k).then((t) => (t === 'string' ? a.redis.get(k) : a.redis.smembers(k).then((m) => m.join(','))))));
    const everything = keys.join('\n') + values.join('\n');
    expect(everything).not.toContain(s.token);
    const entry = values.find((v) => v?.includes('"valid":true') && v.includes(s.sessionId));
    expect(JSON.parse(entry!.slice(entry!.indexOf(':') + 1))).toEqual(s.answer.body);
  });

  it('voids the shared cache before using it again when an invalidation could not be written', async () => {
    const [a, b] = [await gateway(), await gateway()];
    const s = session();
    const id = identity(s.answer);
    await b.cache.get(s.key, id.fetch);
    const back = new Promise<void>((r) => a.redis.once('ready', () => r()));
    a.redis.disconnect(true); // a's connection drops (and comes back by itself)
    await a.cache.dropToken(s.key); // the revocation's delete cannot reach Redis
    await back;
    const invalid = identity({ body: { data: { valid: false } } });
    expect(await a.cache.get(s.key, invalid.fetch)).toEqual({ data: { valid: false } });
    expect(await b.cache.get(s.key, invalid.fetch)).toEqual({ data: { valid: false } });
    expect(invalid.calls).toBe(2);
  });

  it('answers from identity while Redis is down and uses Redis again after its restart', async () => {
    const a = await gateway();
    const s = session();
    const id = identity(s.answer);
    await server.stop();
    expect(await a.cache.get(s.key, id.fetch)).toEqual(s.answer.body);
    await a.cache.dropToken(s.key); // cannot be written: the shared cache is voided before its next use
    await server.restart();
    await new Promise<void>((r) => (a.redis.status === 'ready' ? r() : a.redis.once('ready', () => r())));
    await a.cache.get(s.key, id.fetch);
    await a.cache.get(s.key, id.fetch);
    expect(id.calls).toBe(2);
  });
});
