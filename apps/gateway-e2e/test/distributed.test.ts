/**
 * The distributed profile on one machine (`startDistributedStack`): Kafka, Redis, S3 (versitygw), PostgreSQL,
 * two replicas of gateway, identity, policy and export-worker behind a load balancer, one audit service.
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { events, policy } from '@secsvc/proto';
import { AUTH_EVENTS_TOPIC, createClient, createKafkaBus, createLogger, newId, promiseClient } from '@secsvc/shared';
import { startDistributedStack, type DistributedStack } from '@secsvc/dev/stack';
import { kafkaUnavailable, redisSkipReason, s3SkipReason } from '@secsvc/dev/testing';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { startTestIdp } from '../../gateway/test/support/saml-idp';
import { apiClient, certificateBody, eventually, metadataCertificates, type Api } from './support';

jest.setTimeout(240_000);

// Without Kafka, redis-server or versitygw: under CI=true the suite runs and fails with the reason (CI must not
// pass on a missing dependency); elsewhere it is skipped and says why on stderr.
const missing = [kafkaUnavailable(), redisSkipReason(), s3SkipReason()].filter(Boolean).join('; ');
const skip = missing !== '' && process.env.CI !== 'true';
if (skip) process.stderr.write(`SKIPPED "distributed profile": ${missing}\n`);
const describeDistributed = skip ? describe.skip : describe; // skip reason: a dependency is not installed (see above)


describeDistributed('distributed profile: two replicas of every stateless service', () => {
  let tmp: string;
  let stack: DistributedStack;
  let api: Api;
  let gw: Api[];

  beforeAll(async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'secsvc-e2e-dist-'));
    await chmod(tmp, 0o711);
    stack = await startDistributedStack({
      rootDir: path.resolve(__dirname, '../../..'),
      dataDir: path.join(tmp, 'data'),
      host: '127.0.0.1',
      port: 0,
      // A killed worker's export is taken over after 3 s; small pages make an export last long enough to kill it.
      env: { LOG_LEVEL: 'warn', EXPORT_LEASE_SECONDS: '3', EXPORT_PAGE_SIZE: '200', EXPORT_RETRY_DELAY_SECONDS: '0', EXPORT_POLL_MS: '200' },
    });
    api = apiClient(stack.baseUrl, stack.bootstrapKey!);
    gw = stack.gateways.map((g) => apiClient(g, stack.bootstrapKey!));
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  }, 120_000);

  it('serves through the load balancer and each gateway', async () => {
    expect(stack.instances.sort()).toEqual(['audit-1', 'export-worker-1', 'export-worker-2', 'gateway-1', 'gateway-2', 'identity-1', 'identity-2', 'policy-1', 'policy-2']);
    for (const client of [api, ...gw]) expect((await client('GET', '/users?limit=1')).status).toBe(200);
  });

  it('gives every gateway the one SAML SP key pair of its data directory: each serves the same certificate in SP metadata', async () => {
    expect(stack.samlSp?.keyFile).toBe(path.join(tmp, 'data', 'saml-sp', 'sp.key'));
    const idp = await startTestIdp('dist-e2e');
    const created = await api('POST', '/sso/connections', { name: 'Distributed e2e', idpMetadataXml: idp.metadata(), domains: ['dist-e2e.example.com'] });
    expect(created.status).toBe(201);
    const certificate = certificateBody(await readFile(stack.samlSp!.certFile, 'utf8'));
    for (const g of stack.gateways) {
      const res = await fetch(`${g}/sso/saml/${created.body.data.id}/metadata`);
      expect(res.status).toBe(200);
      expect([g, new Set(metadataCertificates(await res.text()))]).toEqual([g, new Set([certificate])]);
    }
  });

  it('a SAML login started on one gateway finishes on the other, and a single logout through either ends it', async () => {
    const idp = await startTestIdp('dist-login');
    const c = (await api('POST', '/sso/connections', { name: 'Replicas', idpMetadataXml: idp.metadata(), domains: ['dist-login.example.com'] })).body.data;
    const [first, second] = stack.gateways;
    // /login on the first gateway: the request id goes to identity (Postgres), the nonce to the browser.
    const started = await fetch(`${first}/sso/saml/${c.id}/login`, { redirect: 'manual' });
    const cookie = started.headers.get('set-cookie')!.split(';')[0]!;
    const samlRequest = new URL(started.headers.get('location')!).searchParams.get('SAMLRequest')!;
    const requestId = /ID="([^"]+)"/.exec(inflateRawSync(Buffer.from(samlRequest, 'base64')).toString('utf8'))![1]!;
    // The IdP posts to the second gateway; the sealed state it answers with opens on the first (one SP key).
    const acs = await fetch(`${second}/sso/saml/${c.id}/acs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ SAMLResponse: idp.response({ acsUrl: c.sp.acsUrl, audience: c.sp.entityId, email: 'rep@dist-login.example.com', inResponseTo: requestId }) }),
      redirect: 'manual',
    });
    expect(acs.status).toBe(303);
    const state = new URL(acs.headers.get('location')!).search;
    const done = await fetch(`${first}/sso/saml/${c.id}/continue${state}`, { headers: { cookie } });
    expect(done.status).toBe(200);
    const token = ((await done.json()) as { data: { token: string } }).data.token;
    for (const g of gw) expect((await g('POST', '/sessions/verify', { token })).body.data.valid).toBe(true);
    // The IdP logs the user out through the second gateway: both refuse the session at once.
    const logout = await fetch(`${second}/sso/saml/${c.id}/slo?${idp.logoutRequest({ binding: 'redirect', destination: c.sp.sloUrl, nameId: 'rep@dist-login.example.com' })}`, { redirect: 'manual' });
    expect(logout.status).toBe(302);
    for (const g of gw) await eventually(async () => (await g('POST', '/sessions/verify', { token })).body.data.valid, (valid) => valid === false);
  });

  it('shares one rate limit across both gateways (Redis)', async () => {
    const key = (await api('POST', '/api-keys', { name: 'shared limit', type: 'secret', plan: 'enterprise', rateLimit: 10 })).body.data.key;
    const [a, b] = stack.gateways.map((g) => apiClient(g, key));
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await (i % 2 ? b! : a!)('GET', '/users?limit=1')).status);
    expect(statuses).toEqual(Array(10).fill(200));
    const refused = await b!('GET', '/users?limit=1');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await a!('GET', '/users?limit=1')).status).toBe(429);
  });

  it('a revoked key and a revoked session are refused by both gateways at once', async () => {
    const created = (await api('POST', '/api-keys', { name: 'to revoke', type: 'secret', plan: 'enterprise', rateLimit: 100000 })).body.data;
    const clients = stack.gateways.map((g) => apiClient(g, created.key));
    // Both gateways have authenticated (and cached) the key.
    for (const c of clients) expect((await c('GET', '/users?limit=1')).status).toBe(200);
    expect((await gw[0]!('DELETE', `/api-keys/${created.id}`)).status).toBe(204);
    for (const c of clients) expect((await c('GET', '/users?limit=1')).status).toBe(401);

    const user = (await api('POST', '/users', { email: 'replicas@example.com', name: 'R' })).body.data;
    const session = (await api('POST', '/sessions', { userId: user.id, expiresIn: '1h' })).body.data;
    const verify = (c: Api) => c('POST', '/sessions/verify', { token: session.token }).then((r) => r.body.data.valid);
    for (const c of gw) expect(await verify(c)).toBe(true);
    expect((await gw[1]!('POST', '/sessions/revoke', { token: session.token })).status).toBe(204);
    for (const c of gw) expect(await verify(c)).toBe(false);
  });

  it('a policy change reaches both policy replicas within a second', async () => {
    const replicas = stack.grpc.policy.map((addr) => promiseClient(createClient(policy.PolicyServiceClient, addr), { deadlineMs: 2000 }));
    const ask = (c: (typeof replicas)[number]) =>
      c.authorize({ environment: 'live', userId: 'user_01aaaaaaaaaaaaaaaaaaaaaaaa', roles: [], action: 'read', resource: '/reports/q4', ip: '', mfa: false, mfaAgeSeconds: 0 }).then((d) => d.allowed);
    for (const c of replicas) expect(await ask(c)).toBe(false);
    const started = Date.now();
    const created = await api('POST', '/policies', { name: 'everyone reads reports', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['/reports/*'] });
    expect(created.status).toBe(201);
    const seenAt: number[] = [];
    for (const c of replicas) {
      while (!(await ask(c))) {
        if (Date.now() - started > 5000) throw new Error('a policy replica did not converge within 5 s');
        await new Promise((r) => setTimeout(r, 10));
      }
      seenAt.push(Date.now() - started);
    }
    expect(Math.max(...seenAt)).toBeLessThan(1000);
  });

  it('two identity replicas relay their outboxes over Kafka: every event in the log exactly once', async () => {
    const ids: string[] = [];
    await Promise.all(
      [0, 1].map(async (g) => {
        for (let i = 0; i < 60; i++) {
          const res = await gw[g]!('POST', '/users', { email: `relay${g}-${i}@example.com`, name: 'Relay' });
          expect(res.status).toBe(201);
          ids.push(res.body.data.id);
        }
      }),
    );
    const deadline = Date.now() + 60_000;
    let entries: Array<{ id: string; target?: { id: string } }> = [];
    for (;;) {
      entries = [];
      let cursor = '';
      for (;;) {
        const page = await api('GET', `/logs?events=user.created&limit=100${cursor ? `&cursor=${cursor}` : ''}`);
        entries.push(...page.body.data);
        if (!page.body.pagination.hasMore) break;
        cursor = page.body.pagination.nextCursor;
      }
      if (ids.every((id) => entries.some((e) => e.target?.id === id)) || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const id of ids) expect(entries.filter((e) => e.target?.id === id)).toHaveLength(1);
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
  });

  it('an export is claimed by one worker and, when that worker is killed, finished once by the other (S3)', async () => {
    // 20,000 events straight onto Kafka, as the relays publish them (a kind of the catalogue, an hour back: no real
    // event of the run falls in that window).
    const bus = await createKafkaBus({ brokers: stack.kafkaBrokers, logger: createLogger('e2e', 'silent'), clientId: 'e2e' });
    const base = Date.now() - 3_600_000;
    const N = 20_000;
    try {
      const records = Array.from({ length: N }, (_, i) => {
        const e: events.AuthEvent = {
          id: newId('log', base + i),
          environment: 'live',
          type: 'user.updated',
          timestamp: new Date(base + i).toISOString(),
          actor: { id: `user_${i % 50}`, type: 'user' },
          context: { ip: '127.0.0.1', userAgent: 'e2e' },
          result: 'success',
          traceId: `req_${i}`,
          metadataJson: '{}',
        };
        return { id: e.id, key: e.actor!.id!, value: JSON.stringify(events.AuthEvent.toJSON(e)) };
      });
      await bus.publish(AUTH_EVENTS_TOPIC, records);
    } finally {
      await bus.close();
    }
    const window = { from: new Date(base - 1000).toISOString(), to: new Date(base + N + 1000).toISOString() };
    await eventually(async () => (await api('POST', '/logs/search', { ...window, query: 'event:user.updated', limit: 1 })).body.meta?.totalHits, (n) => n === N, 60_000);

    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const exp = (await api('POST', '/logs/export', { ...window, format: 'csv', events: ['user.updated'] })).body.data;
      const holder = await eventually(
        async () => (await db.query(`SELECT worker_id FROM audit.export_jobs WHERE id = $1 AND lease_token IS NOT NULL`, [exp.exportId])).rows[0]?.worker_id as string | undefined,
        (w) => !!w,
        30_000,
      );
      const victim = stack.instanceOfPid(Number(holder!.split(':')[1]));
      expect(victim).toMatch(/^export-worker-[12]$/);
      await stack.kill(victim!, 'SIGKILL');
      try {
        const done = await eventually(async () => (await api('GET', `/logs/export/${exp.exportId}`)).body.data, (d) => d.status !== 'processing', 120_000);
        expect(done).toMatchObject({ status: 'completed', totalRecords: N });
        const row = (await db.query(`SELECT attempts, worker_id, object_key FROM audit.export_jobs WHERE id = $1`, [exp.exportId])).rows[0];
        expect(row.attempts).toBe(2);
        expect(stack.instanceOfPid(Number(String(row.worker_id).split(':')[1]))).not.toBe(victim);
        const file = await fetch(done.downloadUrl);
        expect(file.status).toBe(200);
        const bytes = Buffer.from(await file.arrayBuffer());
        expect(bytes.length).toBe(done.fileSizeBytes);
        expect(createHash('sha256').update(bytes).digest('hex')).toBe(done.sha256);
        expect(bytes.toString().split('\r\n')).toHaveLength(N + 2);
      } finally {
        await stack.start(victim!);
      }
    } finally {
      await db.end();
    }
  });

  it('stops a gateway, an identity and a policy replica with SIGTERM under load: each drains and exits 0, and no request fails', async () => {
    const failures: string[] = [];
    let answered = 0;
    let running = true;
    const expectStatus = async (what: string, call: ReturnType<Api>, status: number) => {
      const res = await call.catch((err: Error) => ({ status: 0, headers: new Headers(), body: err.message }));
      if (res.status === status) answered++;
      else failures.push(`${what}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`);
      return res;
    };
    // Writes and reads through the load balancer, touching the gateway, identity and policy on every round.
    const loop = async (n: number) => {
      for (let i = 0; running; i++) {
        const created = await expectStatus('POST /users', api('POST', '/users', { email: `graceful-${n}-${i}@example.com`, name: 'Graceful' }), 201);
        if (created.status === 201) await expectStatus('GET /users/{id}', api('GET', `/users/${created.body.data.id}`), 200);
        await expectStatus('GET /policies', api('GET', '/policies?limit=1'), 200);
      }
    };
    const loops = [0, 1, 2].map(loop);
    const codes: Record<string, number | null> = {};
    try {
      for (const victim of ['gateway-1', 'identity-1', 'policy-1']) {
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const exited = stack.kill(victim, 'SIGTERM');
        if (victim === 'gateway-1') {
          // Draining (SHUTDOWN_DELAY_MS=1000 here): not ready at once, yet still answering, each answer closing its connection.
          const origin = stack.gateways[0]!.replace(/\/v1$/, '');
          await new Promise((resolve) => setTimeout(resolve, 200));
          const [ready, served] = await Promise.all([fetch(`${origin}/readyz`), gw[0]!('GET', '/users?limit=1')]);
          expect(ready.status).toBe(503);
          expect(served.status).toBe(200);
          expect(served.headers.get('connection')).toBe('close');
        }
        codes[victim] = await exited;
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        await stack.start(victim);
      }
      await new Promise((resolve) => setTimeout(resolve, 1_500));
    } finally {
      running = false;
      await Promise.all(loops);
    }
    expect(codes).toEqual({ 'gateway-1': 0, 'identity-1': 0, 'policy-1': 0 });
    expect(failures).toEqual([]);
    expect(answered).toBeGreaterThan(100);
  });

  it('keeps serving through the load balancer while one gateway is down', async () => {
    await stack.kill('gateway-1', 'SIGKILL');
    try {
      for (let i = 0; i < 6; i++) expect((await api('GET', '/users?limit=1')).status).toBe(200);
    } finally {
      await stack.start('gateway-1');
    }
  });
});
