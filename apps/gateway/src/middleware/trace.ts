import type { Request, Response } from 'express';
import { formatTraceparent, parseTraceparent, sampledFlag, SpanKind, SpanStatusCode, startSpan, TRACEPARENT, tracingEnabled, type Span } from '@secsvc/shared';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's server span (non-recording with tracing off): its context is the request's trace context. */
    trace: Span;
    /** That context as a `traceparent` value, sent to the services with every call (http/origin.ts). */
    traceparent: string;
  }
}

/**
 * The request's W3C trace, for every request: its server span, and the `traceparent` answered to the caller
 * (the trace its audit entries name). A caller's valid `traceparent` is continued only when `continueIncoming`
 * (TRACE_CONTINUE_INCOMING: callers you trust); otherwise a new trace starts, linked to the caller's, so no
 * caller chooses the trace id of its audit entries. Either way the sampled flag is this gateway's decision
 * (OTEL_TRACES_SAMPLER), never the caller's. With tracing off nothing is recorded and no attribute is built.
 */
export function startRequestTrace(req: Request, res: Response, continueIncoming: boolean): void {
  const header = req.get(TRACEPARENT);
  const incoming = header === undefined ? undefined : parseTraceparent(header);
  const parent = incoming && continueIncoming ? { ...incoming, traceFlags: sampledFlag(incoming.traceId) } : undefined;
  const span = startSpan(
    req.method,
    parent,
    tracingEnabled()
      ? {
          kind: SpanKind.SERVER,
          links: incoming && !continueIncoming ? [{ context: incoming }] : undefined,
          // No query string: download links carry their token in it. The path is the caller's: bounded.
          attributes: { 'http.request.method': req.method, 'url.path': req.path.slice(0, 256), 'url.scheme': req.protocol },
        }
      : undefined,
  );
  req.trace = span;
  req.traceparent = formatTraceparent(span.spanContext());
  res.setHeader(TRACEPARENT, req.traceparent);
}

/** Ends the request's span, named by its route template (`unmatched`: the method alone). */
export function endRequestTrace(req: Request, res: Response, route: string): void {
  const span = req.trace;
  if (!span?.isRecording()) return;
  if (route !== 'unmatched') {
    span.updateName(`${req.method} ${route}`);
    span.setAttribute('http.route', route);
  }
  span.setAttribute('http.response.status_code', res.statusCode);
  if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
