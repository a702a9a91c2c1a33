import http from 'node:http';
import { INPUT_LIMITS } from '@secsvc/shared';
import { routes } from '../src/routes';
import { VALID_KEY } from './support/fake-identity';
import { call, detailsOf, expectError, startGateway, type TestGateway } from './support/gateway';

// The one guard against input no service can store (NUL, lone surrogates, bytes that are not UTF-8) or walk
// safely (nesting past INPUT_LIMITS.maxDepth), on every route, and HTTP method semantics from the document.

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway({ extra: { oauth: { issuer: 'http://127.0.0.1:8080' }, sso: { baseUrl: 'http://127.0.0.1:8080', clockSkewMs: 0, requestTtlSeconds: 600 } } });
});
afterAll(async () => {
  await gw.close();
});

/** node:http, for methods fetch refuses to send (TRACE). */
function rawCall(g: TestGateway, method: string, path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${g.url}${path}`, { method, headers: { authorization: `Bearer ${VALID_KEY}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const concrete = (path: string) => `/v1${path.replace(/:([A-Za-z]+)/g, 'x_1')}`;
/** Calls other than authenticating the key: none may happen for refused input. */
const serviceCalls = () => gw.fake.calls.filter((c) => c.method !== 'authenticateApiKey');

describe('hostile input on every route', () => {
  beforeEach(() => gw.fake.calls.splice(0));

  const withBody = routes.filter((r) => r.body);
  it.each(withBody.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))('%s: NUL in a value and in a key is 400 naming both', async (_name, r) => {
    const res = await call(gw, r.method.toUpperCase(), concrete(r.path), { json: { name: 'a\u0000b', nested: { ['k\u0000']: ['ok', '\u0000'] } } });
    expect(detailsOf(res)).toEqual([
      { field: 'name', message: 'must not contain the NUL character (U+0000)' },
      { field: 'nested.k\\u0000', message: 'key must not contain the NUL character (U+0000)' },
    ]);
    expect(serviceCalls()).toEqual([]);
  });

  it.each(routes.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r] as const))('%s: NUL in the query is 400 naming the parameter', async (_name, r) => {
    const res = await call(gw, r.method.toUpperCase(), `${concrete(r.path)}?cursor=%00&limit=1`, r.body ? { json: {} } : {});
    expect(detailsOf(res)).toEqual([{ field: 'cursor', message: 'must not contain the NUL character (U+0000)' }]);
    expect(serviceCalls()).toEqual([]);
  });

  it('refuses NUL in the path, a percent-escape that is not UTF-8 in the path or the query', async () => {
    expect(detailsOf(await call(gw, 'GET', '/v1/users/user_%00'))).toEqual([{ field: '(path)', message: 'must not contain the NUL character (U+0000)' }]);
    expect(detailsOf(await call(gw, 'GET', '/v1/users/%FF'))).toEqual([{ field: '(path)', message: 'must be percent-encoded UTF-8' }]);
    expect(detailsOf(await call(gw, 'GET', '/v1/users?cursor=%C3%28'))).toEqual([{ field: '(query)', message: 'must be percent-encoded UTF-8' }]);
    expect(serviceCalls()).toEqual([]);
    // A stray % is left alone, as the query parser does (the cursor is then refused as a cursor).
    expect((await call(gw, 'GET', '/v1/users?cursor=100%')).status).not.toBe(500);
  });

  it('refuses a body that is not UTF-8 instead of storing U+FFFD', async () => {
    const raw = Buffer.concat([Buffer.from('{"email":"b@example.com","name":"x'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    const res = await call(gw, 'POST', '/v1/users', { raw, headers: { 'content-type': 'application/json' } });
    expect(detailsOf(res)).toEqual([{ field: '(body)', message: 'must be UTF-8 (RFC 8259)' }]);
    expect(serviceCalls()).toEqual([]);
  });

  it('refuses lone surrogates (which PostgreSQL jsonb cannot take) by their path', async () => {
    const res = await call(gw, 'POST', '/v1/users', { raw: '{"email":"b@example.com","name":"\\ud800","metadata":{"a":["\\udfff"]}}', headers: { 'content-type': 'application/json' } });
    expect(detailsOf(res)).toEqual([
      { field: 'metadata.a[0]', message: 'must be valid Unicode (it contains a lone surrogate)' },
      { field: 'name', message: 'must be valid Unicode (it contains a lone surrogate)' },
    ]);
  });

  it('refuses metadata nested 100,000 levels deep with a 400 naming where it got too deep', async () => {
    const raw = `{"email":"b@example.com","name":"x","metadata":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_001)}`;
    const res = await call(gw, 'POST', '/v1/users', { raw, headers: { 'content-type': 'application/json' } });
    const details = detailsOf(res);
    expect(details).toEqual([{ field: `metadata${'.a'.repeat(INPUT_LIMITS.maxDepth - 1)}`, message: `is nested too deeply (at most ${INPUT_LIMITS.maxDepth} levels of objects and arrays)` }]);
    expect(serviceCalls()).toEqual([]);
  });

  it('refuses NUL in an OAuth form in the RFC 6749 error shape, before any client is looked up', async () => {
    const res = await call(gw, 'POST', '/oauth/token', { raw: 'grant_type=client_credentials&client_id=a%00b&client_secret=x', headers: { 'content-type': 'application/x-www-form-urlencoded' }, auth: false });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ error: 'invalid_request', error_description: 'client_id must not contain the NUL character (U+0000)' });
    // In a pair the parser drops (an empty name), still refused: the guard sees the raw form.
    const dropped = await call(gw, 'POST', '/oauth/logout', { raw: 'state=s&=a%00b', headers: { 'content-type': 'application/x-www-form-urlencoded' }, auth: false });
    expect(dropped.status).toBe(400);
    expect(dropped.body).toEqual({ error: 'invalid_request', error_description: '(body) must not contain the NUL character (U+0000)' });
    expect(serviceCalls()).toEqual([]);
  });

  it('answers a form with more parameters than an endpoint reads with 400, never 500 (SAML ACS, OAuth token)', async () => {
    const form = Array.from({ length: 120 }, (_, i) => `p${i}=x`).join('&');
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(detailsOf(await call(gw, 'POST', `/v1/sso/saml/sso_${'0'.repeat(26)}/acs`, { raw: form, headers, auth: false }))).toEqual([{ field: '(body)', message: 'has more parameters than this endpoint reads' }]);
    const token = await call(gw, 'POST', '/oauth/token', { raw: form, headers, auth: false });
    expect({ status: token.status, error: token.body?.error }).toEqual({ status: 400, error: 'invalid_request' });
    expect(serviceCalls()).toEqual([]);
  });

  it('refuses NUL in a query outside /v1 too, in the error shape', async () => {
    expectError(await call(gw, 'GET', '/oauth/authorize?client_id=a%00', { auth: false }), 400, 'invalid_request');
    expect(serviceCalls()).toEqual([]);
  });
});

describe('HTTP method semantics', () => {
  it('answers 405 with Allow for a documented path and an undocumented method, TRACE included', async () => {
    for (const [method, path, allow] of [
      ['TRACE', '/v1/users', 'GET, HEAD, OPTIONS, POST'],
      ['PUT', '/v1/users', 'GET, HEAD, OPTIONS, POST'],
      ['DELETE', '/v1/policies/simulate', 'OPTIONS, POST'],
      ['GET', '/v1/policies/simulate', 'OPTIONS, POST'],
      ['GET', '/v1/logs/search', 'OPTIONS, POST'],
      ['POST', '/v1/openapi.json', 'GET, HEAD, OPTIONS'],
      ['GET', '/oauth/token/', 'OPTIONS, POST'],
    ] as const) {
      const res = await rawCall(gw, method, path);
      expect({ method, path, status: res.status, allow: res.headers.allow }).toEqual({ method, path, status: 405, allow });
      expect(JSON.parse(res.text).error.code).toBe('method_not_allowed');
      expect(res.headers['x-ratelimit-limit']).toBeDefined();
    }
  });

  it('answers OPTIONS with exactly the methods of the path (a concrete path before a templated one)', async () => {
    for (const [path, allow] of [
      ['/v1/policies/simulate', 'OPTIONS, POST'],
      ['/v1/logs/export', 'OPTIONS, POST'],
      ['/v1/logs/export/exp_1', 'GET, HEAD, OPTIONS'],
      ['/v1/users/user_1', 'DELETE, GET, HEAD, OPTIONS, PATCH'],
      ['/oauth/authorize', 'GET, HEAD, OPTIONS, POST'],
    ] as const) {
      const res = await call(gw, 'OPTIONS', path, { auth: false });
      expect({ path, status: res.status, allow: res.headers.get('allow') }).toEqual({ path, status: 204, allow });
      expect(res.headers.get('x-ratelimit-remaining')).not.toBeNull();
    }
    expectError(await call(gw, 'OPTIONS', '/v1/nope'), 404, 'not_found');
  });

  it('serves HEAD wherever GET is served, without a body', async () => {
    const res = await call(gw, 'HEAD', '/v1/users');
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect(res.headers.get('x-ratelimit-limit')).not.toBeNull();
  });
});
