import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import express from 'express';
import { createApp } from '../src/app';
import { buildOpenApi, openApiDocument } from '../src/openapi';
import { routes } from '../src/routes';
import type { Route } from '../src/routes/route';
import { call, startGateway, type TestGateway } from './support/gateway';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the document is walked as plain JSON
type Doc = any;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const operations = (doc: Doc) =>
  Object.entries(doc.paths as Record<string, Record<string, Doc>>).flatMap(([p, item]) =>
    Object.entries(item)
      .filter(([m]) => METHODS.includes(m))
      .map(([method, op]) => ({ path: p, method, op })),
  );

/** The document of a gateway with every surface on (the test gateway serves no OAuth, SSO or downloads). */
const FULL = { issuer: 'http://127.0.0.1:8080', rateLimited: true, oauth: true, sso: true, downloadBaseUrl: 'http://127.0.0.1:8080/downloads' };
const full = () => openApiDocument(FULL);

/** The routes of the route table a document lacks (no operation at their path and method, or another operationId). */
const undocumented = (d: Doc, table: Route[]) =>
  table.filter((r) => d.paths[`/v1${r.path.replace(/:([A-Za-z]+)/g, '{$1}')}`]?.[r.method]?.operationId !== r.operationId).map((r) => `${r.method} ${r.path}`);

let gw: TestGateway;
let doc: Doc;
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
  it('is served without an API key and valid against the OpenAPI 3.1 meta-schema', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(gw.fake.calls).toHaveLength(0);
    // The validator (the official 3.1 schema and dialect, through ajv) is an ES module: run it in its own node.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'openapi-'));
    try {
      const file = path.join(dir, 'doc.json');
      writeFileSync(file, JSON.stringify(doc));
      const script = `import { Validator } from '@seriousme/openapi-schema-validator';
        const v = new Validator(); const r = await v.validate(${JSON.stringify(file)});
        console.log(JSON.stringify({ valid: r.valid, version: v.version, errors: r.errors ?? null }));`;
      const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: __dirname, encoding: 'utf8' }));
      expect(out).toEqual({ valid: true, version: '3.1', errors: null });
      // And it can fail: a document with a broken reference is refused.
      writeFileSync(file, JSON.stringify({ ...doc, paths: { '/x': { get: { responses: { 200: { $ref: '#/components/responses/Nope' } } } } } }));
      const bad = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: __dirname, encoding: 'utf8' }));
      expect(bad.valid).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names the public origin (ISSUER) as its server', async () => {
    const d = openApiDocument({ issuer: 'https://auth.example.com/', rateLimited: true, oauth: true, sso: true });
    expect(d.servers).toEqual([{ url: 'https://auth.example.com', description: expect.any(String) }]);
    expect((d.components.securitySchemes.oauth2.flows.authorizationCode as Doc).tokenUrl).toBe('https://auth.example.com/oauth/token');
    expect(d.components.securitySchemes.openIdConnect.openIdConnectUrl).toBe('https://auth.example.com/.well-known/openid-configuration');
  });

  it('documents every /v1 JSON route of the route table, and nothing twice', () => {
    expect(routes.length).toBeGreaterThan(40);
    expect(undocumented(doc, routes)).toEqual([]);
    // And it can fail: a document built without one of the routes is missing exactly that one.
    const [first, ...rest] = routes;
    expect(undocumented(buildOpenApi(rest, FULL), routes)).toEqual([`${first!.method} ${first!.path}`]);
    const ids = operations(full()).map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z]+$/);
  });

  it('documents every route the app serves (each Express route path is a documented path or its mounted tail)', () => {
    // Record every route the app registers, on every router, while one is built with every surface on.
    const router = Object.getPrototypeOf(Object.getPrototypeOf(express.Router())) as { route: (p: string) => unknown };
    const original = router.route;
    const seen: string[] = [];
    router.route = function (this: unknown, p: string | string[]) {
      for (const one of [p].flat()) seen.push(one);
      return original.call(this, p as string);
    };
    try {
      createApp({ ...gw.deps, oauth: { issuer: 'http://127.0.0.1:8080' }, sso: { baseUrl: 'http://127.0.0.1:8080', clockSkewMs: 0, requestTtlSeconds: 600 }, downloads: { baseUrl: 'http://127.0.0.1:8080/downloads', open: () => undefined as never } });
    } finally {
      router.route = original;
    }
    const documented = Object.keys(full().paths);
    // The /v1 API routes are not Express routes (app.ts dispatches them from the document's own table): these
    // are the other routers' (OAuth, console, SSO, downloads).
    expect(seen.length).toBeGreaterThan(20);
    const undocumented = seen.map((p) => p.replace(/:([A-Za-z]+)/g, '{$1}')).filter((p) => !documented.some((d) => d === p || d.endsWith(p)));
    expect(undocumented).toEqual([]);
  });

  it('gives open routes security [] and every other operation the bearer scheme plus its OAuth scope', () => {
    for (const r of routes) {
      const op = doc.paths[`/v1${r.path.replace(/:([A-Za-z]+)/g, '{$1}')}`][r.method];
      const scope = r.scope;
      if (r.anonymous) expect(op.security).toEqual([]);
      else expect(op.security).toEqual([{ bearerAuth: [] }, ...(scope ? [{ oauth2: [scope] }, { openIdConnect: [scope] }] : [])]);
    }
    expect(doc.paths['/v1/auth/login'].post.security).toEqual([]);
    expect(full().paths['/oauth/token']!.post!.security).toEqual([]);
    expect(doc.paths['/v1/users'].get.security).toContainEqual({ oauth2: ['read:users'] });
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(['bearerAuth', 'oauth2', 'openIdConnect']);
    expect(Object.keys(doc.components.securitySchemes.oauth2.flows).sort()).toEqual(['authorizationCode', 'clientCredentials']);
    expect(doc.components.securitySchemes.oauth2.flows.clientCredentials.scopes).toHaveProperty('write:policies');
  });

  it('lists every error status each operation can return, in the error shape, with the rate-limit headers', () => {
    const resolve = (r: Doc) => (r.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r);
    for (const { path: p, method, op } of operations(doc)) {
      const statuses = Object.keys(op.responses);
      const probe = p === '/healthz' || p === '/readyz';
      if (!probe) expect(statuses).toEqual(expect.arrayContaining(['400', '429']));
      expect(statuses).toEqual(expect.arrayContaining(['408', '431']));
      for (const [status, ref] of Object.entries(op.responses as Record<string, Doc>)) {
        const res = resolve(ref);
        expect(res.headers?.['X-Request-Id']).toBeDefined();
        // 408 and 431 come from the HTTP server itself, before the rate limiter: the request id only.
        if (status === '408' || status === '431') expect(Object.keys(res.headers)).toEqual(['X-Request-Id']);
        else if (!probe) expect(Object.keys(res.headers)).toEqual(expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']));
        if (status === '429') expect(res.headers['Retry-After']).toBeDefined();
        if (p.startsWith('/v1/') && !p.startsWith('/v1/sso/saml') && Number(status) >= 400) {
          expect({ op: `${method} ${p} ${status}`, schema: res.content['application/json'].schema }).toEqual({ op: `${method} ${p} ${status}`, schema: { $ref: '#/components/schemas/Error' } });
        }
      }
    }
    const route = (m: string, p: string) => Object.keys(doc.paths[p][m].responses);
    expect(route('post', '/v1/users')).toEqual(['201', '400', '401', '403', '408', '409', '413', '415', '429', '431', '500', '503']);
    expect(route('get', '/v1/users/{id}')).toEqual(['200', '400', '401', '403', '404', '408', '429', '431', '500', '503']);
    expect(doc.components.headers['X-RateLimit-Limit'].required).toBe(true);
  });

  it('has named components for the resources, referenced by the operations', () => {
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['User', 'Policy', 'SimulationResult', 'LogEntry', 'LogExport', 'Session', 'ApiKey', 'Pagination', 'Error']),
    );
    const json = (p: string, m: string, s: string) => doc.paths[p][m].responses[s].content['application/json'].schema;
    expect(json('/v1/users/{id}', 'get', '200').properties.data).toEqual({ $ref: '#/components/schemas/User' });
    expect(json('/v1/users', 'get', '200').properties.pagination).toEqual({ $ref: '#/components/schemas/Pagination' });
    expect(json('/v1/policies/simulate', 'post', '200').properties.data).toEqual({ $ref: '#/components/schemas/SimulationResult' });
    expect(json('/v1/logs/{id}', 'get', '200').properties.data).toEqual({ $ref: '#/components/schemas/LogEntry' });
    expect(json('/v1/logs/export/{id}', 'get', '200').properties.data).toEqual({ $ref: '#/components/schemas/LogExport' });
    // The error code is one of the table's, mfa_required (a step-up) included, under 403 with the challenge header.
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toEqual(expect.arrayContaining(['forbidden', 'mfa_required', 'invalid_request']));
    expect(doc.components.responses.Forbidden.description).toContain('mfa_required');
    expect(doc.components.responses.Forbidden.headers['WWW-Authenticate']).toEqual({ $ref: '#/components/headers/WWW-Authenticate' });
    // Every reference resolves.
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/(\w+)\/([\w-]+)"/g)];
    for (const [, kind, name] of refs) expect(doc.components[kind!]?.[name!]).toBeDefined();
  });

  it('documents the POST /v1/users body and the bounds the server enforces', () => {
    const schema = doc.paths['/v1/users'].post.requestBody.content['application/json'].schema;
    expect(Object.keys(schema.properties).sort()).toEqual(['email', 'metadata', 'name', 'roles']);
    expect([...schema.required].sort()).toEqual(['email', 'name']);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.email).toMatchObject({ maxLength: 254, format: 'email' });
    const limit = doc.paths['/v1/users'].get.parameters.find((p: Doc) => p.name === 'limit');
    expect(limit).toMatchObject({ in: 'query', required: false });
    const names = (op: { parameters: { name: string; in: string }[] }) => op.parameters.map((p) => `${p.in}:${p.name}`).sort();
    expect(names(doc.paths['/v1/users/{id}'].get)).toEqual(['path:id']);
    expect(names(doc.paths['/v1/users'].get)).toEqual(['query:cursor', 'query:email', 'query:limit']);
  });

  it('documents the routes outside /v1 JSON: OAuth forms, SAML endpoints, probes and the download host', () => {
    const doc: Doc = full();
    expect(doc.paths['/oauth/token'].post.requestBody.content).toHaveProperty('application/x-www-form-urlencoded');
    expect(Object.keys(doc.paths['/oauth/authorize']).sort()).toEqual(['get', 'post']);
    expect(doc.paths['/oauth/authorize'].get.responses['302'].headers.Location.required).toBe(true);
    expect(doc.paths['/.well-known/jwks.json'].get).toBeDefined();
    expect(doc.paths['/healthz'].get.security).toEqual([]);
    const other = openApiDocument({ issuer: 'http://127.0.0.1:8080', rateLimited: true, oauth: true, sso: true, downloadBaseUrl: 'https://files.example.com/dl' });
    expect(Object.keys(other.paths)).toEqual(expect.arrayContaining(['/v1/sso/saml/{id}/acs', '/v1/sso/saml/{id}/slo', '/dl/{file}']));
    expect((other.paths['/dl/{file}']!.get as Doc).servers).toEqual([{ url: 'https://files.example.com' }]);
    // Without rate limits, no X-RateLimit headers are promised.
    const off = openApiDocument({ issuer: 'http://127.0.0.1:8080', rateLimited: false, oauth: false, sso: false });
    expect(JSON.stringify(off)).not.toContain('X-RateLimit-Limit"}');
    expect(off.paths).not.toHaveProperty('/oauth/token');
  });
});
