/**
 * End to end: the whole local stack as separate processes (embedded PostgreSQL, identity, policy, audit,
 * export-worker, gateway) on free ports, driven only through HTTP and gRPC.
 */
import * as grpc from '@grpc/grpc-js';
import { identity, serviceNames } from '@secsvc/proto';
import { checkHealth, createClient, promiseClient, AppError } from '@secsvc/shared';
import { startGatewayProcess, startLocalStack, type LocalStack, type LocalStackOptions } from '@secsvc/dev/stack';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import pg from 'pg';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { createHmac, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { startTestIdp } from '../../gateway/test/support/saml-idp';
import { apiClient, certificateBody, emittedEvents, findGrpcurl, listServices, metadataCertificates, type Api } from './support';

jest.setTimeout(120_000);

const rootDir = path.resolve(__dirname, '../../..');
const KEY = 'svc_sk_' + 'e2eTestKey_'.repeat(4);
const output: string[] = [];

function options(dataDir: string, env: Record<string, string> = {}): LocalStackOptions {
  return {
    rootDir,
    dataDir,
    host: '127.0.0.1',
    port: 0,
    ports: { postgres: 0, identity: 0, policy: 0, audit: 0, admin: { gateway: 0, identity: 0, policy: 0, audit: 0, 'export-worker': 0 } },
    env: { LOG_LEVEL: 'warn', ...env },
    onOutput: (app, line) => {
      output.push(`${app}: ${line}`);
    },
  };
}

let tmp: string;
let dataDir: string;
let stack: LocalStack;
let api: Api;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'secsvc-e2e-'));
  await chmod(tmp, 0o711);
  dataDir = path.join(tmp, 'data');
  // debug level so that the secret scans below read everything the processes log
  stack = await startLocalStack(options(dataDir, { BOOTSTRAP_API_KEY: KEY, LOG_LEVEL: 'debug' }));
  api = apiClient(stack.baseUrl, KEY);
});

afterAll(async () => {
  await stack?.stop();
  await rm(tmp, { recursive: true, force: true });
});

describe('users over HTTP', () => {
  it('runs the whole lifecycle with the SPEC shapes', async () => {
    const created = await api('POST', '/users', { email: 'e2e.user@example.com', name: 'E2E User', roles: ['role_admin'] });
    expect(created.status).toBe(201);
    const user = created.body.data;
    expect(Object.keys(user).sort()).toEqual(['createdAt', 'email', 'emailVerified', 'id', 'name', 'roles']);
    expect(user).toMatchObject({ email: 'e2e.user@example.com', name: 'E2E User', emailVerified: false, roles: ['role_admin'] });
    expect(user.id).toMatch(/^user_/);
    expect(user.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const got = await api('GET', `/users/${user.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({ ...user, metadata: {}, updatedAt: user.createdAt });

    const metadata = { plan: { tier: 'gold', seats: 5 }, tags: ['a', null, 3.5], nothing: null };
    const patched = await api('PATCH', `/users/${user.id}`, { metadata, name: 'Renamed' });
    expect(patched.status).toBe(200);
    expect(Object.keys(patched.body.data).sort()).toEqual(['email', 'id', 'metadata', 'name', 'updatedAt']);
    expect(patched.body.data.metadata).toEqual(metadata);
    expect(patched.body.data.name).toBe('Renamed');

    const del = await api('DELETE', `/users/${user.id}`);
    expect(del.status).toBe(204);
    expect(del.body).toBeUndefined();
    const after = await api('GET', `/users/${user.id}`);
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe('not_found');
  });

  it('maps service errors to HTTP with their field details (409 conflict from identity)', async () => {
    expect((await api('POST', '/users', { email: 'Case@Example.com', name: 'One' })).status).toBe(201);
    const dup = await api('POST', '/users', { email: 'case@example.COM', name: 'Two' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toEqual({
      code: 'conflict',
      message: 'A user with this email already exists',
      details: [{ field: 'email', message: 'already in use' }],
    });
    expect(dup.body.meta.requestId).toMatch(/^req_/);
  });

  it('refuses bad input with 400 naming the field', async () => {
    const bad = await api('POST', '/users', { email: 'not-an-email', name: 'X' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('invalid_request');
    expect(bad.body.error.details).toEqual([{ field: 'email', message: 'invalid email format' }]);
    const tampered = await api('GET', '/users?limit=1&cursor=cur_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    expect(tampered.status).toBe(400);
    expect(tampered.body.error.details[0].field).toBe('cursor');
    expect((await api('GET', '/users?limit=101')).status).toBe(400);
    const json = await api('POST', '/users', '{"email":');
    expect(json.status).toBe(400);
  });

  it('pages through users without skips or repeats while users come and go', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await api('POST', '/users', { email: `pager${i}@example.com`, name: `Pager ${i}` });
      ids.push(res.body.data.id);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    let page = 0;
    do {
      const res = await api('GET', `/users?limit=5${cursor ? `&cursor=${cursor}` : ''}`);
      expect(res.status).toBe(200);
      expect(res.body.data.length).toBeLessThanOrEqual(5);
      for (const item of res.body.data) expect(Object.keys(item).sort()).toEqual(['createdAt', 'email', 'id', 'name', 'roles']);
      seen.push(...res.body.data.map((u: { id: string }) => u.id));
      expect(typeof res.body.pagination.hasMore).toBe('boolean');
      cursor = res.body.pagination.hasMore ? res.body.pagination.nextCursor : undefined;
      if (cursor) expect(cursor).toMatch(/^cur_/);
      else expect(res.body.pagination.nextCursor).toBeUndefined();
      if (page === 0) {
        await api('POST', '/users', { email: 'newcomer@example.com', name: 'Newcomer' });
        await api('DELETE', `/users/${ids[2]}`);
      }
      page++;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of ids.filter((_, i) => i !== 2)) expect(seen).toContain(id);
    expect(seen).not.toContain(ids[2]);
    const defaultPage = await api('GET', '/users');
    expect(defaultPage.body.data.length).toBeLessThanOrEqual(20);
  });
});

describe('authentication and operational endpoints', () => {
  it('requires an API key on /v1 and not on health endpoints', async () => {
    const none = await fetch(`${stack.baseUrl}/users`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    const wrong = await apiClient(stack.baseUrl, 'svc_sk_' + 'x'.repeat(40))('GET', '/users');
    expect(wrong.status).toBe(401);
    const origin = stack.baseUrl.replace(/\/v1$/, '');
    expect((await fetch(`${origin}/healthz`)).status).toBe(200);
    expect((await fetch(`${origin}/readyz`)).status).toBe(200);
  });

  it('reuses a well-formed X-Request-Id and answers unknown routes with 404', async () => {
    const requestId = 'req_e2e0000000000000000000000';
    const res = await api('GET', '/no-such-route', undefined, { 'x-request-id': requestId });
    expect(res.status).toBe(404);
    expect(res.headers.get('x-request-id')).toBe(requestId);
    expect(res.body).toEqual({ error: { code: 'not_found', message: expect.any(String) }, meta: { requestId } });
  });

  it('answers what the HTTP parser refuses in the error shape: a query string over 16 KiB is 431 (schemathesis met a bare 431)', async () => {
    const res = await api('GET', `/logs?events=${'%C2%BA'.repeat(4000)}`);
    expect(res.status).toBe(431);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const requestId = res.headers.get('x-request-id');
    expect(requestId).toMatch(/^req_[0-9a-z]{26}$/);
    expect(res.body).toEqual({ error: { code: 'request_header_fields_too_large', message: 'The request line and headers are larger than 16 KiB (a query string that long included)' }, meta: { requestId } });
    // The gateway goes on serving.
    expect((await api('GET', '/users?limit=1')).status).toBe(200);
  });

  it('serves the OpenAPI 3.1 document', async () => {
    const res = await fetch(`${stack.baseUrl}/openapi.json`);
    const doc = (await res.json()) as { openapi: string; servers: { url: string }[]; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    // The public origin (ISSUER) serves it all: /v1, the authorization server, SAML and the download host.
    expect(doc.servers[0]!.url).toBe(stack.baseUrl.replace(/\/v1$/, ''));
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/v1/users', '/v1/users/{id}', '/oauth/token', '/v1/sso/saml/{id}/acs', '/downloads/{file}']));
  });

  it('exposes Prometheus metrics on every process admin port', async () => {
    for (const [app, url] of Object.entries(stack.admin)) {
      const res = await fetch(`${url}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain(`service="${app}"`);
    }
    const gateway = await (await fetch(`${stack.admin.gateway}/metrics`)).text();
    expect(gateway).toMatch(/http_requests_total\{[^}]*route="\/v1\/users\/:id"/);
    const identityMetrics = await (await fetch(`${stack.admin.identity}/metrics`)).text();
    expect(identityMetrics).toMatch(/grpc_server_handled_total\{[^}]*grpc_service="secsvc.identity.v1.IdentityService",grpc_method="CreateUser"/);
  });
});

describe('SAML SP key pair made by the launcher', () => {
  it('serves SP metadata with the certificate it generated into DATA_DIR/saml-sp, without any key file configured', async () => {
    expect(stack.samlSp).toEqual({ keyFile: path.join(dataDir, 'saml-sp', 'sp.key'), certFile: path.join(dataDir, 'saml-sp', 'sp.crt'), created: true });
    const idp = await startTestIdp('stack-e2e');
    const created = await api('POST', '/sso/connections', { name: 'Stack e2e', idpMetadataXml: idp.metadata(), domains: ['stack-e2e.example.com'] });
    expect(created.status).toBe(201);
    const res = await fetch(created.body.data.sp.metadataUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/samlmetadata\+xml/);
    expect(new Set(metadataCertificates(await res.text()))).toEqual(new Set([certificateBody(await readFile(stack.samlSp!.certFile, 'utf8'))]));
    // The private key never reaches a log (the apps log at debug level here).
    const keyLines = (await readFile(stack.samlSp!.keyFile, 'utf8')).split('\n').filter((l) => l.length === 64);
    expect(keyLines.length).toBeGreaterThan(10);
    expect(keyLines.filter((l) => output.some((o) => o.includes(l)))).toEqual([]);
  });
});

describe('gRPC surfaces', () => {
  it('every service answers grpc.health.v1 and lists itself through reflection', async () => {
    for (const [name, address] of Object.entries(stack.grpc) as [keyof typeof serviceNames, string][]) {
      expect(await checkHealth(address)).toBe(true);
      expect(await checkHealth(address, serviceNames[name])).toBe(true);
      const services = await listServices(address);
      expect(services).toEqual(expect.arrayContaining([serviceNames[name], 'grpc.health.v1.Health']));
    }
  });

  it('calls identity directly with a deadline and gets typed errors back', async () => {
    const raw = createClient(identity.IdentityServiceClient, stack.grpc.identity);
    const client = promiseClient(raw, { deadlineMs: 3000 });
    try {
      const user = await client.createUser({ environment: 'live', email: 'grpc@example.com', name: 'Via gRPC', roles: [], metadataJson: '' });
      expect((await client.getUser({ environment: 'live', id: user.id })).email).toBe('grpc@example.com');
      const err = await client.getUser({ environment: 'live', id: 'user_missing' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('not_found');
      const invalid = await client.createUser({ environment: 'live', email: 'x', name: '', roles: ['bad'], metadataJson: '' }).catch((e: unknown) => e);
      expect((invalid as AppError).details.map((d) => d.field)).toEqual(['email', 'name', 'roles[0]']);
    } finally {
      raw.close();
    }
  });

  const grpcurl = findGrpcurl();
  // Without grpcurl (a developer machine that did not run scripts/install-tools.sh) this one test is skipped;
  // under CI=true findGrpcurl() fails instead.
  (grpcurl ? it : it.skip)('works with grpcurl through reflection alone: list, describe, call, errors', () => {
    const run = (...args: string[]) => {
      try {
        return { out: execFileSync(grpcurl!, ['-plaintext', ...args], { encoding: 'utf8', timeout: 10_000 }), code: 0 };
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string; status?: number };
        return { out: `${e.stdout ?? ''}${e.stderr ?? ''}`, code: e.status ?? -1 };
      }
    };
    const address = stack.grpc.identity;
    expect(run(address, 'list').out.split('\n')).toEqual(
      expect.arrayContaining(['secsvc.identity.v1.IdentityService', 'grpc.health.v1.Health', 'grpc.reflection.v1.ServerReflection']),
    );
    expect(run(address, 'describe', 'secsvc.identity.v1.User').out).toContain('.google.protobuf.Timestamp created_at = 8;');
    const created = run('-d', '{"environment":"live","email":"grpcurl@example.com","name":"grpcurl"}', address, 'secsvc.identity.v1.IdentityService/CreateUser');
    expect(created.code).toBe(0);
    expect(JSON.parse(created.out)).toMatchObject({ email: 'grpcurl@example.com', environment: 'live' });
    const missing = run('-d', '{"environment":"live","id":"user_missing"}', address, 'secsvc.identity.v1.IdentityService/GetUser');
    expect(missing.out).toContain('Code: NotFound');
    for (const addr of Object.values(stack.grpc)) expect(JSON.parse(run(addr, 'grpc.health.v1.Health/Check').out)).toEqual({ status: 'SERVING' });
    expect(run(stack.grpc.policy, 'describe', 'secsvc.policy.v1.PolicyService').out).toContain('rpc Simulate');
  });

  it('audit answers its RPCs over gRPC: a request naming no environment is INVALID_ARGUMENT', async () => {
    const raw = new grpc.Client(stack.grpc.audit, grpc.credentials.createInsecure());
    const code = await new Promise<number>((resolve) =>
      raw.makeUnaryRequest(
        '/secsvc.audit.v1.AuditService/GetLog',
        (b: Buffer) => b,
        (b: Buffer) => b,
        Buffer.alloc(0),
        new grpc.Metadata(),
        { deadline: new Date(Date.now() + 2000) },
        (err) => resolve(err?.code ?? 0),
      ),
    );
    raw.close();
    expect(code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe('API key revocation', () => {
  it('refuses a revoked key on the next requests although the gateway caches authentications', async () => {
    // A second key, made the way the Authentication issue will (hash only), then revoked in the database.
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const secret = JSON.parse(await readFile(path.join(dataDir, 'secrets.json'), 'utf8')).serverSecret as string;
      const key = 'svc_sk_' + randomBytes(32).toString('base64url');
      await db.query(
        `INSERT INTO identity.api_keys (id, environment, type, name, plan, key_hash, prefix, last4)
         VALUES ('key_e2erevocation0000000000', 'live', 'secret', 'e2e', 'free', $1, 'svc_sk_', $2)`,
        [createHmac('sha256', secret).update(key).digest(), key.slice(-4)],
      );
      const second = apiClient(stack.baseUrl, key);
      expect((await second('GET', '/users?limit=1')).status).toBe(200);
      expect((await second('GET', '/users?limit=1')).status).toBe(200); // served from the cache now
      await db.query(`UPDATE identity.api_keys SET revoked_at = now() WHERE id = 'key_e2erevocation0000000000'`);
      let status = 200;
      for (let i = 0; i < 50 && status === 200; i++) {
        status = (await second('GET', '/users?limit=1')).status;
        if (status === 200) await new Promise((r) => setTimeout(r, 20));
      }
      expect(status).toBe(401);
      expect((await api('GET', '/users?limit=1')).status).toBe(200); // other keys unaffected
    } finally {
      await db.end();
    }
  });
});

describe('API keys over HTTP', () => {
  const create = async (body: Record<string, unknown>) => {
    const res = await api('POST', '/api-keys', body);
    expect(res.status).toBe(201);
    return res.body.data as { id: string; key: string; maskedKey: string; type: string; environment: string };
  };

  it('creates keys shown once, masked afterwards', async () => {
    const created = await create({ name: 'ci', type: 'secret', plan: 'pro' });
    expect(created.key).toMatch(/^svc_sk_[A-Za-z0-9_-]{49}$/);
    expect(created.maskedKey).toBe(`svc_sk_…${created.key.slice(-4)}`);
    const got = await api('GET', `/api-keys/${created.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.key).toBeUndefined();
    expect(got.body.data).toMatchObject({ id: created.id, plan: 'pro', type: 'secret', environment: 'live', revokedAt: null });
    const list = await api('GET', '/api-keys?limit=100');
    expect(JSON.stringify(list.body)).not.toContain(created.key);
    expect(list.body.data.map((k: { id: string }) => k.id)).toContain(created.id);
  });

  it('confines public keys to browser endpoints: 403 elsewhere', async () => {
    const pub = await create({ name: 'browser', type: 'public' });
    const asPublic = apiClient(stack.baseUrl, pub.key);
    for (const [method, path] of [
      ['GET', '/users'],
      ['POST', '/users'],
      ['GET', '/api-keys'],
    ] as const) {
      const res = await asPublic(method, path, method === 'POST' ? { email: 'x@example.com', name: 'X' } : undefined);
      expect(res.status).toBe(403);
      expect(res.body.error.code).toBe('forbidden');
    }
  });

  it('keeps test and live data apart', async () => {
    const test = await create({ name: 'sandbox', type: 'test' });
    expect(test.key).toMatch(/^svc_test_/);
    const asTest = apiClient(stack.baseUrl, test.key);
    const liveUser = (await api('POST', '/users', { email: 'iso@example.com', name: 'Live' })).body.data;
    const testUser = (await asTest('POST', '/users', { email: 'iso@example.com', name: 'Test' })).body.data;
    expect(testUser.id).not.toBe(liveUser.id);
    expect((await asTest('GET', `/users/${liveUser.id}`)).status).toBe(404);
    expect((await api('GET', `/users/${testUser.id}`)).status).toBe(404);
    const testList = await asTest('GET', '/users?limit=100');
    expect(testList.body.data.map((u: { id: string }) => u.id)).toEqual([testUser.id]);
    expect((await asTest('POST', '/api-keys', { name: 'escalate', type: 'secret' })).status).toBe(403);
    const keys = await asTest('GET', '/api-keys?limit=100');
    expect(keys.body.data.every((k: { environment: string }) => k.environment === 'test')).toBe(true);
  });

  it('revokes at once through the API, although authentications are cached', async () => {
    const k = await create({ name: 'to-revoke', type: 'secret' });
    const asKey = apiClient(stack.baseUrl, k.key);
    expect((await asKey('GET', '/users?limit=1')).status).toBe(200);
    expect((await asKey('GET', '/users?limit=1')).status).toBe(200);
    expect((await api('DELETE', `/api-keys/${k.id}`)).status).toBe(204);
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await asKey('GET', '/users?limit=1')).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(401);
    expect((await api('GET', `/api-keys/${k.id}`)).body.data.revokedAt).not.toBeNull();
  });

  it('rotates with a grace period, and without one', async () => {
    const k = await create({ name: 'to-rotate', type: 'secret' });
    const rotated = await api('POST', `/api-keys/${k.id}/rotate`, { gracePeriod: '1h' });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.data.key as string;
    expect(fresh).not.toBe(k.key);
    expect(Date.parse(rotated.body.data.previousKeyExpiresAt) - Date.now()).toBeGreaterThan(3500_000);
    expect((await apiClient(stack.baseUrl, k.key)('GET', '/users?limit=1')).status).toBe(200);
    expect((await apiClient(stack.baseUrl, fresh)('GET', '/users?limit=1')).status).toBe(200);
    const again = await api('POST', `/api-keys/${k.id}/rotate`, { gracePeriod: '0s' });
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await apiClient(stack.baseUrl, fresh)('GET', '/users?limit=1')).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(401);
    expect((await apiClient(stack.baseUrl, again.body.data.key)('GET', '/users?limit=1')).status).toBe(200);
    const bad = await api('POST', `/api-keys/${k.id}/rotate`, { gracePeriod: '8d' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('gracePeriod');
  });

  it('never logs a key', async () => {
    const k = await create({ name: 'log-scan', type: 'secret' });
    await apiClient(stack.baseUrl, k.key)('GET', '/users?limit=1');
    await apiClient(stack.baseUrl, k.key.slice(0, -1) + 'x')('GET', '/users?limit=1');
    const logs = output.join('\n');
    expect(logs).not.toContain(k.key.slice(7, 40));
    expect(logs).not.toContain(KEY.slice(7));
  });
});

describe('sessions over HTTP', () => {
  it('creates, verifies (also with a public key), lists and revokes sessions', async () => {
    const u = (await api('POST', '/users', { email: 'session.user@example.com', name: 'Session User' })).body.data;
    const created = await api('POST', '/sessions', { userId: u.id, expiresIn: '24h', metadata: { device: 'phone', ip: '198.51.100.4' } });
    expect(created.status).toBe(201);
    const s = created.body.data;
    expect(Object.keys(s).sort()).toEqual(['acr', 'amr', 'createdAt', 'expiresAt', 'id', 'metadata', 'mfaAt', 'token', 'userId']);
    expect(s.id).toMatch(/^ses_/);
    // Opened by the application: how the user authenticated is not known.
    expect([s.amr, s.acr, s.mfaAt]).toEqual([[], '', null]);
    expect(Date.parse(s.expiresAt) - Date.parse(s.createdAt)).toBe(86_400_000);

    const pub = (await api('POST', '/api-keys', { name: 'browser', type: 'public' })).body.data.key as string;
    const verified = await apiClient(stack.baseUrl, pub)('POST', '/sessions/verify', { token: s.token });
    expect(verified.status).toBe(200);
    expect(verified.body.data).toEqual({
      valid: true,
      user: expect.objectContaining({ id: u.id, email: 'session.user@example.com', metadata: {} }),
      session: { id: s.id, expiresAt: s.expiresAt, amr: [], acr: '', mfaAt: null },
    });
    expect((await api('POST', '/sessions/verify', { token: 'nonsense' })).body).toEqual({ data: { valid: false } });
    expect((await api('POST', '/sessions/verify', {})).status).toBe(400);

    const listed = await api('GET', `/users/${u.id}/sessions`);
    expect(listed.body.data.map((x: { id: string }) => x.id)).toEqual([s.id]);
    expect(listed.body.data[0].token).toBeUndefined();

    expect((await apiClient(stack.baseUrl, pub)('POST', '/sessions/revoke', { token: s.token })).status).toBe(403);
    expect((await api('POST', '/sessions/revoke', { token: s.token })).status).toBe(204);
    expect((await api('POST', '/sessions/verify', { token: s.token })).body.data.valid).toBe(false);

    // One session by its id (no token needed), as a bearer credential too: refused at once, the other one kept.
    const one = (await api('POST', '/sessions', { userId: u.id })).body.data;
    const kept = (await api('POST', '/sessions', { userId: u.id })).body.data;
    expect((await api('POST', '/policies', { name: 'session self read', effect: 'allow', principals: [`user:${u.id}`], actions: ['read'], resources: [`/users/${u.id}`] })).status).toBe(201);
    expect((await apiClient(stack.baseUrl, one.token)('GET', `/users/${u.id}`)).status).toBe(200);
    const other = (await api('POST', '/users', { email: 'session.other@example.com', name: 'Other' })).body.data;
    expect((await api('DELETE', `/users/${other.id}/sessions/${one.id}`)).status).toBe(404);
    expect((await api('DELETE', `/users/${u.id}/sessions/ses_nope`)).status).toBe(404);
    expect((await api('DELETE', `/users/${u.id}/sessions/${one.id}`)).status).toBe(204);
    expect((await apiClient(stack.baseUrl, one.token)('GET', `/users/${u.id}`)).status).toBe(401);
    expect((await api('DELETE', `/users/${u.id}/sessions/${one.id}`)).status).toBe(404);
    expect((await api('GET', `/users/${u.id}/sessions`)).body.data.map((x: { id: string }) => x.id)).toEqual([kept.id]);

    const again = (await api('POST', '/sessions', { userId: u.id })).body.data;
    expect((await api('DELETE', `/users/${u.id}/sessions`)).status).toBe(204);
    expect((await api('POST', '/sessions/verify', { token: again.token })).body.data.valid).toBe(false);
    expect((await api('POST', '/sessions/verify', { token: kept.token })).body.data.valid).toBe(false);
  });

  it('accepts session tokens as bearer credentials, authorized by the policies, ended at once on revoke', async () => {
    // users act under the policies: let everyone read and update their own account
    await api('POST', '/policies', { name: 'self service', effect: 'allow', principals: ['user:${self}'], actions: ['read', 'update'], resources: ['/users/${self}'] });
    const me = (await api('POST', '/users', { email: 'bearer.me@example.com', name: 'Me' })).body.data;
    const other = (await api('POST', '/users', { email: 'bearer.other@example.com', name: 'Other' })).body.data;
    const { token } = (await api('POST', '/sessions', { userId: me.id })).body.data;
    const asMe = apiClient(stack.baseUrl, token);
    expect((await asMe('GET', `/users/${me.id}`)).status).toBe(200);
    expect((await asMe('GET', `/users/${me.id}`)).status).toBe(200); // cached now
    const patched = await asMe('PATCH', `/users/${me.id}`, { name: 'Me Myself' });
    expect(patched.status).toBe(200);
    expect(patched.body.data.name).toBe('Me Myself');
    for (const [method, path] of [
      ['GET', `/users/${other.id}`],
      ['DELETE', `/users/${me.id}`],
      ['GET', '/users'],
      ['GET', '/api-keys'],
    ] as const) {
      expect((await asMe(method, path)).status).toBe(403);
    }
    await api('POST', '/sessions/revoke', { token });
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await asMe('GET', `/users/${me.id}`)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(401);
  });

  it('serves verifications from a cache that drops a session or user the moment they change', async () => {
    const u = (await api('POST', '/users', { email: 'verify.cache@example.com', name: 'Before' })).body.data;
    const s = (await api('POST', '/sessions', { userId: u.id })).body.data;
    for (let i = 0; i < 3; i++) expect((await api('POST', '/sessions/verify', { token: s.token })).body.data.user.name).toBe('Before');
    await api('PATCH', `/users/${u.id}`, { name: 'After' });
    expect((await api('POST', '/sessions/verify', { token: s.token })).body.data.user.name).toBe('After');
    // a change made behind the gateway's back (another replica, or SQL) arrives through the change stream
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      await db.query(`UPDATE identity.users SET name = 'Elsewhere' WHERE id = $1`, [u.id]);
      let name = 'After';
      for (let i = 0; i < 50 && name !== 'Elsewhere'; i++) {
        name = (await api('POST', '/sessions/verify', { token: s.token })).body.data.user.name;
        if (name !== 'Elsewhere') await new Promise((r) => setTimeout(r, 20));
      }
      expect(name).toBe('Elsewhere');
      await db.query(`UPDATE identity.sessions SET revoked_at = now() WHERE id = $1`, [s.id]);
      let valid = true;
      for (let i = 0; i < 50 && valid; i++) {
        valid = (await api('POST', '/sessions/verify', { token: s.token })).body.data.valid;
        if (valid) await new Promise((r) => setTimeout(r, 20));
      }
      expect(valid).toBe(false);
    } finally {
      await db.end();
    }
  });

  it('refuses bad expiresIn values naming the field, and unknown users', async () => {
    const u = (await api('POST', '/users', { email: 'session.bad@example.com', name: 'Bad' })).body.data;
    for (const expiresIn of ['30s', '31d', '1w', 'soon', 5]) {
      const res = await api('POST', '/sessions', { userId: u.id, expiresIn });
      expect(res.status).toBe(400);
      expect(res.body.error.details[0].field).toBe('expiresIn');
    }
    const missing = await api('POST', '/sessions', { userId: 'user_00000000000000000000000000' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.details[0].field).toBe('userId');
  });

  it('writes who did what, and how they authenticated, into the outbox', async () => {
    const u = (await api('POST', '/users', { email: 'audit.trail@example.com', name: 'Audit' }, { 'user-agent': 'e2e-agent/1.0' })).body.data;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(`SELECT payload FROM ${emittedEvents('identity')} WHERE event_type = 'user.created' AND payload->'target'->>'id' = $1`, [u.id]);
      expect(rows).toHaveLength(1);
      const event = rows[0].payload;
      expect(event.actor).toEqual({ id: expect.stringMatching(/^key_/), type: 'api_key', name: 'bootstrap admin key' });
      expect(event.context).toEqual({ ip: expect.stringMatching(/127\.0\.0\.1/), userAgent: 'e2e-agent/1.0' });
      expect(JSON.parse(event.metadataJson)).toEqual({ authMethod: 'api_key', mfaUsed: false });
      expect(event.traceId).toMatch(/^[0-9a-f]{32}$/);
    } finally {
      await db.end();
    }
  });

  it('ends the sessions of a deleted user', async () => {
    const u = (await api('POST', '/users', { email: 'session.gone@example.com', name: 'Gone' })).body.data;
    const s = (await api('POST', '/sessions', { userId: u.id })).body.data;
    await api('DELETE', `/users/${u.id}`);
    expect((await api('POST', '/sessions/verify', { token: s.token })).body.data.valid).toBe(false);
    expect(output.join('\n')).not.toContain(s.token);
  });
});

describe('passwords and login over HTTP', () => {
  const anonymous = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${stack.baseUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };

  it('logs in without a key or with a public key, and answers alike for unknown emails', async () => {
    const u = (await api('POST', '/users', { email: 'login.user@example.com', name: 'Login' })).body.data;
    expect((await api('PUT', `/users/${u.id}/password`, { password: 'short' })).status).toBe(400);
    expect((await api('PUT', `/users/${u.id}/password`, { password: 'a sturdy passphrase' })).status).toBe(204);
    const ok = await anonymous('POST', '/auth/login', { email: 'login.user@example.com', password: 'a sturdy passphrase' });
    expect(ok.status).toBe(201);
    expect(ok.body.data.userId).toBe(u.id);
    expect((await api('POST', '/sessions/verify', { token: ok.body.data.token })).body.data.valid).toBe(true);
    const pub = (await api('POST', '/api-keys', { name: 'login page', type: 'public' })).body.data.key as string;
    expect((await apiClient(stack.baseUrl, pub)('POST', '/auth/login', { email: 'login.user@example.com', password: 'a sturdy passphrase' })).status).toBe(201);
    const wrong = await anonymous('POST', '/auth/login', { email: 'login.user@example.com', password: 'not the passphrase' });
    const unknown = await anonymous('POST', '/auth/login', { email: 'nobody.here@example.com', password: 'not the passphrase' });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(unknown.body.error.message).toBe(wrong.body.error.message);
    expect((await anonymous('GET', '/users')).status).toBe(401);
    expect(output.join('\n')).not.toContain('a sturdy passphrase');
  });

  it('answers 429 with Retry-After after 5 failures for one account', async () => {
    const u = (await api('POST', '/users', { email: 'lockout@example.com', name: 'Lock' })).body.data;
    await api('PUT', `/users/${u.id}/password`, { password: 'a sturdy passphrase' });
    for (let i = 0; i < 5; i++) expect((await anonymous('POST', '/auth/login', { email: 'lockout@example.com', password: 'guess number ' + i })).status).toBe(401);
    const limited = await anonymous('POST', '/auth/login', { email: 'lockout@example.com', password: 'a sturdy passphrase' });
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('rate_limited');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('resets a password with the mailed token (local mail port: files under DATA_DIR/mail)', async () => {
    const u = (await api('POST', '/users', { email: 'reset.me@example.com', name: 'Reset' })).body.data;
    await api('PUT', `/users/${u.id}/password`, { password: 'a sturdy passphrase' });
    const session = (await api('POST', '/sessions', { userId: u.id })).body.data;
    expect((await anonymous('POST', '/auth/password-reset', { email: 'reset.me@example.com' })).status).toBe(202);
    expect((await anonymous('POST', '/auth/password-reset', { email: 'nobody.at.all@example.com' })).status).toBe(202);
    const mailDir = path.join(dataDir, 'mail');
    let token: string | undefined;
    for (let i = 0; i < 100 && !token; i++) {
      const files = existsSync(mailDir) ? await readdir(mailDir) : [];
      for (const f of files.filter((name) => name.endsWith('.json'))) {
        const m = JSON.parse(await readFile(path.join(mailDir, f), 'utf8')) as { to: string; data: { token: string } };
        if (m.to === 'reset.me@example.com') token = m.data.token;
      }
      if (!token) await new Promise((r) => setTimeout(r, 25));
    }
    expect(token).toMatch(/^prt_/);
    expect((await anonymous('POST', '/auth/password-reset/confirm', { token, password: 'a fresh new passphrase' })).status).toBe(204);
    expect((await api('POST', '/sessions/verify', { token: session.token })).body.data.valid).toBe(false);
    expect((await anonymous('POST', '/auth/login', { email: 'reset.me@example.com', password: 'a fresh new passphrase' })).status).toBe(201);
    const reused = await anonymous('POST', '/auth/password-reset/confirm', { token, password: 'yet another passphrase' });
    expect(reused.status).toBe(400);
    expect(reused.body.error.details[0].field).toBe('token');
    expect(output.filter((l) => !l.includes('[mail]')).join('\n')).not.toContain(token!.slice(4, 30));
  });
});

describe('JWT access tokens', () => {
  it('issues ES256 tokens verifiable with the published keys and accepts them as bearer credentials', async () => {
    // users act under the policies: let everyone read and update their own account
    await api('POST', '/policies', { name: 'self service', effect: 'allow', principals: ['user:${self}'], actions: ['read', 'update'], resources: ['/users/${self}'] });
    const me = (await api('POST', '/users', { email: 'jwt.user@example.com', name: 'JWT' })).body.data;
    const other = (await api('POST', '/users', { email: 'jwt.other@example.com', name: 'Other' })).body.data;
    const session = (await api('POST', '/sessions', { userId: me.id })).body.data;
    const issued = await fetch(`${stack.baseUrl}/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionToken: session.token }),
    });
    expect(issued.status).toBe(200);
    const { data } = (await issued.json()) as { data: { accessToken: string; tokenType: string; expiresIn: number } };
    expect(data.tokenType).toBe('Bearer');
    expect(data.expiresIn).toBe(900);

    const origin = stack.baseUrl.replace(/\/v1$/, '');
    const jwks = (await (await fetch(`${origin}/.well-known/jwks.json`)).json()) as { keys: { kid: string; d?: string }[] };
    expect(jwks.keys.length).toBeGreaterThan(0);
    expect(jwks.keys.every((k) => k.d === undefined)).toBe(true);
    const { payload, protectedHeader } = await jwtVerify(data.accessToken, createLocalJWKSet(jwks as never), { issuer: origin, audience: 'secsvc' });
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(jwks.keys.map((k) => k.kid)).toContain(protectedHeader.kid);
    expect(payload).toMatchObject({ sub: me.id, sid: session.id, env: 'live', roles: [] });
    expect(payload.exp! - payload.iat!).toBe(900);
    expect(typeof payload.jti).toBe('string');

    const asJwt = apiClient(stack.baseUrl, data.accessToken);
    expect((await asJwt('GET', `/users/${me.id}`)).status).toBe(200);
    expect((await asJwt('GET', `/users/${other.id}`)).status).toBe(403);
    const [h, p, sig] = data.accessToken.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: other.id })).toString('base64url')}.${sig}`;
    expect((await apiClient(stack.baseUrl, forged)('GET', `/users/${other.id}`)).status).toBe(401);
    expect((await apiClient(stack.baseUrl, `${h}.${p}.AAAA`)('GET', `/users/${me.id}`)).status).toBe(401);

    await api('POST', '/sessions/revoke', { token: session.token });
    let status = 200;
    for (let i = 0; i < 50 && status === 200; i++) {
      status = (await asJwt('GET', `/users/${me.id}`)).status;
      if (status === 200) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(401);
    const refused = await fetch(`${stack.baseUrl}/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sessionToken: session.token }),
    });
    expect(refused.status).toBe(401);

    // the refused JWTs were reported to identity as auth.failed, with a reason and never the token
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      let reasons: string[] = [];
      for (let i = 0; i < 50 && reasons.length < 2; i++) {
        const { rows } = await db.query(`SELECT payload FROM ${emittedEvents('identity')} WHERE event_type = 'auth.failed'`);
        reasons = rows.map((r) => JSON.parse(r.payload.metadataJson)).filter((m) => m.credential === 'jwt').map((m) => m.reason);
        if (reasons.length < 2) await new Promise((r) => setTimeout(r, 20));
      }
      expect(reasons).toEqual(expect.arrayContaining(['err_jws_signature_verification_failed', 'revoked_session']));
      const all = await db.query(`SELECT payload::text AS p FROM ${emittedEvents('identity')}`);
      expect(all.rows.map((r) => r.p).join('')).not.toContain(sig!.slice(0, 40));
    } finally {
      await db.end();
    }
  });
});

describe('two gateway processes', () => {
  it('both refuse a revoked key at once although both cached it', async () => {
    const second = await startGatewayProcess({ rootDir, stack });
    try {
      const secondUrl = second.baseUrl;
      const k = (await api('POST', '/api-keys', { name: 'two-gateways', type: 'secret' })).body.data;
      const viaFirst = apiClient(stack.baseUrl, k.key);
      const viaSecond = apiClient(secondUrl, k.key);
      for (const client of [viaFirst, viaSecond, viaFirst, viaSecond]) expect((await client('GET', '/users?limit=1')).status).toBe(200);
      expect((await api('DELETE', `/api-keys/${k.id}`)).status).toBe(204);
      for (const client of [viaFirst, viaSecond]) {
        let status = 200;
        for (let i = 0; i < 50 && status === 200; i++) {
          status = (await client('GET', '/users?limit=1')).status;
          if (status === 200) await new Promise((r) => setTimeout(r, 20));
        }
        expect(status).toBe(401);
      }
    } finally {
      await second.stop();
    }
  });
});

describe('lifecycle', () => {
  it('stops every process cleanly with SIGTERM and keeps the data across a restart', async () => {
    const created = await api('POST', '/users', { email: 'persist@example.com', name: 'Persist' });
    const codes = await stack.stop();
    expect(codes).toEqual({ gateway: 0, 'export-worker': 0, audit: 0, policy: 0, identity: 0 });
    const samlSp = stack.samlSp!;
    const certificate = await readFile(samlSp.certFile, 'utf8');
    stack = await startLocalStack(options(dataDir));
    expect(stack.bootstrapKey).toBeUndefined();
    // The SAML SP key pair too: IdPs pinned its certificate.
    expect(stack.samlSp).toEqual({ ...samlSp, created: false });
    expect(await readFile(samlSp.certFile, 'utf8')).toBe(certificate);
    api = apiClient(stack.baseUrl, KEY);
    const got = await api('GET', `/users/${created.body.data.id}`);
    expect(got.status).toBe(200);
    expect(got.body.data.email).toBe('persist@example.com');
  });

  it('generates and reports a bootstrap key on a fresh data directory when none is configured', async () => {
    const fresh = await startLocalStack(options(path.join(tmp, 'fresh')));
    try {
      expect(fresh.bootstrapKey).toMatch(/^svc_sk_[A-Za-z0-9_-]{40,}$/);
      const res = await apiClient(fresh.baseUrl, fresh.bootstrapKey!)('GET', '/users');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], pagination: { hasMore: false } });
      expect(output.join('\n')).not.toContain(fresh.bootstrapKey!);
    } finally {
      await fresh.stop();
    }
  });
});
