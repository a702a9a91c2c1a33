import { newId } from '@secsvc/shared';
import { call, detailsOf, expectError, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.close();
});
beforeEach(() => gw.fake.reset());

const valid = { email: 'ada@example.com', name: 'Ada' };
const fields = (details: { field: string }[]) => details.map((d) => d.field);

describe('POST /v1/users body', () => {
  it('reports a malformed email as a field error with "invalid email format"', async () => {
    const res = await call(gw, 'POST', '/v1/users', { json: { ...valid, email: 'not-an-email' } });
    expect(detailsOf(res)).toEqual([{ field: 'email', message: 'invalid email format' }]);
    expect(gw.fake.callsOf('createUser')).toHaveLength(0);
  });

  it('names each field of the wrong type (name: 5, roles: "x", metadata: [])', async () => {
    const res = await call(gw, 'POST', '/v1/users', { json: { email: 'ada@example.com', name: 5, roles: 'x', metadata: [] } });
    expect(fields(detailsOf(res))).toEqual(['metadata', 'name', 'roles']);
    expect(gw.fake.callsOf('createUser')).toHaveLength(0);
  });

  it('names the offending role by index when it is not role_<name>', async () => {
    const res = await call(gw, 'POST', '/v1/users', { json: { ...valid, roles: ['role_admin', 'admin'] } });
    const details = detailsOf(res);
    expect(fields(details)).toEqual(['roles[1]']);
    expect(details[0]!.message).toMatch(/role_/);
  });

  it('names an unknown body field with "unknown field"', async () => {
    const res = await call(gw, 'POST', '/v1/users', { json: { ...valid, isAdmin: true } });
    expect(detailsOf(res)).toEqual([{ field: 'isAdmin', message: 'unknown field' }]);
  });

  it('names missing email and name', async () => {
    const res = await call(gw, 'POST', '/v1/users', { json: {} });
    expect(detailsOf(res)).toEqual([
      { field: 'email', message: 'is required' },
      { field: 'name', message: 'is required' },
    ]);
  });

  it('names missing email and name when the request has no body at all', async () => {
    const res = await call(gw, 'POST', '/v1/users');
    expect(fields(detailsOf(res))).toEqual(['email', 'name']);
  });

  it('answers 400 invalid_request for malformed JSON', async () => {
    const res = await call(gw, 'POST', '/v1/users', { raw: '{"email": "a@b.co",', headers: { 'content-type': 'application/json' } });
    expect(detailsOf(res)).toEqual([{ field: '(body)', message: 'malformed JSON' }]);
  });

  it('answers 413 payload_too_large for a body over 1 MiB', async () => {
    const raw = JSON.stringify({ ...valid, metadata: { blob: 'x'.repeat(1024 * 1024) } });
    const res = await call(gw, 'POST', '/v1/users', { raw, headers: { 'content-type': 'application/json' } });
    expectError(res, 413, 'payload_too_large');
    expect(gw.fake.callsOf('createUser')).toHaveLength(0);
  });

  it('answers 415 for a body that is not application/json', async () => {
    const res = await call(gw, 'POST', '/v1/users', { raw: 'email=ada@example.com&name=Ada', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expectError(res, 415, 'unsupported_media_type');
    expect(gw.fake.callsOf('createUser')).toHaveLength(0);
  });

  it('answers 415 for a body without any content-type', async () => {
    const res = await call(gw, 'POST', '/v1/users', { raw: new TextEncoder().encode(JSON.stringify(valid)) });
    expectError(res, 415, 'unsupported_media_type');
  });
});

describe('PATCH /v1/users/:id body', () => {
  it('answers 400 for an empty object', async () => {
    const res = await call(gw, 'PATCH', `/v1/users/${newId('user')}`, { json: {} });
    expect(detailsOf(res)).toHaveLength(1);
    expect(gw.fake.callsOf('updateUser')).toHaveLength(0);
  });

  it('answers 400 naming email as an unknown field (email cannot be changed)', async () => {
    const res = await call(gw, 'PATCH', `/v1/users/${newId('user')}`, { json: { name: 'Ada', email: 'new@example.com' } });
    expect(detailsOf(res)).toEqual([{ field: 'email', message: 'unknown field' }]);
    expect(gw.fake.callsOf('updateUser')).toHaveLength(0);
  });

  it('names metadata when it is not an object', async () => {
    const res = await call(gw, 'PATCH', `/v1/users/${newId('user')}`, { json: { metadata: 'x' } });
    expect(fields(detailsOf(res))).toEqual(['metadata']);
  });
});

describe('body edge cases', () => {
  it('answers 415 for a JSON body in a charset other than UTF-8', async () => {
    const res = await call(gw, 'POST', '/v1/users', {
      raw: JSON.stringify(valid),
      headers: { 'content-type': 'application/json; charset=latin1' },
    });
    expectError(res, 415, 'unsupported_media_type');
  });

  it('answers 400 malformed JSON for a top-level JSON string (strict parsing)', async () => {
    const res = await call(gw, 'POST', '/v1/users', { raw: '"ada@example.com"', headers: { 'content-type': 'application/json' } });
    expect(detailsOf(res)).toEqual([{ field: '(body)', message: 'malformed JSON' }]);
  });

  it('answers 400 for a top-level JSON array', async () => {
    const res = await call(gw, 'POST', '/v1/users', { json: [valid] });
    expect(fields(detailsOf(res))).toEqual(['(body)']);
    expect(gw.fake.callsOf('createUser')).toHaveLength(0);
  });

  it('refuses a "__proto__" metadata key with 400 naming metadata instead of dropping it', async () => {
    const created = await call(gw, 'POST', '/v1/users', { json: valid });
    expect(created.status).toBe(201);
    const res = await call(gw, 'PATCH', `/v1/users/${created.body.data.id}`, {
      raw: '{"metadata":{"__proto__":{"admin":true},"a":1}}',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(fields(detailsOf(res))).toEqual(['metadata']);
  });
});

describe('GET /v1/users query', () => {
  it.each(['0', '101', 'abc'])('answers 400 naming limit for limit=%s', async (limit) => {
    const res = await call(gw, 'GET', `/v1/users?limit=${limit}`);
    expect(fields(detailsOf(res))).toEqual(['limit']);
    expect(gw.fake.callsOf('listUsers')).toHaveLength(0);
  });

  it('accepts the bounds limit=1 and limit=100', async () => {
    expect((await call(gw, 'GET', '/v1/users?limit=1')).status).toBe(200);
    expect((await call(gw, 'GET', '/v1/users?limit=100')).status).toBe(200);
    expect(gw.fake.callsOf('listUsers').map((c) => c.request.limit)).toEqual([1, 100]);
  });

  it('defaults limit to 20', async () => {
    const res = await call(gw, 'GET', '/v1/users');
    expect(res.status).toBe(200);
    expect(gw.fake.callsOf('listUsers').map((c) => c.request.limit)).toEqual([20]);
  });

  it('passes the cursor through to the service unchanged', async () => {
    const cursor = `cur_${newId('user')}`;
    const res = await call(gw, 'GET', `/v1/users?cursor=${cursor}`);
    expect(res.status).toBe(200);
    expect(gw.fake.callsOf('listUsers').map((c) => c.request.cursor)).toEqual([cursor]);
  });

  it("relays the service's invalid cursor error as 400 naming cursor", async () => {
    const res = await call(gw, 'GET', '/v1/users?cursor=garbage');
    expect(fields(detailsOf(res))).toEqual(['cursor']);
  });

  it('answers 400 naming an unknown query parameter', async () => {
    const res = await call(gw, 'GET', '/v1/users?sort=name');
    expect(detailsOf(res)).toEqual([{ field: 'sort', message: 'unknown field' }]);
    expect(gw.fake.callsOf('listUsers')).toHaveLength(0);
  });

  it('answers 400 naming limit when it is given twice', async () => {
    const res = await call(gw, 'GET', '/v1/users?limit=1&limit=2');
    expect(fields(detailsOf(res))).toEqual(['limit']);
  });
});
