import type { Request, Response } from 'express';
import { formatTraceparent, parseTraceparent, SpanKind, SpanStatusCode, startSpan, TRACEPARENT, type Span } from '@secsvc/shared';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's server span (non-recording with tracing off): its context is the request's trace context. */
    trace: Span;
    /** That context as a `traceparent` value, sent to the services with every call (http/origin.ts). */
    traceparent: string;
  }
}

/**
 * Continues the caller's W3C trace (a valid `traceparent` header) or starts one, for every request: the
 * server span, and the `traceparent` answered to the caller (the trace its audit entries name). With
 * tracing off nothing is recorded and the context is the caller's own (or a new trace's).
 */
export function startRequestTrace(req: Request, res: Response): void {
  const span = startSpan(req.method, parseTraceparent(req.get(TRACEPARENT)), {
    kind: SpanKind.SERVER,
    // No query string: download links carry their token in it.
    attributes: { 'http.request.method': req.method, 'url.path': req.path, 'url.scheme': req.protocol },
  });
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
