/**
 * Metrics end to end: the local stack as processes; a few calls (a good one, a 401 and then a 429 of a bad
 * key, 404s, a policy, an export), then every process's admin /metrics must expose each metric that
 * SERVICE_METRICS (libs/shared/src/metrics.ts, the one list docs and alerts follow) names for it, with exactly
 * its labels, and the refusals must carry their route's template.
 */
import { parseMetricsText, SERVICE_METRICS, type MetricSample, type MetricSpec } from '@secsvc/shared';
import type { LocalStack } from '@secsvc/dev/stack';
import { eventually, startTestStack, type Api } from './support';

jest.setTimeout(180_000);

const KEY = 'svc_sk_' + 'metricsE2eTest'.repeat(3);
/** What the local stack has of the optional parts: a SAML SP key pair, rows through audit's gRPC (no CLICKHOUSE_URL); no TLS. */
const LOCAL_SETUP = new Set<MetricSpec['requires']>(['saml_sp', 'audit_grpc_source']);
type Process = keyof typeof SERVICE_METRICS;

let stack: LocalStack;
let api: Api;
let stop: () => Promise<void>;

beforeAll(async () => {
  // Three anonymous requests a minute per client ip: a bad key is refused with 401 three times, then 429.
  ({ stack, api, stop } = await startTestStack('metrics', KEY, { RATE_LIMIT_ANONYMOUS_PER_MINUTE: '3', EXPORT_POLL_MS: '200' }));
});

afterAll(async () => {
  await stop?.();
});

const scrape = async (p: Process): Promise<MetricSample[]> => {
  const res = await fetch(`${stack.admin[p]}/metrics`);
  expect(res.status).toBe(200);
  return parseMetricsText(await res.text());
};

/** A metric's samples: its own name, or a histogram's _bucket/_sum/_count series (their labels without `le`). */
function samplesOf(all: MetricSample[], name: string): MetricSample[] {
  return all
    .filter((s) => s.name === name || s.name === `${name}_bucket` || s.name === `${name}_sum` || s.name === `${name}_count`)
    .map((s) => (s.name === name ? s : { ...s, labels: Object.fromEntries(Object.entries(s.labels).filter(([k]) => k !== 'le')) }));
}

/** What is wrong with one process's metrics: specs without samples, or samples with other labels. */
function problems(p: Process, all: MetricSample[]): string[] {
  const found: string[] = [];
  for (const spec of SERVICE_METRICS[p].filter((s) => !s.requires || LOCAL_SETUP.has(s.requires))) {
    const samples = samplesOf(all, spec.name);
    if (samples.length === 0) found.push(`${p}: no ${spec.name}`);
    const expected = [...spec.labels, 'service'].sort().join(',');
    for (const s of samples) {
      if (Object.keys(s.labels).sort().join(',') !== expected) found.push(`${p}: ${spec.name} labelled ${JSON.stringify(s.labels)}, expected ${expected}`);
      else if (s.labels.service !== p) found.push(`${p}: ${spec.name} has service="${s.labels.service}"`);
    }
  }
  return found;
}

describe('metrics of every process', () => {
  it('exposes every metric of SERVICE_METRICS with its labels, and labels refusals with their route template', async () => {
    const bad = { authorization: `Bearer svc_sk_${'n'.repeat(42)}` };
    // good calls (the second one finds the key in the credential cache), changes relayed by each outbox
    expect((await api('GET', '/users')).status).toBe(200);
    expect((await api('GET', '/users')).status).toBe(200);
    expect((await api('POST', '/users', { email: 'metrics@example.com', name: 'Metrics' })).status).toBe(201);
    expect((await api('POST', '/policies', { name: 'metrics', effect: 'allow', principals: ['*'], actions: ['read'], resources: ['/metrics'] })).status).toBe(201);
    // a 404 of a known route, and of a path nobody serves
    expect((await api('GET', '/users/user_00000000000000000000000000')).status).toBe(404);
    expect((await fetch(`${new URL(stack.baseUrl).origin}/no/such/path`)).status).toBe(404);
    // a bad key: 401 while the client ip's anonymous budget lasts, then 429
    const statuses: number[] = [];
    for (let i = 0; i < 6 && !statuses.includes(429); i++) statuses.push((await api('GET', '/users', undefined, bad)).status);
    expect(statuses[0]).toBe(401);
    expect(statuses.at(-1)).toBe(429);
    // an export: queued, run by the worker (rows through audit's StreamLogs), events in audit's own outbox
    const window = { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date().toISOString() };
    const created = await api('POST', '/logs/export', { ...window, format: 'json' });
    expect(created.status).toBe(202);
    const done = await eventually(async () => (await api('GET', `/logs/export/${created.body.data.exportId}`)).body.data, (d) => d.status !== 'processing', 60_000);
    expect(done.status).toBe('completed');

    // Counters appear once their first event was counted (relays and the consumer work asynchronously).
    const processes = Object.keys(SERVICE_METRICS) as Process[];
    const scraped = await eventually(
      async () => Object.fromEntries(await Promise.all(processes.map(async (p) => [p, await scrape(p)] as const))) as Record<Process, MetricSample[]>,
      (all) => processes.every((p) => problems(p, all[p]).length === 0),
      60_000,
    ).catch(async () => Object.fromEntries(await Promise.all(processes.map(async (p) => [p, await scrape(p)] as const))) as Record<Process, MetricSample[]>);
    expect(processes.flatMap((p) => problems(p, scraped[p]))).toEqual([]);

    const requests = scraped.gateway.filter((s) => s.name === 'http_requests_total').map((s) => `${s.labels.method} ${s.labels.route} ${s.labels.status}`);
    expect(requests).toEqual(
      expect.arrayContaining(['GET /v1/users 200', 'GET /v1/users 401', 'GET /v1/users 429', 'GET /v1/users/:id 404', 'GET unmatched 404', 'POST /v1/logs/export 202']),
    );
    const value = (p: Process, name: string, labels: Record<string, string>) =>
      scraped[p].find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
    expect(value('gateway', 'ratelimit_decisions_total', { plan: 'anonymous', decision: 'limited' })).toBeGreaterThanOrEqual(1);
    expect(value('gateway', 'credential_cache_requests_total', { cache: 'api_key', result: 'hit' })).toBeGreaterThanOrEqual(1);
    expect(value('gateway', 'grpc_client_handled_total', { grpc_service: 'secsvc.identity.v1.IdentityService', grpc_method: 'GetUser', grpc_code: 'NOT_FOUND' })).toBe(1);
    expect(value('identity', 'grpc_server_handled_total', { grpc_type: 'unary', grpc_method: 'GetUser', grpc_code: 'NOT_FOUND' })).toBe(1);
    expect(value('export-worker', 'grpc_client_handled_total', { grpc_type: 'server_stream', grpc_service: 'secsvc.audit.v1.AuditService', grpc_method: 'StreamLogs', grpc_code: 'OK' })).toBeGreaterThanOrEqual(1);
    expect(value('export-worker', 'export_jobs_total', { outcome: 'completed' })).toBe(1);
    expect(value('export-worker', 'export_queue_depth', { state: 'queued' })).toBe(0);
    expect(value('audit', 'bus_consumer_lag_events', { topic: 'auth-events', group: 'audit' })).toBeGreaterThanOrEqual(0);
    expect(value('identity', 'db_pool_max_connections', { pool: 'main' })).toBeGreaterThan(0);
    expect(value('audit', 'db_pool_connections', { pool: 'bus_consume', state: 'total' })).toBeGreaterThanOrEqual(0);
    const signingKeyAge = value('identity', 'oauth_signing_key_age_seconds', {});
    expect(signingKeyAge).toBeGreaterThanOrEqual(0);
    expect(signingKeyAge).toBeLessThan(600);
    // the gateway loaded the stack's SAML SP certificate (valid for years)
    expect(value('gateway', 'tls_certificate_expiry_timestamp_seconds', { use: 'saml_sp' })).toBeGreaterThan(Date.now() / 1000 + 86_400);
  });
});
