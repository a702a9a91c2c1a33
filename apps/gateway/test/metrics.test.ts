import { AppError, createLogger, Metrics, parseMetricsText } from '@secsvc/shared';
import { AuthCache } from '../src/auth/auth-cache';
import { UserCache } from '../src/auth/user-cache';
import { MemoryVerifyCache } from '../src/auth/verify-cache';
import { countedStoreHealth } from '../src/middleware/rate-limit';
import { RouteTable } from '../src/middleware/route-table';
import { RateLimiter } from '../src/rate-limit/limiter';
import { MemoryRateLimitStore } from '../src/rate-limit/memory-store';
import type { RateLimitStore } from '../src/rate-limit/store';
import { FakeStream } from './support/fake-stream';
import { call, DEFAULT_LIMITS, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.close();
});

/** The http_requests_total sample lines of the registry. */
async function requestSamples(): Promise<string[]> {
  const text = await gw.deps.metrics.registry.metrics();
  return text.split('\n').filter((l) => l.startsWith('http_requests_total{'));
}

describe('request metrics', () => {
  it('labels requests by route template, not by the concrete id', async () => {
    const created = await call(gw, 'POST', '/v1/users', { json: { email: 'ada@example.com', name: 'Ada' } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    expect((await call(gw, 'GET', `/v1/users/${id}`)).status).toBe(200);
    expect((await call(gw, 'PATCH', `/v1/users/${id}`, { json: { name: 'Ada B.' } })).status).toBe(200);

    const samples = await requestSamples();
    expect(samples).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users\/:id")(?=[^}]*method="GET")(?=[^}]*status="200")[^}]*\} 1$/),
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users\/:id")(?=[^}]*method="PATCH")[^}]*\} 1$/),
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users")(?=[^}]*method="POST")(?=[^}]*status="201")[^}]*\} 1$/),
      ]),
    );
    expect(samples.join('\n')).not.toContain(id);
  });

  it('labels an error answered by a route handler with the same /v1 route template', async () => {
    expect((await call(gw, 'GET', '/v1/users/user_nope')).status).toBe(404);
    const samples = await requestSamples();
    expect(samples).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users\/:id")(?=[^}]*method="GET")(?=[^}]*status="404")[^}]*\}/),
      ]),
    );
  });

  it('labels unmatched paths as "unmatched", never with the raw path', async () => {
    expect((await call(gw, 'GET', '/no/such/path/abc123', { auth: false })).status).toBe(404);
    const samples = await requestSamples();
    expect(samples).toEqual(expect.arrayContaining([expect.stringMatching(/route="unmatched"(?=[^}]*status="404")/)]));
    expect(samples.join('\n')).not.toContain('abc123');
  });
});

/** The http_requests_total samples of a gateway's registry, as labels and value. */
async function requests(g: TestGateway): Promise<{ route: string; method: string; status: string; value: number }[]> {
  return parseMetricsText(await g.deps.metrics.registry.metrics())
    .filter((s) => s.name === 'http_requests_total')
    .map((s) => ({ route: s.labels.route!, method: s.labels.method!, status: s.labels.status!, value: s.value }));
}

describe('route labels of answers given before the route ran', () => {
  let low: TestGateway;
  const BAD = { authorization: `Bearer svc_sk_${'x'.repeat(40)}` };
  beforeAll(async () => {
    low = await startGateway({ rateLimit: { limiter: new RateLimiter({ store: new MemoryRateLimitStore() }), policy: { ...DEFAULT_LIMITS, anonymousPerMinute: 4 } } });
  });
  afterAll(async () => {
    await low.close();
  });

  it('labels 401, 429, 405, 413 and 503 of known paths with their templates', async () => {
    // refusals before authentication spend the client ip's anonymous budget (four a minute here)
    expect((await call(low, 'DELETE', '/v1/users')).status).toBe(405);
    expect((await call(low, 'GET', '/v1/policies/simulate')).status).toBe(405);
    expect((await call(low, 'GET', '/v1/users', { auth: false, headers: BAD })).status).toBe(401);
    expect((await call(low, 'GET', '/v1/users/user_abc?x=1', { auth: false, headers: BAD })).status).toBe(401);
    let status = 0;
    for (let i = 0; i < 5 && status !== 429; i++) status = (await call(low, 'GET', '/v1/users/', { auth: false, headers: BAD })).status;
    expect(status).toBe(429);
    // a valid key spends its own budget
    expect((await call(low, 'POST', '/v1/users', { raw: JSON.stringify({ email: 'a'.repeat(2 * 1024 * 1024) }), headers: { 'content-type': 'application/json' } })).status).toBe(413);
    low.fake.failWith('authenticateApiKey', new AppError('unavailable', 'identity is restarting (test)'));
    try {
      expect((await call(low, 'GET', '/v1/api-keys', { auth: false, headers: { authorization: `Bearer svc_sk_${'o'.repeat(40)}` } })).status).toBe(503);
    } finally {
      low.fake.reset();
    }
    const samples = await requests(low);
    expect(samples).toEqual(
      expect.arrayContaining([
        { route: '/v1/users', method: 'GET', status: '401', value: 1 },
        { route: '/v1/users/:id', method: 'GET', status: '401', value: 1 },
        expect.objectContaining({ route: '/v1/users', method: 'GET', status: '429' }),
        { route: '/v1/users', method: 'DELETE', status: '405', value: 1 },
        { route: '/v1/users', method: 'POST', status: '413', value: 1 },
        { route: '/v1/policies/simulate', method: 'GET', status: '405', value: 1 },
        { route: '/v1/api-keys', method: 'GET', status: '503', value: 1 },
      ]),
    );
    expect(samples.filter((s) => s.route === 'unmatched')).toEqual([]);
  });

  it('counts rate-limit decisions by plan (the key’s, user, anonymous) and decision', async () => {
    expect((await call(low, 'GET', '/v1/users')).status).toBe(200);
    const decisions = parseMetricsText(await low.deps.metrics.registry.metrics()).filter((s) => s.name === 'ratelimit_decisions_total');
    const count = (plan: string, decision: string) => decisions.find((s) => s.labels.plan === plan && s.labels.decision === decision)?.value ?? 0;
    expect(count('enterprise', 'allowed')).toBeGreaterThanOrEqual(1);
    expect(count('anonymous', 'allowed')).toBe(4);
    expect(count('anonymous', 'limited')).toBeGreaterThanOrEqual(1);
    expect(count('enterprise', 'limited')).toBe(0);
    expect(parseMetricsText(await low.deps.metrics.registry.metrics())).toContainEqual({ name: 'ratelimit_store_errors_total', labels: { service: 'test' }, value: 0 });
  });

  it('counts rate-limit store failures (the limiter falls back or refuses)', async () => {
    const metrics = new Metrics('rl');
    const failing: RateLimitStore = { kind: 'redis', consume: async () => Promise.reject(new Error('redis down (test)')) };
    const limiter = new RateLimiter({ store: failing, failMode: 'open', health: countedStoreHealth(metrics) });
    await limiter.consume('ip:1', 10);
    await limiter.consume('ip:1', 10);
    expect(parseMetricsText(await metrics.registry.metrics())).toContainEqual({ name: 'ratelimit_store_errors_total', labels: { service: 'rl' }, value: 2 });
  });
});

describe('RouteTable', () => {
  const table = new RouteTable({
    '/v1/policies': { get: {}, post: {} },
    '/v1/policies/{id}': { get: {}, delete: {} },
    '/v1/policies/simulate': { post: {} },
    '/v1/users/{id}/sessions': { get: {} },
    '/healthz': { get: {} },
  });
  it('resolves templates as Express routes (any case, optional trailing slash) and OpenAPI orders them (literals first)', () => {
    expect(table.match('/v1/policies/pol_1')).toMatchObject({ template: '/v1/policies/:id', allow: 'DELETE, GET, HEAD, OPTIONS' });
    expect(table.match('/v1/policies/simulate')?.template).toBe('/v1/policies/simulate');
    expect(table.match('/V1/Policies/')?.template).toBe('/v1/policies');
    expect(table.match('/v1/users/user_1/sessions')?.template).toBe('/v1/users/:id/sessions');
    expect(table.match('/healthz')?.template).toBe('/healthz');
  });
  it('knows nothing of other paths', () => {
    for (const p of ['/', '', '/v1', '/v1/policies/a/b', '/v1/users//sessions', '/v1/users/user_1', 'v1/policies', '/healthz/x']) expect(table.match(p)).toBeUndefined();
  });
});

describe('credential_cache_requests_total', () => {
  it('counts hits and misses by cache: API keys and sessions apart, users, verify answers', async () => {
    const metrics = new Metrics('cache');
    const stream = new FakeStream();
    const auth = new AuthCache(() => stream, createLogger('test', 'silent'), 60_000, 100, 60_000, metrics);
    auth.start();
    stream.push('ready');
    const key = `svc_sk_${'k'.repeat(40)}`;
    expect(auth.get(key)).toBeUndefined();
    auth.set(key, { type: 'api_key', id: 'key_1', credentialId: 'key_1', keyType: 'secret', environment: 'live', plan: 'pro' }, undefined, auth.generation);
    expect(auth.get(key)?.id).toBe('key_1');
    expect(auth.get('sst_nope')).toBeUndefined();
    const users = new UserCache(auth, 60_000, 100, metrics);
    const facts = async () => ({ roles: [], email: 'a@example.com' });
    await users.get('live', 'user_1', facts);
    await users.get('live', 'user_1', facts);
    const verify = new MemoryVerifyCache(auth, 60_000, 100, metrics);
    await verify.get('live:sst_x', async () => ({ body: { valid: false } }));
    const samples = parseMetricsText(await metrics.registry.metrics()).filter((s) => s.name === 'credential_cache_requests_total');
    const count = (cache: string, result: string) => samples.find((s) => s.labels.cache === cache && s.labels.result === result)?.value ?? 0;
    expect([count('api_key', 'hit'), count('api_key', 'miss')]).toEqual([1, 1]);
    expect([count('session', 'hit'), count('session', 'miss')]).toEqual([0, 1]);
    expect([count('user', 'hit'), count('user', 'miss')]).toEqual([1, 1]);
    expect([count('session_verify', 'hit'), count('session_verify', 'miss')]).toEqual([0, 1]);
    auth.stop();
  });
});
