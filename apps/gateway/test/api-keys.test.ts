import { PUBLIC_KEY } from './support/fake-identity';
import { call, detailsOf, expectError, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => gw.close());
beforeEach(() => gw.fake.reset());

const fields = (details: { field: string }[]) => details.map((d) => d.field);

describe('API key routes', () => {
  it('answers 201 with the key once and the masked form', async () => {
    const res = await call(gw, 'POST', '/v1/api-keys', { json: { name: 'ci', type: 'secret', plan: 'enterprise', rateLimit: 5000 } });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ name: 'ci', type: 'secret', plan: 'enterprise', rateLimit: 5000, maskedKey: 'svc_sk_…nnnn', revokedAt: null });
    expect(res.body.data.key).toMatch(/^svc_sk_/);
    expect(gw.fake.callsOf('createApiKey')[0]!.request).toMatchObject({ environment: 'live', plan: 'enterprise' });
  });

  it('defaults the plan to free', async () => {
    await call(gw, 'POST', '/v1/api-keys', { json: { name: 'ci', type: 'public' } });
    expect(gw.fake.callsOf('createApiKey')[0]!.request.plan).toBe('free');
  });

  it('names every invalid field', async () => {
    const res = await call(gw, 'POST', '/v1/api-keys', { json: { name: '', type: 'root', plan: 'gold', rateLimit: 1.5, expiresAt: 'soon', extra: 1 } });
    expectError(res, 400, 'invalid_request');
    // rateLimit twice: not an integer, and a custom limit needs the enterprise plan
    expect(fields(detailsOf(res)).sort()).toEqual(['expiresAt', 'extra', 'name', 'plan', 'rateLimit', 'rateLimit', 'type']);
    expect(gw.fake.callsOf('createApiKey')).toHaveLength(0);
  });

  it.each([
    ['24h', 86_400],
    ['0s', 0],
    ['7d', 604_800],
    [undefined, 86_400],
  ])('rotates with gracePeriod %s = %i seconds', async (gracePeriod, seconds) => {
    const id = 'key_' + '0'.repeat(26);
    const res = await call(gw, 'POST', `/v1/api-keys/${id}/rotate`, { json: gracePeriod === undefined ? {} : { gracePeriod } });
    expect(res.status).toBe(200);
    expect(gw.fake.callsOf('rotateApiKey')[0]!.request.gracePeriodSeconds).toBe(seconds);
  });

  it.each(['8d', '24', 'h', '-1h', '1w', 24])('refuses gracePeriod %p naming it', async (gracePeriod) => {
    const res = await call(gw, 'POST', `/v1/api-keys/key_${'0'.repeat(26)}/rotate`, { json: { gracePeriod } });
    expectError(res, 400, 'invalid_request');
    expect(fields(detailsOf(res))).toEqual(['gracePeriod']);
  });

  it('answers 404 for malformed key ids without calling identity', async () => {
    expectError(await call(gw, 'GET', '/v1/api-keys/nope'), 404, 'not_found');
    expectError(await call(gw, 'DELETE', '/v1/api-keys/user_x'), 404, 'not_found');
    expect(gw.fake.calls.filter((c) => c.method !== 'authenticateApiKey')).toHaveLength(0);
  });
});

describe('public keys', () => {
  it.each([
    ['GET', '/v1/users'],
    ['POST', '/v1/users'],
    ['GET', '/v1/api-keys'],
    ['POST', '/v1/api-keys'],
  ])('get 403 forbidden on %s %s', async (method, path) => {
    const res = await call(gw, method, path, { auth: false, headers: { authorization: `Bearer ${PUBLIC_KEY}` }, json: method === 'POST' ? {} : undefined });
    expectError(res, 403, 'forbidden');
    expect(gw.fake.calls.filter((c) => c.method !== 'authenticateApiKey')).toHaveLength(0);
  });
});
