import { call, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked as plain JSON
let doc: any;
beforeAll(async () => {
  gw = await startGateway();
  const res = await call(gw, 'GET', '/v1/openapi.json', { auth: false });
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(async () => {
  await gw.close();
});

describe('GET /v1/openapi.json', () => {
  it('is served without an API key and declares OpenAPI 3.1.0', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(gw.fake.calls).toHaveLength(0);
  });

  it('has /users with get and post, and /users/{id} with get, patch and delete', () => {
    expect(Object.keys(doc.paths).sort()).toEqual([
      '/api-keys',
      '/api-keys/{id}',
      '/api-keys/{id}/rotate',
      '/auth/login',
      '/auth/password-reset',
      '/auth/password-reset/confirm',
      '/logs',
      '/logs/export',
      '/logs/export/{id}',
      '/logs/search',
      '/logs/{id}',
      '/oauth/clients',
      '/oauth/clients/{id}',
      '/policies',
      '/policies/simulate',
      '/policies/{id}',
      '/sessions',
      '/sessions/revoke',
      '/sessions/verify',
      '/sso/connections',
      '/sso/connections/{id}',
      '/sso/logout',
      '/tokens',
      '/users',
      '/users/{id}',
      '/users/{id}/password',
      '/users/{id}/sessions',
    ]);
    expect(Object.keys(doc.paths['/users']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/users/{id}']).sort()).toEqual(['delete', 'get', 'patch']);
  });

  it('documents the POST /users request body with properties email, name, roles, metadata', () => {
    const schema = doc.paths['/users'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(schema.properties).sort()).toEqual(['email', 'metadata', 'name', 'roles']);
    expect([...schema.required].sort()).toEqual(['email', 'name']);
    expect(schema.additionalProperties).toBe(false);
  });

  it('documents the 201 response of POST /users with exactly the created fields', () => {
    const schema = doc.paths['/users'].post.responses['201'].content['application/json'].schema;
    expect(Object.keys(schema.properties.data.properties).sort()).toEqual(['createdAt', 'email', 'emailVerified', 'id', 'name', 'roles']);
  });

  it('documents the id path parameter and the limit and cursor query parameters', () => {
    const names = (op: { parameters: { name: string; in: string }[] }) => op.parameters.map((p) => `${p.in}:${p.name}`).sort();
    expect(names(doc.paths['/users/{id}'].get)).toEqual(['path:id']);
    expect(names(doc.paths['/users'].get)).toEqual(['query:cursor', 'query:limit']);
  });

  it('gives every operation an operationId and a 401 response', () => {
    for (const ops of Object.values(doc.paths) as Record<string, { operationId: string; responses: Record<string, unknown> }>[]) {
      for (const op of Object.values(ops)) {
        expect(op.operationId).toMatch(/^[a-z][A-Za-z]+$/);
        expect(op.responses).toHaveProperty('401');
      }
    }
  });
});
