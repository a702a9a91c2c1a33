import * as grpc from '@grpc/grpc-js';
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import { currentTraceContext, SpanKind, startSpan, tracingEnabled } from './tracer';
import { formatTraceparent, newTraceContext, parseTraceparent, TRACEPARENT } from './traceparent';

/** rpc.* attributes of a method path (/package.Service/Method). */
function rpcAttributes(path: string): Attributes {
  const at = path.lastIndexOf('/');
  return { 'rpc.system': 'grpc', 'rpc.service': path.slice(1, at), 'rpc.method': path.slice(at + 1) };
}

/** Ends an RPC span with the call's status (errors but for OK mark it failed). */
export function endRpcSpan(span: Span, code: grpc.status): void {
  if (!span.isRecording()) return;
  span.setAttribute('rpc.grpc.status_code', code);
  if (code !== grpc.status.OK) span.setStatus({ code: SpanStatusCode.ERROR, message: grpc.status[code] });
  span.end();
}

/**
 * The server span of an incoming call, under the caller's `traceparent` (a new trace without one). With
 * tracing off, a non-recording span carrying that context (what the handler's events and calls carry on).
 * `requireParent` (long-lived streams): a call without a traceparent gets its context but no recorded span.
 */
export function serverSpan(path: string, metadata: grpc.Metadata, requireParent = false): Span {
  const parent = parseTraceparent(metadata.get(TRACEPARENT)[0]?.toString());
  if (!parent && requireParent) return trace.wrapSpanContext(newTraceContext());
  return startSpan(path.slice(1), parent, { kind: SpanKind.SERVER, attributes: rpcAttributes(path) });
}

/**
 * The client side (installed on clients only when tracing is on): a client span per call under the
 * caller's `traceparent` metadata (the gateway passes its request span's) or else the current context, and
 * its own context sent on as `traceparent`. A call outside any trace passes through untouched.
 */
export const traceClientInterceptor: grpc.Interceptor = (options, nextCall) => {
  const path = options.method_definition.path;
  return new grpc.InterceptingCall(nextCall(options), {
    start(metadata, _listener, next) {
      const parent = parseTraceparent(metadata.get(TRACEPARENT)[0]?.toString()) ?? currentTraceContext();
      // Outside any trace (background calls, long-lived change feeds) nothing is recorded or sent.
      if (!parent) {
        next(metadata, {});
        return;
      }
      const span = startSpan(path.slice(1), parent, { kind: SpanKind.CLIENT, attributes: rpcAttributes(path) });
      metadata.set(TRACEPARENT, formatTraceparent(span.spanContext()));
      next(metadata, {
        onReceiveStatus(status, nextStatus) {
          endRpcSpan(span, status.code);
          nextStatus(status);
        },
      });
    },
  });
};

/** The interceptors tracing adds to a client: none when off. */
export const tracingInterceptors = (): grpc.Interceptor[] => (tracingEnabled() ? [traceClientInterceptor] : []);

/** Outgoing metadata carrying the current context's traceparent (hand-built calls: streams), if any. */
export function withTraceparent(md: grpc.Metadata, context = currentTraceContext()): grpc.Metadata {
  if (context && !md.get(TRACEPARENT).length) md.set(TRACEPARENT, formatTraceparent(context));
  return md;
}
