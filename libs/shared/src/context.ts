import { AsyncLocalStorage } from 'node:async_hooks';
import type { SpanContext } from '@opentelemetry/api';

export interface RequestContext {
  /** The request id of a call (x-request-id); absent in background work. */
  requestId?: string;
  /** The span the work runs in (W3C trace context): parent of its queries, calls and outbox events. */
  trace?: SpanContext;
}

/** Per-request context (request id, trace context) carried across awaits, read by the logger and tracing. */
export const requestContext = new AsyncLocalStorage<RequestContext>();

export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}

const REQUEST_ID = /^req_[A-Za-z0-9]{8,64}$/;

/** A well-formed incoming request id is reused; anything else is replaced. */
export function isValidRequestId(value: unknown): value is string {
  return typeof value === 'string' && REQUEST_ID.test(value);
}
