import { diag, DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Link, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import type * as SdkTrace from '@opentelemetry/sdk-trace-base';
import type * as Resources from '@opentelemetry/resources';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import { requestContext } from '../context';
import type { Logger } from '../logger';
import { parseKeyValues, tracesUrl, type TracingSettings } from './config';
import { formatTraceparent, newTraceContext, parseTraceparent, setSampleRatio, TRACEPARENT } from './traceparent';

export { SpanKind, SpanStatusCode, type Span, type SpanContext };

/**
 * Tracing with manual spans: OpenTelemetry's SDK when OTEL_TRACES_EXPORTER=otlp, nothing at all otherwise.
 * The trace context (W3C ids) always exists: it travels in the per-request context (context.ts, the
 * AsyncLocalStorage the services already run each call in), in gRPC metadata, in the outbox and on the bus.
 * With tracing off a "span" is the parent's context itself (a non-recording span: no ids generated, nothing
 * kept), and database spans are not even attempted.
 */
let tracer: Tracer | undefined;

/** True when spans are recorded and exported (OTEL_TRACES_EXPORTER=otlp, or a test exporter). */
export const tracingEnabled = (): boolean => tracer !== undefined;

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
}

/**
 * A span under `parent` (a remote or local span context), or the root of a new trace when there is none.
 * With tracing off: a non-recording span carrying the parent's context (or a new trace's).
 */
export function startSpan(name: string, parent: SpanContext | undefined, options: SpanOptions = {}): Span {
  if (!tracer) return trace.wrapSpanContext(parent ?? newTraceContext());
  return tracer.startSpan(name, options, parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT);
}

/** A span under the current context's span (database and ClickHouse queries): none when off or outside any trace. */
export function childSpan(name: string, options: SpanOptions): Span | undefined {
  if (!tracer) return undefined;
  const parent = requestContext.getStore()?.trace;
  return parent ? tracer.startSpan(name, options, trace.setSpanContext(ROOT_CONTEXT, parent)) : undefined;
}

/** Marks a span failed with the error's kind only (a code or class name: messages may carry data). */
export function failSpan(span: Span, err: unknown): void {
  const e = err as { code?: unknown; name?: unknown } | undefined;
  const type = typeof e?.code === 'string' || typeof e?.code === 'number' ? String(e.code) : typeof e?.name === 'string' ? e.name : 'error';
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Ends `span` when `work` settles (failed when it rejects); `work`'s own outcome is returned unchanged. */
export function endWith<T>(span: Span | undefined, work: Promise<T>): Promise<T> {
  if (!span) return work;
  return work.then(
    (v) => {
      span.end();
      return v;
    },
    (err: unknown) => {
      failSpan(span, err);
      span.end();
      throw err;
    },
  );
}

/**
 * Runs `fn` as a span under `parent` (undefined: a new trace), the span being the current context of
 * everything `fn` awaits (queries, calls, events appended to an outbox). For units of background work (an
 * export run); requests get theirs from the gRPC server and the gateway.
 */
export function withSpan<T>(name: string, parent: SpanContext | undefined, options: SpanOptions, fn: () => Promise<T>): Promise<T> {
  const span = startSpan(name, parent, options);
  return requestContext.run({ ...requestContext.getStore(), trace: span.spanContext() }, () => endWith(span, fn()));
}

/** The span context of the current request or unit of work, if any. */
export const currentTraceContext = (): SpanContext | undefined => requestContext.getStore()?.trace;

/** The `traceparent` of the current context, if any. */
export function currentTraceparent(): string | undefined {
  const ctx = requestContext.getStore()?.trace;
  return ctx && formatTraceparent(ctx);
}

/** The current context's `traceparent` when it belongs to trace `traceId` (what an outbox row stores), else undefined. */
export function traceparentFor(traceId: string): string | undefined {
  const ctx = requestContext.getStore()?.trace;
  return ctx && ctx.traceId === traceId ? formatTraceparent(ctx) : undefined;
}

/**
 * The W3C trace id of a gRPC call: the one its server set, else the caller's traceparent, else the current
 * context's, else a new one (hand-made call contexts).
 */
export function traceIdOf(call: { traceId?: string; metadata: { get(key: string): unknown[] } }): string {
  return (
    call.traceId ??
    parseTraceparent(call.metadata.get(TRACEPARENT)[0]?.toString())?.traceId ??
    requestContext.getStore()?.trace?.traceId ??
    newTraceContext().traceId
  );
}

export interface StartedTracing {
  /** Exports what is buffered and stops (a process's last shutdown step). */
  close: () => Promise<void>;
}

/** Sends at most one line a minute about failing exports (an unreachable collector fails every batch). */
function diagnostics(logger: Logger): void {
  let last = 0;
  const report = (message: string) => {
    if (Date.now() - last < 60_000) return;
    last = Date.now();
    logger.warn({ otel: message.slice(0, 300) }, 'trace export failed');
  };
  diag.setLogger({ error: report, warn: () => undefined, info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.ERROR);
}

function samplerOf(s: Partial<TracingSettings>, sdk: typeof SdkTrace): SdkTrace.Sampler {
  const name = s.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on';
  const root = name.endsWith('always_on') ? new sdk.AlwaysOnSampler() : name.endsWith('always_off') ? new sdk.AlwaysOffSampler() : new sdk.TraceIdRatioBasedSampler(s.OTEL_TRACES_SAMPLER_ARG ?? 1);
  return name.startsWith('parentbased_') ? new sdk.ParentBasedSampler({ root }) : root;
}

/**
 * Starts tracing for the process when OTEL_TRACES_EXPORTER=otlp (or with `exporter`, tests: spans are handed
 * over as each ends): OTLP over HTTP (protobuf or JSON) to the configured endpoint, in batches. Otherwise does
 * nothing and loads nothing. The SDK packages are loaded only when tracing is on.
 */
export function startTracing(service: string, s: Partial<TracingSettings>, logger?: Logger, exporter?: SdkTrace.SpanExporter): StartedTracing {
  // Where a trace starts (the gateway), its sampled flag follows the configured sampler, exporting or not.
  const sampler = s.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on';
  setSampleRatio(sampler.endsWith('always_on') ? 1 : sampler.endsWith('always_off') ? 0 : (s.OTEL_TRACES_SAMPLER_ARG ?? 1));
  if (s.OTEL_TRACES_EXPORTER !== 'otlp' && !exporter) return { close: async () => undefined };
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded only when tracing is on, see above */
  const sdk = require('@opentelemetry/sdk-trace-base') as typeof SdkTrace;
  const resources = require('@opentelemetry/resources') as typeof Resources;
  let spanExporter = exporter;
  if (!spanExporter) {
    const { OTLPTraceExporter } = (
      s.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json' ? require('@opentelemetry/exporter-trace-otlp-http') : require('@opentelemetry/exporter-trace-otlp-proto')
    ) as typeof OtlpHttp;
    /* eslint-enable @typescript-eslint/no-require-imports */
    const url = tracesUrl(s);
    spanExporter = new OTLPTraceExporter({ url, headers: parseKeyValues(s.OTEL_EXPORTER_OTLP_HEADERS ?? '') });
    const shown = new URL(url);
    // The endpoint may carry credentials (user info, a query string): only its origin and path are logged.
    shown.username = shown.password = shown.search = '';
    logger?.info({ tracesUrl: shown.href, protocol: s.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf', sampler: s.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on' }, 'tracing: exporting spans');
  }
  if (logger) diagnostics(logger);
  const attributes = parseKeyValues(s.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const provider = new sdk.BasicTracerProvider({
    resource: resources.defaultResource().merge(resources.resourceFromAttributes({ ...attributes, 'service.name': s.OTEL_SERVICE_NAME ?? attributes['service.name'] ?? service })),
    sampler: samplerOf(s, sdk),
    spanProcessors: [exporter ? new sdk.SimpleSpanProcessor(spanExporter) : new sdk.BatchSpanProcessor(spanExporter)],
  });
  tracer = provider.getTracer('secsvc');
  return {
    close: async () => {
      tracer = undefined;
      await provider.shutdown();
    },
  };
}
