import { newId } from '@secsvc/shared';
import { KEY_ID } from './support/fake-identity';
import { call, detailsOf, expectError, startGateway, type TestGateway } from './support/gateway';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.close();
});
beforeEach(() => gw.fake.reset());

async function createUser(body: Record<string, unknown> = {}) {
  const res = await call(gw, 'POST', '/v1/users', { json: { email: 'ada@example.com', name: 'Ada Lovelace', ...body } });
  expect(res.status).toBe(201);
  return res.body.data as { id: string; email: string; name: string };
}

describe('POST /v1/users', () => {
  it('answers 201 with exactly id, email, name, emailVerified=false, createdAt, roles', async () => {
    const res = await call(gw, 'POST', '/v1/users', {
      json: { email: 'ada@example.com', name: 'Ada Lovelace', roles: ['role_admin', 'role_billing'] },
    });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body)).toEqual(['data']);
    const data = res.body.data;
    expect(Object.keys(data).sort()).toEqual(['createdAt', 'email', 'emailVerified', 'id', 'name', 'roles']);
    expect(data).toEqual({
      id: expect.stringMatching(/^user_[0-9a-z]{26}$/),
      email: 'ada@example.com',
      name: 'Ada Lovelace',
      emailVerified: false,
      createdAt: expect.stringMatching(ISO_MS),
      roles: ['role_admin', 'role_billing'],
    });
    expect(data).not.toHaveProperty('updatedAt');
    expect(data).not.toHaveProperty('metadata');
  });

  it('defaults roles to [] and sends the identity service the environment of the key', async () => {
    const res = await call(gw, 'POST', '/v1/users', { json: { email: 'bob@example.com', name: 'Bob' } });
    expect(res.status).toBe(201);
    expect(res.body.data.roles).toEqual([]);
    const [sent] = gw.fake.callsOf('createUser');
    expect(sent!.request).toEqual({ environment: 'live', email: 'bob@example.com', name: 'Bob', roles: [], metadataJson: '' });
  });

  it('passes metadata on create to the service as JSON text', async () => {
    await createUser({ metadata: { plan: 'gold', n: 1 } });
    const [sent] = gw.fake.callsOf('createUser');
    expect(JSON.parse(sent!.request.metadataJson)).toEqual({ plan: 'gold', n: 1 });
  });

  it('gives the service the actor headers: x-actor-id is the API key id', async () => {
    const res = await call(gw, 'POST', '/v1/users', {
      json: { email: 'ada@example.com', name: 'Ada' },
      headers: { 'user-agent': 'gateway-test/1.0' },
    });
    expect(res.status).toBe(201);
    const [sent] = gw.fake.callsOf('createUser');
    expect(sent!.options).toBeDefined();
    expect(sent!.options!.headers).toEqual(
      expect.objectContaining({ 'x-actor-id': KEY_ID, 'x-actor-type': 'api_key', 'x-user-agent': 'gateway-test/1.0' }),
    );
    expect(sent!.options!.headers!['x-client-ip']).toMatch(/127\.0\.0\.1/);
    expect(sent!.options!.requestId).toBe(res.headers.get('x-request-id'));
    expect(sent!.options!.deadlineMs).toBe(1000);
  });

  it('maps the service conflict on a taken email to 409 with an email field detail', async () => {
    await createUser();
    const res = await call(gw, 'POST', '/v1/users', { json: { email: 'ADA@example.com', name: 'Other Ada' } });
    expectError(res, 409, 'conflict');
    expect(res.body.error.details).toEqual([{ field: 'email', message: 'already in use' }]);
  });
});

describe('GET /v1/users/:id', () => {
  it('answers the full form, with metadata {} when the user has none', async () => {
    const created = await createUser({ roles: ['role_viewer'] });
    const res = await call(gw, 'GET', `/v1/users/${created.id}`);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['data']);
    expect(Object.keys(res.body.data).sort()).toEqual(['createdAt', 'email', 'emailVerified', 'id', 'metadata', 'name', 'roles', 'updatedAt']);
    expect(res.body.data).toEqual({
      id: created.id,
      email: 'ada@example.com',
      name: 'Ada Lovelace',
      emailVerified: false,
      roles: ['role_viewer'],
      metadata: {},
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: expect.stringMatching(ISO_MS),
    });
  });

  it('answers 404 in the error shape for a well-formed id that does not exist', async () => {
    const id = newId('user');
    const res = await call(gw, 'GET', `/v1/users/${id}`);
    expectError(res, 404, 'not_found');
    expect(gw.fake.callsOf('getUser').map((c) => c.request.id)).toEqual([id]);
  });

  it('answers 404 for a malformed id without calling the service', async () => {
    const res = await call(gw, 'GET', '/v1/users/not-a-user-id');
    expectError(res, 404, 'not_found');
    expect(gw.fake.callsOf('getUser')).toHaveLength(0);
  });
});

describe('PATCH /v1/users/:id', () => {
  it('answers exactly id, email, name, updatedAt, metadata, returning nested metadata as given', async () => {
    const created = await createUser();
    const metadata = {
      nested: { deeper: { list: [1, 'two', null, { three: 3.5 }] } },
      nothing: null,
      count: -42,
      ratio: 0.125,
      big: 1e21,
      flag: false,
      empty: {},
      emptyList: [],
      text: 'ünïcödé ✓',
    };
    const res = await call(gw, 'PATCH', `/v1/users/${created.id}`, { json: { name: 'Countess Ada', metadata } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['email', 'id', 'metadata', 'name', 'updatedAt']);
    expect(res.body.data).toEqual({
      id: created.id,
      email: 'ada@example.com',
      name: 'Countess Ada',
      updatedAt: expect.stringMatching(ISO_MS),
      metadata,
    });
  });

  it('keeps the updated metadata on a later GET (full form)', async () => {
    const created = await createUser();
    const metadata = { a: [null, 1, { b: [true] }] };
    expect((await call(gw, 'PATCH', `/v1/users/${created.id}`, { json: { metadata } })).status).toBe(200);
    const res = await call(gw, 'GET', `/v1/users/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body.data.metadata).toEqual(metadata);
    expect(res.body.data.name).toBe('Ada Lovelace');
  });

  it('sends only the given fields to the service (name alone leaves metadata undefined)', async () => {
    const created = await createUser();
    const res = await call(gw, 'PATCH', `/v1/users/${created.id}`, { json: { name: 'Ada B.' } });
    expect(res.status).toBe(200);
    expect(res.body.data.metadata).toEqual({});
    const [sent] = gw.fake.callsOf('updateUser');
    expect(sent!.request).toEqual({ environment: 'live', id: created.id, name: 'Ada B.', metadataJson: undefined });
  });

  it('replaces roles, and names each faulty role in details (answering the same form, without roles)', async () => {
    const created = await createUser();
    const res = await call(gw, 'PATCH', `/v1/users/${created.id}`, { json: { roles: ['role_admin', 'role_ops'] } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.data).sort()).toEqual(['email', 'id', 'metadata', 'name', 'updatedAt']);
    expect(gw.fake.callsOf('updateUser')[0]!.request).toEqual({ environment: 'live', id: created.id, roles: { values: ['role_admin', 'role_ops'] } });
    expect((await call(gw, 'GET', `/v1/users/${created.id}`)).body.data.roles).toEqual(['role_admin', 'role_ops']);
    expect((await call(gw, 'PATCH', `/v1/users/${created.id}`, { json: { roles: [] } })).status).toBe(200);
    expect(gw.fake.callsOf('updateUser')[1]!.request.roles).toEqual({ values: [] });
    const bad = await call(gw, 'PATCH', `/v1/users/${created.id}`, { json: { roles: ['role_ok', 'Admin!', 7] } });
    expect(detailsOf(bad)).toEqual([
      { field: 'roles[1]', message: 'must look like role_<name> (a-z, 0-9, _ and -)' },
      { field: 'roles[2]', message: 'must be a string' },
    ]);
    expect(gw.fake.callsOf('updateUser')).toHaveLength(2);
  });

  it('answers 404 for an unknown user', async () => {
    const res = await call(gw, 'PATCH', `/v1/users/${newId('user')}`, { json: { name: 'X' } });
    expectError(res, 404, 'not_found');
  });

  it('answers 404 for a malformed id without calling the service', async () => {
    const res = await call(gw, 'PATCH', '/v1/users/user_bad', { json: { name: 'X' } });
    expectError(res, 404, 'not_found');
    expect(gw.fake.callsOf('updateUser')).toHaveLength(0);
  });
});

describe('DELETE /v1/users/:id', () => {
  it('answers 204 with an empty body', async () => {
    const created = await createUser();
    const res = await call(gw, 'DELETE', `/v1/users/${created.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expect(gw.fake.users.has(created.id)).toBe(false);
  });

  it('makes a later GET answer 404 in the error shape', async () => {
    const created = await createUser();
    expect((await call(gw, 'DELETE', `/v1/users/${created.id}`)).status).toBe(204);
    const res = await call(gw, 'GET', `/v1/users/${created.id}`);
    expectError(res, 404, 'not_found');
    expect(res.body.error).not.toHaveProperty('details');
  });

  it('answers 404 when deleting twice', async () => {
    const created = await createUser();
    expect((await call(gw, 'DELETE', `/v1/users/${created.id}`)).status).toBe(204);
    expectError(await call(gw, 'DELETE', `/v1/users/${created.id}`), 404, 'not_found');
  });
});

describe('GET /v1/users', () => {
  it('lists items with exactly id, email, name, createdAt, roles and hasMore=false without nextCursor', async () => {
    const created = await createUser({ roles: ['role_a'], metadata: { x: 1 } });
    const res = await call(gw, 'GET', '/v1/users');
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['data', 'pagination']);
    expect(res.body.data).toEqual([
      { id: created.id, email: 'ada@example.com', name: 'Ada Lovelace', createdAt: expect.stringMatching(ISO_MS), roles: ['role_a'] },
    ]);
    expect(res.body.pagination).toEqual({ hasMore: false });
  });

  it('passes limit and the returned nextCursor through, so pages follow each other', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createUser({ email: `u${i}@example.com` })).id);
    const first = await call(gw, 'GET', '/v1/users?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.data.map((u: { id: string }) => u.id)).toEqual([ids[2], ids[1]]);
    expect(first.body.pagination).toEqual({ hasMore: true, nextCursor: `cur_${ids[1]}` });

    const second = await call(gw, 'GET', `/v1/users?limit=2&cursor=${first.body.pagination.nextCursor}`);
    expect(second.status).toBe(200);
    expect(second.body.data.map((u: { id: string }) => u.id)).toEqual([ids[0]]);
    expect(second.body.pagination).toEqual({ hasMore: false });
    expect(gw.fake.callsOf('listUsers').map((c) => c.request)).toEqual([
      { environment: 'live', limit: 2, cursor: '' },
      { environment: 'live', limit: 2, cursor: `cur_${ids[1]}` },
    ]);
  });

  it('searches by part of the email (case-insensitive), page by page, passing the text to the service', async () => {
    const ada = await createUser({ email: 'ada@example.com' });
    await createUser({ email: 'grace@example.org' });
    const adaB = await createUser({ email: 'ADA.b@example.com' });
    const first = await call(gw, 'GET', '/v1/users?email=Ada&limit=1');
    expect(first.body.data.map((u: { id: string }) => u.id)).toEqual([adaB.id]);
    const second = await call(gw, 'GET', `/v1/users?email=Ada&limit=1&cursor=${first.body.pagination.nextCursor}`);
    expect(second.body.data.map((u: { id: string }) => u.id)).toEqual([ada.id]);
    expect(gw.fake.callsOf('listUsers')[0]!.request).toEqual({ environment: 'live', limit: 1, cursor: '', email: 'Ada' });
    expect(detailsOf(await call(gw, 'GET', '/v1/users?email='))).toEqual([{ field: 'email', message: 'must not be empty' }]);
    expect(detailsOf(await call(gw, 'GET', `/v1/users?email=${'x'.repeat(255)}`))).toEqual([{ field: 'email', message: 'must be at most 254 characters' }]);
    expect(detailsOf(await call(gw, 'GET', '/v1/users?email=a&email=b'))).toEqual([{ field: 'email', message: 'must be a single string' }]);
  });
});
