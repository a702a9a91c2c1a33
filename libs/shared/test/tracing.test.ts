import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { identity, descriptorSets, serviceNames } from '@secsvc/proto';
import { currentTraceparent } from '../src/tracing/tracer';
import { AppError } from '../src/errors';
import { createClient, promiseClient } from '../src/grpc/client';
import { startGrpcServer, type CallContext, type RunningGrpcServer } from '../src/grpc/server';
import { createLogger } from '../src/logger';
import { Metrics } from '../src/metrics';
import { childSpan, parseTraceparent, startTracing, traceIdOf, withSpan } from '../src/tracing';

/** What the server saw of each call: the incoming traceparent, the call's trace id and the handler's current context. */
const seen: { incoming?: string; traceId: string; current?: string }[] = [];

const user = (id: string): identity.User => ({ id, environment: 'live', email: 'a@example.com', name: 'A', emailVerified: false, roles: [], metadataJson: '{}', createdAt: '2024-05-01T10:00:00.000Z', updatedAt: '2024-05-01T10:00:00.000Z' });
const implementation: Record<string, unknown> = {
  getUser: async (req: identity.GetUserRequest, ctx: CallContext): Promise<identity.User> => {
    seen.push({ incoming: ctx.metadata.get('traceparent')[0]?.toString(), traceId: traceIdOf(ctx), current: currentTraceparent() });
    childSpan('SELECT', {})?.end();
    if (req.id === 'missing') throw AppError.notFound('user');
    return user(req.id);
  },
};
const definition = identity.IdentityServiceService;
for (const k of Object.keys(definition)) implementation[k] ??= async () => Promise.reject(AppError.notFound('RPC in this test'));

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER = `00-${TRACE}-00f067aa0ba902b7-01`;

let server: RunningGrpcServer;
let address: string;
beforeAll(async () => {
  server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger: createLogger('test', 'silent'),
    metrics: new Metrics('test'),
    descriptorSets,
    services: [{ name: serviceNames.identity, definition, implementation: implementation as never }],
  });
  address = `127.0.0.1:${server.port}`;
});
afterAll(() => server.close(1000));
beforeEach(() => void seen.splice(0));

describe('trace context over gRPC with tracing off', () => {
  it("passes the caller's traceparent through unchanged; the call's trace id is its trace", async () => {
    const raw = createClient(identity.IdentityServiceClient, address);
    const client = promiseClient(raw, { deadlineMs: 2000 });
    try {
      await client.getUser({ environment: 'live', id: 'user_1' }, { headers: { traceparent: CALLER } });
      // Inside a unit of work (the services, the export worker): the current context is sent.
      await withSpan('job', parseTraceparent(CALLER), {}, () => client.getUser({ environment: 'live', id: 'user_2' }));
      // No context at all: the server starts a trace of its own.
      await client.getUser({ environment: 'live', id: 'user_3' });
    } finally {
      raw.close();
    }
    expect(seen.slice(0, 2)).toEqual([
      { incoming: CALLER, traceId: TRACE, current: CALLER },
      { incoming: CALLER, traceId: TRACE, current: CALLER },
    ]);
    expect(seen[2]!.incoming).toBeUndefined();
    expect(seen[2]!.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(seen[2]!.current).toBe(`00-${seen[2]!.traceId}-${seen[2]!.current!.slice(36, 52)}-01`);
  });
});

describe('trace context over gRPC with tracing on', () => {
  const exporter = new InMemorySpanExporter();
  let close: () => Promise<void>;
  beforeAll(() => ({ close } = startTracing('grpc-test', {}, undefined, exporter)));
  afterAll(() => close());

  it('a client span under the caller, a server span under the client span (its traceparent), the handler\'s work under that', async () => {
    // Created after tracing started: its calls get the tracing interceptor.
    const raw = createClient(identity.IdentityServiceClient, address);
    const client = promiseClient(raw, { deadlineMs: 2000 });
    try {
      await client.getUser({ environment: 'live', id: 'user_1' }, { headers: { traceparent: CALLER } });
      await expect(client.getUser({ environment: 'live', id: 'missing' }, { headers: { traceparent: CALLER } })).rejects.toThrow();
    } finally {
      raw.close();
    }
    const finished = exporter.getFinishedSpans();
    const named = (name: string, kind: number) => finished.filter((s) => s.name === name && s.kind === kind);
    const path = 'secsvc.identity.v1.IdentityService/GetUser';
    const clients = named(path, 2);
    const servers = named(path, 1);
    const queries = named('SELECT', 0);
    expect([clients.length, servers.length, queries.length]).toEqual([2, 2, 2]);
    for (const s of finished) expect(s.spanContext().traceId).toBe(TRACE);
    for (const c of clients) expect(c.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    const clientIds = clients.map((c) => c.spanContext().spanId).sort();
    expect(servers.map((s) => s.parentSpanContext?.spanId).sort()).toEqual(clientIds);
    expect(queries.map((q) => q.parentSpanContext?.spanId).sort()).toEqual(servers.map((s) => s.spanContext().spanId).sort());
    // The handler saw the client span's context as its caller, and ran in the server span's.
    const server = servers.find((s) => s.attributes['rpc.grpc.status_code'] === 0)!;
    expect(seen[0]!.incoming).toBe(`00-${TRACE}-${server.parentSpanContext!.spanId}-01`);
    expect(seen[0]!.current).toBe(`00-${TRACE}-${server.spanContext().spanId}-01`);
    expect(server.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.service': 'secsvc.identity.v1.IdentityService', 'rpc.method': 'GetUser' });
    // A failed call: both sides carry its status.
    const failed = servers.find((s) => s.attributes['rpc.grpc.status_code'] === 5);
    expect(failed?.status.code).toBe(2);
    expect(clients.find((s) => s.attributes['rpc.grpc.status_code'] === 5)?.status.code).toBe(2);
  });
});
