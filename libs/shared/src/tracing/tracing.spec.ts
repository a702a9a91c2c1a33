import { Metadata } from '@grpc/grpc-js';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { ConfigError, loadConfig } from '../config';
import { requestContext } from '../context';
import { eventOfCall } from '../outbox';
import { tracingConfig, parseKeyValues, tracesUrl } from './config';
import { withTraceparent } from './grpc';
import { traceBatch } from './messaging';
import { tracePool } from './postgres';
import { formatTraceparent, newTraceContext, parseTraceparent, sampledFlag, setSampleRatio } from './traceparent';
import { childSpan, currentTraceparent, startSpan, startTracing, traceIdOf, traceparentFor, tracingEnabled, withSpan } from './tracer';

const TRACE = '0af7651916cd43dd8448eb211c80319c';
const SPAN = 'b7ad6b7169203331';
const HEADER = `00-${TRACE}-${SPAN}-01`;

describe('traceparent', () => {
  it('parses a W3C traceparent into a remote span context and formats it back', () => {
    expect(parseTraceparent(HEADER)).toEqual({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.traceFlags).toBe(0);
    // Unknown flag bits are not kept; a future version may carry more fields.
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.traceFlags).toBe(1);
    expect(parseTraceparent(`01-${TRACE}-${SPAN}-01-more`)?.traceId).toBe(TRACE);
    expect(formatTraceparent(parseTraceparent(HEADER)!)).toBe(HEADER);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-x`],
    ['a zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['a zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['upper case hex', HEADER.toUpperCase()],
    ['a short trace id', `00-${TRACE.slice(1)}-${SPAN}-01`],
    ['a request id', 'req_0123456789abcdef'],
  ])('refuses %s (a new trace starts instead)', (_what, value) => {
    expect(parseTraceparent(value)).toBeUndefined();
  });
});

describe('the sampling decision where a trace starts', () => {
  afterEach(() => setSampleRatio(1));

  it('follows OTEL_TRACES_SAMPLER whether or not the process exports: always_on, always_off, a ratio', () => {
    startTracing('svc', { OTEL_TRACES_SAMPLER: 'parentbased_always_off' });
    expect(newTraceContext().traceFlags).toBe(0);
    startTracing('svc', { OTEL_TRACES_SAMPLER: 'parentbased_always_on' });
    expect(newTraceContext().traceFlags).toBe(1);
    startTracing('svc', { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: 0.25 });
    const sampled = Array.from({ length: 4000 }, () => newTraceContext().traceFlags).filter((f) => f === 1).length;
    expect(sampled).toBeGreaterThan(800);
    expect(sampled).toBeLessThan(1200);
    // The same trace id always gets the same decision.
    expect(sampledFlag('0af7651916cd43dd8448eb2100000000')).toBe(1);
    expect(sampledFlag('0af7651916cd43dd8448eb21ffffffff')).toBe(0);
  });
});

describe('tracing configuration (the standard OTEL_* variables)', () => {
  it('is off by default, with the standard defaults', () => {
    expect(loadConfig(tracingConfig, {})).toEqual({
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_HEADERS: '',
      OTEL_RESOURCE_ATTRIBUTES: '',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
    });
  });

  it('names a bad value, and never shows the headers (they may carry a credential)', () => {
    for (const [name, value, message] of [
      ['OTEL_TRACES_EXPORTER', 'jaeger', 'must be none or otlp'],
      ['OTEL_EXPORTER_OTLP_PROTOCOL', 'grpc', 'must be http/protobuf or http/json'],
      ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318', 'must be an http(s) URL'],
      ['OTEL_TRACES_SAMPLER_ARG', '1.5', 'must be a ratio from 0 to 1'],
    ] as const) {
      expect(() => loadConfig(tracingConfig, { [name]: value })).toThrow(ConfigError);
      expect(() => loadConfig(tracingConfig, { [name]: value })).toThrow(`${name}: ${message}`);
    }
    expect(loadConfig(tracingConfig, { OTEL_EXPORTER_OTLP_HEADERS: 'garbage' }).OTEL_EXPORTER_OTLP_HEADERS).toBe('garbage');
    expect(loadConfig(tracingConfig, { OTEL_TRACES_SAMPLER_ARG: '0.25' }).OTEL_TRACES_SAMPLER_ARG).toBe(0.25);
  });

  it('reads key=value lists with URL-encoded values, skipping malformed entries', () => {
    expect(parseKeyValues('authorization=Bearer%20abc, x-team = ops ,junk,=novalue,bad=%E0%A4%A')).toEqual({ authorization: 'Bearer abc', 'x-team': 'ops' });
    expect(parseKeyValues('')).toEqual({});
  });

  it('sends to the traces endpoint as given, else the base endpoint + /v1/traces', () => {
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe('http://collector:4318/v1/traces');
    expect(tracesUrl({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://x/traces' })).toBe('https://x/traces');
    expect(tracesUrl({})).toBe('http://localhost:4318/v1/traces');
  });
});

describe('with tracing off (the default)', () => {
  it('records nothing but keeps the trace context: a span is its parent context, or a new trace', async () => {
    expect(tracingEnabled()).toBe(false);
    const parent = parseTraceparent(HEADER)!;
    const span = startSpan('x', parent);
    expect(span.isRecording()).toBe(false);
    expect(span.spanContext()).toBe(parent);
    const fresh = startSpan('x', undefined).spanContext();
    expect(fresh.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(startSpan('x', undefined).spanContext().traceId).not.toBe(fresh.traceId);
    await withSpan('job', parent, {}, async () => {
      expect(currentTraceparent()).toBe(HEADER);
      expect(childSpan('query', {})).toBeUndefined();
    });
    expect(currentTraceparent()).toBeUndefined();
  });

  it('leaves pools and bus batches untouched', async () => {
    const query = async () => 'ran';
    const pool = { query, on: () => undefined };
    tracePool(pool as never);
    expect(pool.query).toBe(query);
    expect(await traceBatch('t', [{ id: 'log_1', key: 'k', value: '{}', traceparent: HEADER }], async () => 7)).toBe(7);
  });
});

describe('the trace id of events', () => {
  const call = (headers: Record<string, string>, traceId?: string) => {
    const metadata = new Metadata();
    for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
    return { requestId: 'req_tracingspec000000', metadata, ...(traceId && { traceId }) };
  };

  it("is the call's (set by the server), else the caller's traceparent, else the current context's, else a new one; never the request id", () => {
    expect(traceIdOf(call({ traceparent: HEADER }, 'f'.repeat(32)))).toBe('f'.repeat(32));
    expect(traceIdOf(call({ traceparent: HEADER }))).toBe(TRACE);
    expect(requestContext.run({ trace: parseTraceparent(HEADER)! }, () => traceIdOf(call({})))).toBe(TRACE);
    const made = traceIdOf(call({}));
    expect(made).toMatch(/^[0-9a-f]{32}$/);
    expect(eventOfCall(call({ traceparent: HEADER }), { environment: 'live', type: 'user.created', result: 'success' }).traceId).toBe(TRACE);
  });

  it("an outbox row takes the current context's traceparent only for an event of that trace", () => {
    requestContext.run({ trace: parseTraceparent(HEADER)! }, () => {
      expect(traceparentFor(TRACE)).toBe(HEADER);
      expect(traceparentFor('f'.repeat(32))).toBeUndefined();
      expect(withTraceparent(new Metadata()).get('traceparent')).toEqual([HEADER]);
    });
    expect(traceparentFor(TRACE)).toBeUndefined();
    expect(withTraceparent(new Metadata()).get('traceparent')).toEqual([]);
  });
});

describe('with tracing on', () => {
  const exporter = new InMemorySpanExporter();
  let close: () => Promise<void>;
  beforeAll(() => ({ close } = startTracing('spec', { OTEL_TRACES_SAMPLER: 'parentbased_always_on' }, undefined, exporter)));
  afterAll(() => close());
  beforeEach(() => exporter.reset());
  const spans = () => exporter.getFinishedSpans();

  it('nests spans through the current context, and a sampled-out parent records nothing below it', async () => {
    expect(tracingEnabled()).toBe(true);
    await withSpan('job', parseTraceparent(HEADER), {}, async () => {
      childSpan('query', {})!.end();
    });
    const [query, job] = spans();
    expect(job!.parentSpanContext?.spanId).toBe(SPAN);
    expect(query!.spanContext().traceId).toBe(TRACE);
    expect(query!.parentSpanContext?.spanId).toBe(job!.spanContext().spanId);
    exporter.reset();
    const unsampled = startSpan('x', parseTraceparent(`00-${TRACE}-${SPAN}-00`));
    expect(unsampled.isRecording()).toBe(false);
    expect(unsampled.spanContext().traceId).toBe(TRACE);
  });

  it('traces promise-form queries inside a trace: the statement, never the values; callback forms and queries outside a trace pass through', async () => {
    const calls: unknown[][] = [];
    const pool = { query: async (...args: unknown[]) => (calls.push(args), { rows: [] }), on: () => undefined };
    tracePool(pool as never, 'svc');
    await pool.query('SELECT 1');
    expect(spans()).toHaveLength(0);
    await withSpan('rpc', undefined, {}, async () => {
      await pool.query('select * from users where email = $1', ['secret@example.com']);
      await pool.query({ text: 'INSERT INTO t VALUES ($1)', values: ['x'] });
      pool.query('SELECT 2', [], () => undefined);
    });
    expect(calls).toHaveLength(4);
    const [select, insert, rpc] = spans();
    expect([select!.name, insert!.name, rpc!.name]).toEqual(['SELECT', 'INSERT', 'rpc']);
    expect(select!.attributes).toEqual({
      'db.system': 'postgresql',
      'db.system.name': 'postgresql',
      'db.query.text': 'select * from users where email = $1',
      'db.namespace': 'svc',
    });
    expect(JSON.stringify(spans().map((s) => s.attributes))).not.toContain('secret@example.com');
    expect(select!.parentSpanContext?.spanId).toBe(rpc!.spanContext().spanId);
  });

  it('a bus batch: each traced record a consumer span under the span that wrote it, the batch linked to them', async () => {
    const records = [
      { id: 'log_1', key: 'k', value: '{}', traceparent: HEADER },
      { id: 'log_2', key: 'k', value: '{}' },
    ];
    await traceBatch('auth-events', records, async () => childSpan('INSERT', {})!.end());
    const byName = Object.fromEntries(spans().map((s) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual(['INSERT', 'process auth-events', 'process auth-events batch']);
    const record = byName['process auth-events']!;
    expect(record.spanContext().traceId).toBe(TRACE);
    expect(record.parentSpanContext?.spanId).toBe(SPAN);
    expect(record.attributes['messaging.message.id']).toBe('log_1');
    const batch = byName['process auth-events batch']!;
    expect(batch.links.map((l) => l.context.spanId)).toEqual([SPAN]);
    expect(byName.INSERT!.parentSpanContext?.spanId).toBe(batch.spanContext().spanId);
  });
});
