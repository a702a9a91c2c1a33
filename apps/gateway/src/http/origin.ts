import type { Request } from 'express';

/** The longest user agent an event keeps. */
export const USER_AGENT_MAX = 512;

/**
 * Where a request came from, as events record it: the client ip (X-Forwarded-For as far as the proxies are
 * trusted) and the user agent, cut to USER_AGENT_MAX characters.
 */
export function requestOrigin(req: Request): { ip: string; userAgent: string } {
  return { ip: req.ip ?? '', userAgent: (req.get('user-agent') ?? '').slice(0, USER_AGENT_MAX) };
}

/**
 * The same, as the gRPC metadata that tells a service where the request came from, with the request's trace
 * context (`traceparent`, middleware/trace.ts): the trace its events name.
 */
export function originHeaders(req: Request): { 'x-client-ip': string; 'x-user-agent': string; traceparent?: string } {
  const { ip, userAgent } = requestOrigin(req);
  return { 'x-client-ip': ip, 'x-user-agent': userAgent, ...(req.traceparent && { traceparent: req.traceparent }) };
}
