/**
 * Rate limits and the shared verify cache end to end: the local stack with REDIS_URL set (a real
 * redis-server), plus a second gateway process on the same Redis and services.
 */
import { startGatewayProcess, startLocalStack, type GatewayProcess, type LocalStack } from '@secsvc/dev/stack';
import { redisSkipReason, startTestRedis, type TestRedis } from '@secsvc/dev/testing';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { apiClient, emittedEvents, type Api } from './support';

jest.setTimeout(120_000);

const skip = redisSkipReason();
if (skip) process.stderr.write(`SKIPPED "rate limits end to end": ${skip}\n`);
const describeRedis = skip ? describe.skip : describe; // skip reason: no redis-server outside CI (CI=true throws instead)

const rootDir = path.resolve(__dirname, '../../..');
const KEY = 'svc_sk_' + 'rateLimits__'.repeat(4);
let tmp: string;
let redis: TestRedis;
let stack: LocalStack;
let second: GatewayProcess;
let secondUrl: string;
let secondAdmin: string;
/** The bootstrap key (enterprise: 10,000 per minute) on each gateway. */
let api: Api;

/** The sum of a Prometheus counter's samples whose labels contain `match`. */
async function counter(adminUrl: string, name: string, match: string): Promise<number> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(match))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

const limitHeaders = (h: Headers) => ({ limit: h.get('x-ratelimit-limit'), remaining: h.get('x-ratelimit-remaining'), reset: h.get('x-ratelimit-reset') });

async function waitUntil(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not reached in 10 s`);
}

describeRedis('rate limits and verify cache in Redis, two gateway processes', () => {
  beforeAll(async () => {
    redis = await startTestRedis();
    tmp = await mkdtemp(path.join(os.tmpdir(), 'secsvc-e2e-rl-'));
    await chmod(tmp, 0o711);
    stack = await startLocalStack({
      rootDir,
      dataDir: path.join(tmp, 'data'),
      host: '127.0.0.1',
      port: 0,
      ports: { postgres: 0, identity: 0, policy: 0, audit: 0, admin: { gateway: 0, identity: 0, policy: 0, audit: 0, 'export-worker': 0 } },
      env: { LOG_LEVEL: 'warn', BOOTSTRAP_API_KEY: KEY, REDIS_URL: redis.url },
    });
    second = await startGatewayProcess({ rootDir, stack, env: { REDIS_URL: redis.url } });
    ({ baseUrl: secondUrl, adminUrl: secondAdmin } = second);
    api = apiClient(stack.baseUrl, KEY);
  });

  afterAll(async () => {
    await second?.stop();
    await stack?.stop();
    await redis?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  it('shares one limit between the two gateways: exactly the limit passes, then 429 on both, reaching no service', async () => {
    // enterprise, 10 per minute: one request every 6 s after the burst
    const k = (await api('POST', '/api-keys', { name: 'shared-limit', type: 'secret', plan: 'enterprise', rateLimit: 10 })).body.data;
    const viaFirst = apiClient(stack.baseUrl, k.key);
    const viaSecond = apiClient(secondUrl, k.key);
    const started = Date.now();
    const replies = await Promise.all(Array.from({ length: 14 }, (_, i) => (i % 2 ? viaSecond : viaFirst)('GET', '/users?limit=1')));
    const elapsed = Date.now() - started;
    const allowed = replies.filter((r) => r.status === 200);
    // Exactly 10 when the burst took less than one refill interval (6 s); one more per interval otherwise.
    expect(allowed.length).toBeGreaterThanOrEqual(10);
    expect(allowed.length).toBeLessThanOrEqual(10 + Math.floor(elapsed / 6000));
    if (elapsed < 6000) {
      expect(allowed.map((r) => Number(r.headers.get('x-ratelimit-remaining'))).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }
    const listUsersBefore = await counter(stack.admin.identity, 'grpc_server_handled_total', 'grpc_method="ListUsers"');
    for (const client of [viaFirst, viaSecond, viaFirst, viaSecond]) {
      const r = await client('GET', '/users?limit=1');
      expect(r.status).toBe(429);
      expect(r.body.error.code).toBe('rate_limited');
      expect(r.body.meta.requestId).toMatch(/^req_/);
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(limitHeaders(r.headers)).toMatchObject({ limit: '10', remaining: '0' });
    }
    expect(await counter(stack.admin.identity, 'grpc_server_handled_total', 'grpc_method="ListUsers"')).toBe(listUsersBefore);

    // rate_limit.exceeded: once for this key and window, however many refusals on however many gateways.
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const count = async () =>
        (await db.query(`SELECT count(*)::int AS n FROM ${emittedEvents('identity')} WHERE event_type = 'rate_limit.exceeded' AND payload->'target'->>'id' = $1`, [k.id])).rows[0].n as number;
      await waitUntil('rate_limit.exceeded recorded', async () => (await count()) > 0);
      expect(await count()).toBe(1);
    } finally {
      await db.end();
    }
  });

  it('puts the headers on 401 and 404 too, and on the JWKS; calls without a valid credential count per client ip', async () => {
    const noKey = await fetch(`${secondUrl}/users`);
    expect(noKey.status).toBe(401);
    expect(limitHeaders(noKey.headers)).toMatchObject({ limit: '100', remaining: expect.stringMatching(/^\d+$/), reset: expect.stringMatching(/^\d+$/) });
    const jwks = await fetch(`${secondUrl.replace(/\/v1$/, '')}/.well-known/jwks.json`);
    expect(jwks.status).toBe(200);
    expect(limitHeaders(jwks.headers)).toMatchObject({ limit: '100' });
    const unknown = await api('GET', '/nope');
    expect(unknown.status).toBe(404);
    expect(limitHeaders(unknown.headers)).toMatchObject({ limit: '10000' });
  });

  it('caches session verifications in Redis for both gateways, and a revocation on one is seen at once on the other', async () => {
    const user = (await api('POST', '/users', { email: 'rl.verify@example.com', name: 'Verify' })).body.data;
    const { token } = (await api('POST', '/sessions', { userId: user.id, expiresIn: '1h' })).body.data;
    const viaSecond = apiClient(secondUrl, KEY);
    const verifies = () => counter(stack.admin.identity, 'grpc_server_handled_total', 'grpc_method="VerifySession"');
    const before = await verifies();
    expect((await viaSecond('POST', '/sessions/verify', { token })).body.data.valid).toBe(true);
    expect(await verifies()).toBe(before + 1);
    // The first gateway never verified this token: it is answered from the shared cache.
    expect((await api('POST', '/sessions/verify', { token })).body.data).toMatchObject({ valid: true, user: { id: user.id } });
    expect(await verifies()).toBe(before + 1);

    expect((await api('POST', '/sessions/revoke', { token })).status).toBe(204);
    // At once, not eventually: the very next verify on the other gateway.
    expect((await viaSecond('POST', '/sessions/verify', { token })).body.data).toEqual({ valid: false });
  });

  it('keeps serving through a Redis restart (fail-open), counts it in a metric, and uses Redis again by itself', async () => {
    await redis.stop();
    const during = await api('GET', '/users?limit=1');
    expect(during.status).toBe(200);
    expect(limitHeaders(during.headers)).toMatchObject({ limit: '10000', remaining: expect.stringMatching(/^\d+$/) });
    expect(await counter(stack.admin.gateway, 'redis_errors_total', 'use="rate_limit"')).toBeGreaterThan(0);
    await redis.restart();
    // Both gateways reconnect on their own: requests are decided by Redis again (no new store errors).
    for (const [url, admin] of [[stack.baseUrl, stack.admin.gateway], [secondUrl, secondAdmin]] as const) {
      await waitUntil(`gateway ${url} back on Redis`, async () => {
        const before = await counter(admin, 'redis_errors_total', 'use="rate_limit"');
        const r = await apiClient(url, KEY)('GET', '/users?limit=1');
        return r.status === 200 && (await counter(admin, 'redis_errors_total', 'use="rate_limit"')) === before;
      });
    }
    const k = (await api('POST', '/api-keys', { name: 'after-restart', type: 'secret', plan: 'enterprise', rateLimit: 3 })).body.data;
    const statuses = [];
    for (const url of [stack.baseUrl, secondUrl, stack.baseUrl, secondUrl]) statuses.push((await apiClient(url, k.key)('GET', '/users?limit=1')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
