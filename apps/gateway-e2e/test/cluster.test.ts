/**
 * The gateway on every core, with real processes: the local stack, plus the built gateway with
 * GATEWAY_WORKERS=2 (a node:cluster primary and two workers) on the same services, with the memory rate-limit
 * store. Every request here opens its own connection, so the primary hands them to the workers in turn; which
 * worker served is read from the primary's /metrics (gateway_worker_requests_total{worker}), never from a response.
 */
import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { parseMetricsText, type MetricSample } from '@secsvc/shared';
import { startGatewayProcess, type GatewayProcess } from '@secsvc/dev/stack';
import { eventually, startTestStack, type Api } from './support';

jest.setTimeout(180_000);

const rootDir = path.resolve(__dirname, '../../..');
const KEY = 'svc_sk_' + 'clusterE2eTest'.repeat(3);
const LIMIT = 10;

let api: Api;
let stopStack: () => Promise<void>;
let gw: GatewayProcess;
const output: string[] = [];

beforeAll(async () => {
  let stack;
  ({ stack, api, stop: stopStack } = await startTestStack('cluster', KEY));
  gw = await startGatewayProcess({
    rootDir,
    stack,
    env: { GATEWAY_WORKERS: '2', RATE_LIMIT_STORE: 'memory', SHUTDOWN_DELAY_MS: '2000' },
    onOutput: (line) => output.push(line),
  });
  // startGatewayProcess returns once one worker answers; wait for both.
  await eventually(() => workersListening(), (n) => n === 2);
});

afterAll(async () => {
  await gw?.stop();
  await stopStack?.();
});

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON of varying shapes, asserted field by field
}

/** One request on a connection of its own (no keep-alive), so each goes to the next worker. */
function request(method: string, urlPath: string, opts: { key?: string; json?: unknown } = {}): Promise<Reply> {
  const url = new URL(gw.baseUrl + urlPath);
  const body = opts.json === undefined ? undefined : JSON.stringify(opts.json);
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method,
        agent: false,
        headers: { ...(opts.key && { authorization: `Bearer ${opts.key}` }), ...(body && { 'content-type': 'application/json' }) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text.startsWith('{') ? JSON.parse(text) : text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function scrape(): Promise<MetricSample[]> {
  const res = await fetch(`${gw.adminUrl}/metrics`);
  expect(res.status).toBe(200);
  return parseMetricsText(await res.text());
}

const sum = (samples: MetricSample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);

/** Requests served per worker slot. */
async function perWorker(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const s of await scrape()) if (s.name === 'gateway_worker_requests_total') out[s.labels.worker!] = s.value;
  return out;
}

const workersListening = async () => sum(await scrape().catch(() => []), 'gateway_workers', { state: 'listening' });

/** What `during` made each worker serve (slot → requests). */
async function servedBy(during: () => Promise<void>): Promise<Record<string, number>> {
  const before = await perWorker();
  await during();
  const after = await perWorker();
  return Object.fromEntries(Object.entries(after).map(([w, n]) => [w, n - (before[w] ?? 0)]));
}

/** The worker processes of the primary (Linux: its children). */
const workerPids = () => readFileSync(`/proc/${gw.pid}/task/${gw.pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);

describe('GATEWAY_WORKERS=2', () => {
  it('serves from both workers and aggregates their metrics on the one admin port', async () => {
    const before = await scrape();
    const statuses: number[] = [];
    const served = await servedBy(async () => {
      for (let i = 0; i < 20; i++) statuses.push((await request('GET', '/users?limit=1', { key: KEY })).status);
    });
    expect(statuses).toEqual(Array(20).fill(200));
    expect(Object.keys(served).sort()).toEqual(['0', '1']);
    expect(served['0']).toBeGreaterThan(0);
    expect(served['1']).toBeGreaterThan(0);
    expect(served['0']! + served['1']!).toBe(20);
    const after = await scrape();
    // Counters are summed over the workers: the 20 requests, wherever they were served.
    const users = { route: '/v1/users', method: 'GET', status: '200' };
    expect(sum(after, 'http_requests_total', users) - sum(before, 'http_requests_total', users)).toBe(20);
    expect(sum(after, 'http_request_duration_seconds_count', users) - sum(before, 'http_request_duration_seconds_count', users)).toBe(20);
    // Facts of the process, not quantities: once per pod.
    expect(after.filter((s) => s.name === 'secsvc_build_info').map((s) => s.value)).toEqual([1]);
    expect(sum(after, 'gateway_workers', { state: 'configured' })).toBe(2);
    expect(after.every((s) => s.labels.service === 'gateway')).toBe(true);
    // The pod is ready (both workers ready, their services reachable).
    const ready = await fetch(`${gw.adminUrl}/readyz`);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { workers: true, identity: true, policy: true, audit: true } });
  });

  it(`enforces a key's limit of ${LIMIT} a minute as ${LIMIT} in total over both workers, not ${2 * LIMIT}`, async () => {
    const key = (await api('POST', '/api-keys', { name: 'cluster limit', type: 'secret', plan: 'enterprise', rateLimit: LIMIT })).body.data.key;
    const answers: { status: number; remaining: string }[] = [];
    const served = await servedBy(async () => {
      for (let i = 0; i < 3 * LIMIT; i++) {
        const res = await request('GET', '/users?limit=1', { key });
        answers.push({ status: res.status, remaining: String(res.headers['x-ratelimit-remaining']) });
      }
    });
    // Both workers took some: with a budget per worker, min(a, 10) + min(b, 10) > 10 requests would have passed.
    expect([served['0']! > 0, served['1']! > 0]).toEqual([true, true]);
    // One budget: the first ten pass whichever worker took them, counting down 9..0, then every request is refused.
    expect(answers.slice(0, LIMIT)).toEqual(Array.from({ length: LIMIT }, (_, i) => ({ status: 200, remaining: String(LIMIT - 1 - i) })));
    expect(answers.slice(LIMIT)).toEqual(Array(2 * LIMIT).fill({ status: 429, remaining: '0' }));
  });

  it('refuses a revoked API key and a revoked session on both workers at once (each follows the change feed)', async () => {
    const created = (await api('POST', '/api-keys', { name: 'cluster revoke', type: 'secret', plan: 'enterprise', rateLimit: 100000 })).body.data;
    const hits = async () => sum(await scrape(), 'credential_cache_requests_total', { cache: 'api_key', result: 'hit' });
    const hitsBefore = await hits();
    const warm = await servedBy(async () => {
      for (let i = 0; i < 6; i++) expect((await request('GET', '/users?limit=1', { key: created.key })).status).toBe(200);
    });
    expect([warm['0']! > 0, warm['1']! > 0]).toEqual([true, true]);
    // Both workers hold the key in their cache (a first request per worker misses, the others hit).
    expect((await hits()) - hitsBefore).toBeGreaterThanOrEqual(4);
    // Revoked through the stack's own gateway: the cluster's workers learn it from identity's change feed only.
    expect((await api('DELETE', `/api-keys/${created.id}`)).status).toBe(204);
    const refused: number[] = [];
    const after = await servedBy(async () => {
      for (let i = 0; i < 6; i++) refused.push((await request('GET', '/users?limit=1', { key: created.key })).status);
    });
    expect(refused).toEqual(Array(6).fill(401));
    expect([after['0']! > 0, after['1']! > 0]).toEqual([true, true]);

    const user = (await api('POST', '/users', { email: 'cluster@example.com', name: 'C' })).body.data;
    const session = (await api('POST', '/sessions', { userId: user.id, expiresIn: '1h' })).body.data;
    const verify = async () => (await request('POST', '/sessions/verify', { key: KEY, json: { token: session.token } })).body.data.valid;
    const valid: boolean[] = [];
    for (let i = 0; i < 4; i++) valid.push(await verify());
    expect(valid).toEqual([true, true, true, true]);
    expect((await api('POST', '/sessions/revoke', { token: session.token })).status).toBe(204);
    const revoked: boolean[] = [];
    const verified = await servedBy(async () => {
      for (let i = 0; i < 4; i++) revoked.push(await verify());
    });
    expect(revoked).toEqual([false, false, false, false]);
    expect([verified['0']! > 0, verified['1']! > 0]).toEqual([true, true]);
  });

  it('replaces a killed worker, says so in the log, and serves from both again', async () => {
    const [victim, survivor] = workerPids();
    expect(survivor).toBeDefined();
    process.kill(victim!, 'SIGKILL');
    const pids = await eventually(
      async () => ((await workersListening()) === 2 ? workerPids() : []),
      (p) => p.length === 2 && !p.includes(victim!),
    );
    expect(pids).toContain(survivor);
    expect(sum(await scrape(), 'gateway_worker_restarts_total')).toBe(1);
    const died = output.map((l) => JSON.parse(l.startsWith('{') ? l : '{}')).find((l) => l.msg === 'gateway worker died; starting a new one');
    expect(died).toMatchObject({ level: 'error', pid: victim, signal: 'SIGKILL' });
    const served = await servedBy(async () => {
      for (let i = 0; i < 6; i++) expect((await request('GET', '/users?limit=1', { key: KEY })).status).toBe(200);
    });
    expect([served['0']! > 0, served['1']! > 0]).toEqual([true, true]);
  });

  it('drains on SIGTERM: readiness drops at once, the workers keep serving (SHUTDOWN_DELAY_MS=2000) with Connection: close, then all exit 0', async () => {
    const workers = workerPids();
    const statuses: number[] = [];
    let running = true;
    // Requests on kept-alive connections throughout the shutdown delay.
    const loop = (async () => {
      while (running) statuses.push(await fetch(`${gw.baseUrl}/users?limit=1`, { headers: { authorization: `Bearer ${KEY}` } }).then((r) => r.status, () => 0));
    })();
    await new Promise((r) => setTimeout(r, 300));
    const exited = gw.stop();
    await new Promise((r) => setTimeout(r, 200));
    const [ready, served] = await Promise.all([fetch(`${gw.adminUrl}/readyz`), request('GET', '/users?limit=1', { key: KEY })]);
    expect(ready.status).toBe(503);
    expect(served.status).toBe(200);
    expect(served.headers.connection).toBe('close');
    await new Promise((r) => setTimeout(r, 400));
    running = false;
    await loop;
    expect(statuses.length).toBeGreaterThan(5);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(await exited).toBe(0);
    // The workers are gone too.
    for (const pid of workers) expect(() => process.kill(pid, 0)).toThrow();
  });
});
