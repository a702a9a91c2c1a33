import { AppError, newId } from '@secsvc/shared';
import type { identity } from '@secsvc/proto';
import type { Decision } from '../../src/rate-limit/gcra';
import { RateLimiter } from '../../src/rate-limit/limiter';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store';
import type { RateLimitStore } from '../../src/rate-limit/store';
import type { RateLimitPolicy } from '../../src/rate-limit/subjects';
import { PUBLIC_KEY } from '../support/fake-identity';
import { call, DEFAULT_LIMITS, expectError, startGateway, type Reply, type TestGateway } from '../support/gateway';

const S = 1_000_000;
/** The limiter's injected clock (µs), starting on a whole second. */
let now = 1_794_694_400 * S;
const nowSeconds = () => Math.floor(now / S);

const keyOf = (plan: string, rateLimit?: number) => {
  const key = `svc_sk_${newId('key').slice(4).padEnd(40, 'x')}`;
  const principal: identity.ApiKeyPrincipal = { keyId: newId('key'), keyType: 'secret', environment: 'live', plan, rateLimit, name: 'rate limit test key' };
  return { key, principal };
};

async function start(policy: RateLimitPolicy = DEFAULT_LIMITS, store: RateLimitStore = new MemoryRateLimitStore(), failMode?: 'open' | 'closed') {
  return startGateway({
    rateLimit: { limiter: new RateLimiter({ store, failMode, clockUs: () => now }), policy },
    policy: { authorize: async () => ({ allowed: true, effect: 'allow', matchedPolicies: [], decisionId: 'dec_test' }) } as never,
  });
}

const limitHeaders = (r: Reply) => ({
  limit: r.headers.get('x-ratelimit-limit'),
  remaining: r.headers.get('x-ratelimit-remaining'),
  reset: r.headers.get('x-ratelimit-reset'),
});

const asKey = (key: string) => ({ headers: { authorization: `Bearer ${key}` }, auth: false });

describe('X-RateLimit headers', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await start();
  });
  afterAll(() => gw.close());

  it('are on every response, 2xx and errors alike, as integers (Reset in Unix seconds)', async () => {
    const replies: [string, Reply, number][] = [
      ['200', await call(gw, 'GET', '/v1/users'), 200],
      ['201', await call(gw, 'POST', '/v1/users', { json: { email: 'h@example.com', name: 'H' } }), 201],
      ['400', await call(gw, 'GET', '/v1/users?limit=0'), 400],
      ['401 no credential', await call(gw, 'GET', '/v1/users', { auth: false }), 401],
      ['401 unknown key', await call(gw, 'GET', '/v1/users', asKey(`svc_sk_${'z'.repeat(40)}`)), 401],
      ['403 public key', await call(gw, 'GET', '/v1/users', asKey(PUBLIC_KEY)), 403],
      ['404 in /v1', await call(gw, 'GET', '/v1/nope'), 404],
      ['404 outside /v1', await call(gw, 'GET', '/nope', { auth: false }), 404],
      ['openapi', await call(gw, 'GET', '/v1/openapi.json', { auth: false }), 200],
    ];
    for (const [name, reply, status] of replies) {
      expect({ name, status: reply.status }).toEqual({ name, status });
      const h = limitHeaders(reply);
      expect({ name, ...h }).toEqual({ name, limit: expect.stringMatching(/^\d+$/), remaining: expect.stringMatching(/^\d+$/), reset: expect.stringMatching(/^\d+$/) });
      expect(Number(h.reset)).toBeGreaterThanOrEqual(nowSeconds());
      expect(Number(h.reset)).toBeLessThanOrEqual(nowSeconds() + 60);
    }
  });

  it('count each budget down: the key by its plan, callers without a valid credential by client ip', async () => {
    const key = keyOf('pro');
    gw.fake.apiKeys.set(key.key, key.principal);
    const first = limitHeaders(await call(gw, 'GET', '/v1/users', asKey(key.key)));
    const second = limitHeaders(await call(gw, 'GET', '/v1/users', asKey(key.key)));
    expect([first.limit, first.remaining, second.remaining]).toEqual(['1000', '999', '998']);
    const ip = { 'x-forwarded-for': '203.0.113.7' };
    const a = limitHeaders(await call(gw, 'GET', '/v1/users', { auth: false, headers: ip }));
    const b = limitHeaders(await call(gw, 'GET', '/v1/nope', { auth: false, headers: ip }));
    expect([a.limit, a.remaining, b.remaining]).toEqual(['100', '99', '98']);
  });

  it('are not set on the health probes, which are never limited', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const r = await call(gw, 'GET', path, { auth: false });
      expect(r.status).toBe(200);
      expect(limitHeaders(r)).toEqual({ limit: null, remaining: null, reset: null });
    }
  });
});

describe('limits per plan', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await start();
  });
  afterAll(() => gw.close());
  beforeEach(() => gw.fake.reset());

  it.each([
    ['free', undefined, '100'],
    ['pro', undefined, '1000'],
    ['enterprise', 5, '5'],
    ['enterprise', undefined, '10000'],
  ])('%s (custom rateLimit %s) → %s per minute', async (plan, rateLimit, limit) => {
    const key = keyOf(plan, rateLimit);
    gw.fake.apiKeys.set(key.key, key.principal);
    expect(limitHeaders(await call(gw, 'GET', '/v1/users', asKey(key.key))).limit).toBe(limit);
  });

  it('gives a fresh free key exactly 100 requests; the 101st is a 429 that reaches no service', async () => {
    const key = keyOf('free');
    gw.fake.apiKeys.set(key.key, key.principal);
    const remaining: string[] = [];
    for (let i = 0; i < 100; i++) {
      const r = await call(gw, 'GET', '/v1/users', asKey(key.key));
      expect(r.status).toBe(200);
      remaining.push(r.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining).toEqual(Array.from({ length: 100 }, (_, i) => String(99 - i)));
    const listed = gw.fake.callsOf('listUsers').length;
    const authenticated = gw.fake.callsOf('authenticateApiKey').length;

    const refused = await call(gw, 'GET', '/v1/users', asKey(key.key));
    expectError(refused, 429, 'rate_limited');
    expect(limitHeaders(refused)).toEqual({ limit: '100', remaining: '0', reset: String(nowSeconds() + 60) });
    expect(refused.headers.get('retry-after')).toBe('1'); // one request every 0.6 s
    // Later refusals are answered before authentication: no service at all.
    for (let i = 0; i < 5; i++) expectError(await call(gw, 'POST', '/v1/users', { ...asKey(key.key), json: { email: 'x@example.com', name: 'X' } }), 429, 'rate_limited');
    expect(gw.fake.callsOf('listUsers')).toHaveLength(listed);
    expect(gw.fake.callsOf('createUser')).toHaveLength(0);
    expect(gw.fake.callsOf('authenticateApiKey')).toHaveLength(authenticated + 1);
  });

  it('lets the next request through when Retry-After has passed, and not before', async () => {
    const key = keyOf('enterprise', 1); // one per minute
    gw.fake.apiKeys.set(key.key, key.principal);
    expect((await call(gw, 'GET', '/v1/users', asKey(key.key))).status).toBe(200);
    const refused = await call(gw, 'GET', '/v1/users', asKey(key.key));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('60');
    now += 59 * S;
    const still = await call(gw, 'GET', '/v1/users', asKey(key.key));
    expect([still.status, still.headers.get('retry-after')]).toEqual([429, '1']);
    now += S;
    expect((await call(gw, 'GET', '/v1/users', asKey(key.key))).status).toBe(200);
  });

  it('answers the first 429 of a window once rate_limit.exceeded is reported (nothing left to do after answering), and still answers when the report fails', async () => {
    const key = keyOf('enterprise', 1);
    gw.fake.apiKeys.set(key.key, key.principal);
    const original = gw.fake.reportRateLimitExceeded.bind(gw.fake);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const order: string[] = [];
    gw.fake.reportRateLimitExceeded = async (req, opts) => {
      await held;
      order.push('reported');
      return original(req, opts);
    };
    try {
      expect((await call(gw, 'GET', '/v1/users', asKey(key.key))).status).toBe(200);
      const refused = call(gw, 'GET', '/v1/users', asKey(key.key)).then((r) => (order.push('answered'), r));
      await new Promise((r) => setTimeout(r, 100));
      expect(order).toEqual([]);
      release();
      expect((await refused).status).toBe(429);
      expect(order).toEqual(['reported', 'answered']);

      // Identity refusing the report costs the caller nothing but the wait.
      gw.fake.reportRateLimitExceeded = async () => {
        throw new Error('identity down');
      };
      now += 61 * S;
      expect((await call(gw, 'GET', '/v1/users', asKey(key.key))).status).toBe(200);
      expect((await call(gw, 'GET', '/v1/users', asKey(key.key))).status).toBe(429);
    } finally {
      gw.fake.reportRateLimitExceeded = original;
    }
  });

  it('reports rate_limit.exceeded once per key and window, not per refused request', async () => {
    const key = keyOf('enterprise', 2);
    gw.fake.apiKeys.set(key.key, key.principal);
    for (let i = 0; i < 10; i++) await call(gw, 'GET', '/v1/users', asKey(key.key));
    await new Promise((r) => setImmediate(r));
    const reports = gw.fake.callsOf('reportRateLimitExceeded');
    expect(reports.map((c) => c.request)).toEqual([{ environment: 'live', subjectType: 'api_key', subjectId: key.principal.keyId, limit: 2, windowSeconds: 60 }]);
    expect(reports[0]!.options?.headers).toMatchObject({ 'x-actor-id': key.principal.keyId, 'x-actor-type': 'api_key', 'x-client-ip': '127.0.0.1' });
    // The next window: a new refusal is reported again.
    now += 61 * S;
    for (let i = 0; i < 5; i++) await call(gw, 'GET', '/v1/users', asKey(key.key));
    await new Promise((r) => setImmediate(r));
    expect(gw.fake.callsOf('reportRateLimitExceeded')).toHaveLength(2);
  });
});

describe('users and anonymous callers', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await start({ anonymousPerMinute: 3, userPerMinute: 4, enterprisePerMinute: 10_000 });
  });
  afterAll(() => gw.close());

  it('limits a user across all their sessions, each user on their own', async () => {
    const [ada, bob] = [newId('user'), newId('user')];
    const session = (userId: string): identity.SessionPrincipal => ({ sessionId: newId('ses'), userId, environment: 'live', roles: [], expiresAt: undefined as never, email: `${userId}@example.com`, amr: [], acr: '' });
    gw.fake.sessions.set('sst_ada_phone', session(ada));
    gw.fake.sessions.set('sst_ada_laptop', session(ada));
    gw.fake.sessions.set('sst_bob', session(bob));
    gw.fake.users.set(ada, { id: ada, environment: 'live', email: 'ada@example.com', name: 'Ada', emailVerified: false, roles: [], metadataJson: '{}', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' });
    const statuses = [];
    for (const token of ['sst_ada_phone', 'sst_ada_laptop', 'sst_ada_phone', 'sst_ada_laptop', 'sst_ada_phone']) {
      statuses.push((await call(gw, 'GET', `/v1/users/${ada}`, asKey(token))).status);
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const other = await call(gw, 'GET', `/v1/users/${ada}`, asKey('sst_bob'));
    expect(limitHeaders(other)).toMatchObject({ limit: '4', remaining: '3' });
    await new Promise((r) => setImmediate(r));
    expect(gw.fake.callsOf('reportRateLimitExceeded').map((c) => c.request)).toContainEqual({ environment: 'live', subjectType: 'user', subjectId: ada, limit: 4, windowSeconds: 60 });
  });

  it('limits calls without a valid credential per client ip, apart from keyed calls of the same ip', async () => {
    const ip = { 'x-forwarded-for': '198.51.100.23' };
    const statuses = [];
    for (const path of ['/v1/openapi.json', '/v1/users', '/nope', '/v1/openapi.json']) statuses.push((await call(gw, 'GET', path, { auth: false, headers: ip })).status);
    expect(statuses).toEqual([200, 401, 404, 429]);
    // The same ip with a bad credential: still this ip's budget.
    expect((await call(gw, 'GET', '/v1/users', { ...asKey(`svc_sk_${'q'.repeat(40)}`), headers: { ...ip, authorization: `Bearer svc_sk_${'q'.repeat(40)}` } })).status).toBe(429);
    // Another ip, and a valid key from this ip, are not affected.
    expect((await call(gw, 'GET', '/v1/openapi.json', { auth: false, headers: { 'x-forwarded-for': '198.51.100.24' } })).status).toBe(200);
    expect((await call(gw, 'GET', '/v1/users', { headers: ip })).status).toBe(200);
    await new Promise((r) => setImmediate(r));
    expect(gw.fake.callsOf('reportRateLimitExceeded').map((c) => c.request)).toContainEqual({ environment: 'live', subjectType: 'ip', subjectId: '', limit: 3, windowSeconds: 60 });
  });
});

describe('while identity cannot check credentials', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await start({ anonymousPerMinute: 2, userPerMinute: 4, enterprisePerMinute: 10_000 });
  });
  afterAll(() => gw.close());

  it("answers 503 with Retry-After every time and spends no ip budget: a key that cannot be checked was not refused", async () => {
    const { key } = keyOf('enterprise', 1_000_000);
    const ip = { 'x-forwarded-for': '198.51.100.77', authorization: `Bearer ${key}` };
    gw.fake.failWith('authenticateApiKey', new AppError('unavailable', 'A backing service is unavailable'));
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await call(gw, 'GET', '/v1/users', { auth: false, headers: ip }));
    expect(answers.map((a) => [a.status, a.headers.get('retry-after')])).toEqual(Array(5).fill([503, '2']));
    // Calls without a credential from that ip still have their whole budget.
    gw.fake.reset();
    const anonymous = await call(gw, 'GET', '/v1/openapi.json', { auth: false, headers: { 'x-forwarded-for': '198.51.100.77' } });
    expect(limitHeaders(anonymous)).toMatchObject({ limit: '2', remaining: '1' });
  });
});

describe('when the store fails', () => {
  const broken: RateLimitStore = {
    kind: 'redis',
    consume: async (): Promise<Decision> => {
      throw new Error('connect ECONNREFUSED 127.0.0.1:6379');
    },
  };

  it('fail-open keeps serving under per-replica memory limits, with true headers', async () => {
    const gw = await start({ ...DEFAULT_LIMITS, anonymousPerMinute: 2 }, broken, 'open');
    try {
      const r = await call(gw, 'GET', '/v1/users');
      expect(r.status).toBe(200);
      expect(limitHeaders(r)).toMatchObject({ limit: '10000', remaining: '9999' });
      const anon = [];
      for (let i = 0; i < 3; i++) anon.push((await call(gw, 'GET', '/v1/openapi.json', { auth: false })).status);
      expect(anon).toEqual([200, 200, 429]);
    } finally {
      await gw.close();
    }
  });

  it('fail-closed refuses with 503 unavailable and Retry-After, reaching no service', async () => {
    const gw = await start(DEFAULT_LIMITS, broken, 'closed');
    try {
      const r = await call(gw, 'GET', '/v1/users');
      expectError(r, 503, 'unavailable');
      expect(r.headers.get('retry-after')).toBe('1');
      expect(limitHeaders(r)).toEqual({ limit: '10000', remaining: '0', reset: String(nowSeconds() + 1) });
      expect(gw.fake.callsOf('listUsers')).toHaveLength(0);
    } finally {
      await gw.close();
    }
  });
});
