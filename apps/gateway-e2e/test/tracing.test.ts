/**
 * Tracing end to end: the whole local stack with OTEL_TRACES_EXPORTER=otlp sends its spans (OTLP/HTTP JSON) to
 * a collector in this test. A request with a known `traceparent` is followed from the gateway over gRPC into
 * identity, its PostgreSQL queries, its outbox, the event bus and the audit consumer that stores the event,
 * whose audit entry names the trace; an export's worker run continues the trace of the request that created it.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { eventually, startTestStack, type Api } from './support';

jest.setTimeout(240_000);

const KEY = 'svc_sk_' + 'tracingE2eTests'.repeat(3);

/** OTLP span kinds (SPAN_KIND_*). */
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

interface AnyValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: AnyValue }[];
  links?: { traceId: string; spanId: string }[];
}
/** A received span with its resource's service.name and its attributes as a plain object. */
interface Span extends OtlpSpan {
  service: string;
  attrs: Record<string, string | number | boolean | undefined>;
}

const valueOf = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attrsOf = (list: { key: string; value: AnyValue }[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** A minimal OTLP/HTTP collector: every span of every export request, and each request's headers. */
function startCollector() {
  const spans: Span[] = [];
  /** Bodies of OTLP/HTTP protobuf requests, as received. */
  const protobuf: Buffer[] = [];
  const requests: http.IncomingHttpHeaders[] = [];
  const resources: Record<string, unknown>[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push(req.headers);
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      if (req.method === 'POST' && req.url === '/v1/traces' && req.headers['content-type'] === 'application/x-protobuf') {
        protobuf.push(body);
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        return;
      }
      if (req.method !== 'POST' || req.url !== '/v1/traces' || req.headers['content-type'] !== 'application/json') {
        res.writeHead(400).end();
        return;
      }
      const payload = JSON.parse(body.toString('utf8')) as {
        resourceSpans: { resource: { attributes: { key: string; value: AnyValue }[] }; scopeSpans: { spans: OtlpSpan[] }[] }[];
      };
      for (const rs of payload.resourceSpans) {
        const resource = attrsOf(rs.resource.attributes);
        resources.push(resource);
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service: String(resource['service.name']), attrs: attrsOf(s.attributes) });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return {
    spans,
    protobuf,
    requests,
    resources,
    port: () => (server.address() as AddressInfo).port,
    listen: () => new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port))),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const collector = startCollector();
let api: Api;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  const port = await collector.listen();
  ({ api, stop } = await startTestStack('tracing', KEY, {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=e2e%20token',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=e2e',
    // The caller's traceparent is continued (the default starts a new trace linked to it: apps/gateway/test/trace.test.ts).
    TRACE_CONTINUE_INCOMING: 'true',
  }));
});

afterAll(async () => {
  await stop?.();
  await collector.close();
});

const inTrace = (traceId: string) => collector.spans.filter((s) => s.traceId === traceId);
/** The one span matching `pick` in the trace; fails naming what the trace holds. */
function one(spans: Span[], what: string, pick: (s: Span) => boolean): Span {
  const found = spans.filter(pick);
  if (found.length !== 1) throw new Error(`expected one ${what}, got ${found.length} in ${JSON.stringify(spans.map((s) => [s.service, s.name, s.kind]))}`);
  return found[0]!;
}

describe('a request that creates a user, followed through the stack', () => {
  const traceId = hex(16);
  const callerSpan = hex(8);
  const email = `traced-${hex(4)}@example.com`;
  let userId: string;
  let answered: string;

  it('the gateway continues the incoming traceparent and answers with its own span in that trace', async () => {
    const res = await api('POST', '/users', { email, name: 'Traced' }, { traceparent: `00-${traceId}-${callerSpan}-01`, 'user-agent': 'tracing-e2e' });
    expect(res.status).toBe(201);
    userId = res.body.data.id;
    answered = res.headers.get('traceparent') ?? '';
    expect(answered).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(answered.slice(36, 52)).not.toBe(callerSpan);
    // x-request-id is its own id, as before.
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('spans of the gateway, identity, its PostgreSQL queries and the audit consumer all carry the trace, each under its parent', async () => {
    const spans = await eventually(
      async () => inTrace(traceId),
      (ss) => ss.some((s) => s.service === 'audit' && s.kind === CONSUMER) && ss.some((s) => s.service === 'gateway' && s.kind === SERVER),
      60_000,
    );
    const gateway = one(spans, 'gateway server span', (s) => s.service === 'gateway' && s.kind === SERVER);
    expect(gateway).toMatchObject({ name: 'POST /v1/users', parentSpanId: callerSpan, spanId: answered.slice(36, 52) });
    expect(gateway.attrs).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/v1/users', 'http.response.status_code': 201 });

    const path = 'secsvc.identity.v1.IdentityService/CreateUser';
    const client = one(spans, 'CreateUser client span', (s) => s.service === 'gateway' && s.kind === CLIENT && s.name === path);
    expect(client.parentSpanId).toBe(gateway.spanId);
    const server = one(spans, 'CreateUser server span', (s) => s.service === 'identity' && s.kind === SERVER && s.name === path);
    expect(server.parentSpanId).toBe(client.spanId);
    expect(server.attrs).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'CreateUser', 'rpc.grpc.status_code': 0 });

    // CreateUser's queries (its transaction: the user row and the outbox event), under its server span.
    const queries = spans.filter((s) => s.parentSpanId === server.spanId && s.service === 'identity');
    for (const q of queries) expect(q).toMatchObject({ service: 'identity', kind: CLIENT, attrs: expect.objectContaining({ 'db.system': 'postgresql' }) });
    const statements = queries.map((q) => String(q.attrs['db.query.text']));
    expect(statements).toEqual(expect.arrayContaining(['BEGIN', 'COMMIT', expect.stringMatching(/INSERT INTO users/i), expect.stringMatching(/INSERT INTO outbox/i)]));
    // Statements only: the values (the user's email) travel as parameters and are never recorded.
    expect(JSON.stringify(spans)).not.toContain(email);

    // The event's span in the audit consumer: a child of the identity span that wrote it to the outbox.
    const stored = one(spans, 'audit consumer span', (s) => s.service === 'audit' && s.kind === CONSUMER);
    expect(stored).toMatchObject({ name: 'process auth-events', parentSpanId: server.spanId });
    expect(stored.attrs['messaging.message.id']).toMatch(/^log_/);

    // The batch that stored it: linked to the trace, its ClickHouse insert under it.
    const batch = one(collector.spans, 'consumer batch span linked to the trace', (s) => s.name === 'process auth-events batch' && !!s.links?.some((l) => l.traceId === traceId));
    expect(batch.links).toContainEqual(expect.objectContaining({ traceId, spanId: server.spanId }));
    expect(collector.spans.some((s) => s.parentSpanId === batch.spanId && s.attrs['db.system'] === 'clickhouse' && /^INSERT/.test(String(s.attrs['db.query.text'])))).toBe(true);
  });

  it("the audit entry of user.created (full form) names the request's W3C trace id", async () => {
    const listed = await eventually(
      async () => (await api('GET', '/logs?events=user.created&limit=100')).body.data as { id: string; target?: { id: string } }[],
      (es) => es.some((e) => e.target?.id === userId),
    );
    const entry = listed.find((e) => e.target?.id === userId)!;
    const full = await api('GET', `/logs/${entry.id}`);
    expect(full.status).toBe(200);
    expect(full.body.data.traceId).toBe(traceId);
    const stored = one(inTrace(traceId), 'audit consumer span', (s) => s.service === 'audit' && s.kind === CONSUMER);
    expect(stored.attrs['messaging.message.id']).toBe(entry.id);
  });

  it('every process exports with the configured headers and resource attributes', () => {
    expect(collector.requests.length).toBeGreaterThan(0);
    for (const h of collector.requests) expect(h['x-collector-token']).toBe('e2e token');
    const services = new Set(collector.resources.map((r) => r['service.name']));
    for (const s of ['gateway', 'identity', 'audit']) expect(services).toContain(s);
    for (const r of collector.resources) expect(r['deployment.environment.name']).toBe('e2e');
  });
});

describe('an export', () => {
  it('the worker run continues the trace of the request that created the export, down to the rows it reads', async () => {
    const traceId = hex(16);
    const now = Date.now();
    const res = await api(
      'POST',
      '/logs/export',
      { from: new Date(now - 3_600_000).toISOString(), to: new Date(now + 60_000).toISOString(), format: 'csv' },
      { traceparent: `00-${traceId}-${hex(8)}-01` },
    );
    expect(res.status).toBe(202);
    const id = res.body.data.exportId as string;
    await eventually(async () => (await api('GET', `/logs/export/${id}`)).body.data.status as string, (s) => s === 'completed', 60_000);
    const spans = await eventually(
      async () => inTrace(traceId),
      (ss) => ss.some((s) => s.service === 'export-worker' && s.name === 'export.run') && ss.some((s) => s.service === 'audit' && s.name.endsWith('/StreamLogs')),
      60_000,
    );
    const created = one(spans, 'CreateExport server span', (s) => s.service === 'audit' && s.kind === SERVER && s.name.endsWith('/CreateExport'));
    const run = one(spans, 'export.run span', (s) => s.service === 'export-worker' && s.name === 'export.run');
    expect(run.parentSpanId).toBe(created.spanId);
    expect(run.attrs['secsvc.export.id']).toBe(id);
    // Its read of the rows: a StreamLogs call to audit under the run, and audit's ClickHouse queries under that.
    const read = one(spans, 'StreamLogs server span', (s) => s.service === 'audit' && s.kind === SERVER && s.name.endsWith('/StreamLogs'));
    const call = one(spans, 'StreamLogs client span', (s) => s.service === 'export-worker' && s.kind === CLIENT && s.name.endsWith('/StreamLogs'));
    expect([call.parentSpanId, read.parentSpanId]).toEqual([run.spanId, call.spanId]);
    expect(spans.some((s) => s.parentSpanId === read.spanId && s.attrs['db.system'] === 'clickhouse')).toBe(true);
    // Its own queries (the job's completion) too.
    expect(spans.some((s) => s.service === 'export-worker' && s.attrs['db.system'] === 'postgresql' && s.parentSpanId === run.spanId)).toBe(true);
  });
});

describe('OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf (the default)', () => {
  it('a process sends its spans as OTLP protobuf, flushed when it closes', async () => {
    const traceId = hex(16);
    const parent = hex(8);
    // The built library, as a service process runs it (plain node): tracing from the standard variables.
    const script = `
      const s = require('@secsvc/shared');
      const tracing = s.startTracing('protobuf-check', s.loadConfig(s.tracingConfig));
      s.startSpan('unit', s.parseTraceparent(process.env.PARENT)).end();
      tracing.close();`;
    // Asynchronously: the collector answers from this process's event loop.
    const child = await promisify(execFile)(process.execPath, ['-e', script], {
      cwd: path.resolve(__dirname, '../../..'),
      env: {
        PATH: process.env.PATH,
        PARENT: `00-${traceId}-${parent}-01`,
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${collector.port()}/v1/traces`,
      },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(child.stderr).toBe('');
    // Protobuf: the ids as raw bytes, names as strings (a decoder would say no more for this check).
    const body = collector.protobuf.find((b) => b.includes(Buffer.from(traceId, 'hex')));
    expect(body).toBeDefined();
    expect(body!.includes(Buffer.from(parent, 'hex'))).toBe(true);
    expect(body!.includes(Buffer.from('protobuf-check'))).toBe(true);
  });
});
