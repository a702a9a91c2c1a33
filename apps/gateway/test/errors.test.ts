import { AppError, newId } from '@secsvc/shared';
import { VALID_KEY } from './support/fake-identity';
import { call, expectError, REQUEST_ID, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.close();
});
beforeEach(() => gw.fake.reset());

describe('unknown routes', () => {
  it('answers 404 not_found in the error shape outside /v1', async () => {
    const res = await call(gw, 'GET', '/nope', { auth: false });
    expectError(res, 404, 'not_found');
  });

  it('answers 404 not_found for an authenticated unknown /v1 path', async () => {
    const res = await call(gw, 'GET', '/v1/nope');
    expectError(res, 404, 'not_found');
  });

  it('answers 405 with Allow for a method a known path does not have', async () => {
    const res = await call(gw, 'PUT', `/v1/users/${newId('user')}`, { json: { name: 'x' } });
    expectError(res, 405, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('DELETE, GET, HEAD, OPTIONS, PATCH');
  });
});

describe('request ids', () => {
  it('gives every error a meta.requestId of shape req_..., echoed as X-Request-Id', async () => {
    const replies = await Promise.all([
      call(gw, 'GET', '/nope', { auth: false }),
      call(gw, 'GET', '/v1/users', { auth: false }),
      call(gw, 'GET', '/v1/users?limit=0'),
      call(gw, 'POST', '/v1/users', { raw: '{', headers: { 'content-type': 'application/json' } }),
      call(gw, 'POST', '/v1/users', { raw: 'hi', headers: { 'content-type': 'text/plain' } }),
      call(gw, 'GET', `/v1/users/${newId('user')}`),
    ]);
    expect(replies.map((r) => r.status)).toEqual([404, 401, 400, 400, 415, 404]);
    for (const r of replies) {
      expect(r.body.meta.requestId).toMatch(REQUEST_ID);
      expect(r.headers.get('x-request-id')).toBe(r.body.meta.requestId);
    }
    expect(new Set(replies.map((r) => r.body.meta.requestId)).size).toBe(replies.length);
  });

  it('reuses a well-formed incoming X-Request-Id in the body, the header and the service call', async () => {
    const incoming = newId('req');
    const res = await call(gw, 'GET', `/v1/users/${newId('user')}`, { headers: { 'x-request-id': incoming } });
    expectError(res, 404, 'not_found');
    expect(res.body.meta.requestId).toBe(incoming);
    expect(res.headers.get('x-request-id')).toBe(incoming);
    expect(gw.fake.callsOf('getUser').map((c) => c.options?.requestId)).toEqual([incoming]);
  });

  it('echoes a reused X-Request-Id on successful responses too', async () => {
    const incoming = newId('req');
    const res = await call(gw, 'GET', '/v1/users', { headers: { 'x-request-id': incoming } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toBe(incoming);
  });

  it.each([
    ['no req_ prefix', 'abc_01hzy3q0000000000000000000'],
    ['forbidden characters', 'req_<script>alert(1)</script>'],
    ['too short', 'req_1'],
    ['too long', `req_${'a'.repeat(65)}`],
  ])('replaces a malformed incoming X-Request-Id (%s)', async (_why, incoming) => {
    const res = await call(gw, 'GET', '/nope', { auth: false, headers: { 'x-request-id': incoming } });
    expectError(res, 404, 'not_found');
    expect(res.body.meta.requestId).not.toBe(incoming);
    expect(res.body.meta.requestId).toMatch(REQUEST_ID);
  });
});

describe('authentication', () => {
  it('answers 401 unauthorized without an Authorization header, without calling the service', async () => {
    const res = await call(gw, 'GET', '/v1/users', { auth: false });
    expectError(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toBe('Bearer realm="secsvc"');
    expect(gw.fake.calls).toHaveLength(0);
  });

  it('marks every answer as not cacheable and not to be sniffed', async () => {
    for (const res of [await call(gw, 'GET', '/v1/users'), await call(gw, 'GET', '/v1/users', { auth: false })]) {
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('answers 401 for a non-Bearer scheme (Basic x)', async () => {
    const res = await call(gw, 'GET', '/v1/users', { auth: false, headers: { authorization: 'Basic x' } });
    expectError(res, 401, 'unauthorized');
    expect(gw.fake.calls).toHaveLength(0);
  });

  it('answers 401 for an unknown key, after asking the identity service', async () => {
    const other = `svc_sk_${'b'.repeat(40)}`;
    const res = await call(gw, 'GET', '/v1/users', { auth: false, headers: { authorization: `Bearer ${other}` } });
    expectError(res, 401, 'unauthorized');
    expect(gw.fake.callsOf('authenticateApiKey').map((c) => c.request.key)).toEqual([other]);
    expect(gw.fake.callsOf('listUsers')).toHaveLength(0);
  });

  it('authenticates before validating, so an unauthenticated bad body is 401 not 400', async () => {
    const res = await call(gw, 'POST', '/v1/users', { auth: false, json: { email: 'nope' } });
    expectError(res, 401, 'unauthorized');
  });

  it('does not let the API key reach the response', async () => {
    const res = await call(gw, 'GET', '/v1/users', { auth: false, headers: { authorization: `Bearer ${VALID_KEY}x` } });
    expectError(res, 401, 'unauthorized');
    expect(res.text).not.toContain(VALID_KEY);
  });
});

describe('service failures', () => {
  it('answers 500 internal_error without the text of a plain Error', async () => {
    gw.fake.failWith('getUser', new Error('connection to postgres://admin:hunter2@db failed: SELECT * FROM users'));
    const res = await call(gw, 'GET', `/v1/users/${newId('user')}`);
    expectError(res, 500, 'internal_error');
    expect(res.body.error.message).not.toMatch(/hunter2|postgres|SELECT/);
    expect(res.text).not.toMatch(/hunter2|postgres|SELECT|at .*\.ts/);
    expect(res.body.error).not.toHaveProperty('details');
  });

  it('answers 500 when the key lookup itself fails with a plain Error', async () => {
    gw.fake.failWith('authenticateApiKey', new TypeError('Cannot read properties of undefined (reading keyId)'));
    const res = await call(gw, 'GET', '/v1/users');
    expectError(res, 500, 'internal_error');
    expect(res.text).not.toContain('keyId');
  });

  it("answers 503 for the service's AppError('unavailable')", async () => {
    gw.fake.failWith('listUsers', new AppError('unavailable', 'A backing service is unavailable'));
    const res = await call(gw, 'GET', '/v1/users');
    expectError(res, 503, 'unavailable');
    expect(res.body.error.message).toBe('A backing service is unavailable');
    // Worth retrying shortly (a service restarting under the launcher's supervision).
    expect(res.headers.get('retry-after')).toBe('2');
  });

  it("keeps the service's code, message and details of an AppError", async () => {
    gw.fake.failWith('createUser', AppError.field('roles[0]', 'no such role'));
    const res = await call(gw, 'POST', '/v1/users', { json: { email: 'ada@example.com', name: 'Ada', roles: ['role_x'] } });
    expectError(res, 400, 'invalid_request');
    expect(res.body.error.details).toEqual([{ field: 'roles[0]', message: 'no such role' }]);
  });
});
