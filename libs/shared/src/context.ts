import { AsyncLocalStorage } from 'node:async_hooks';

export interface RequestContext {
  requestId: string;
}

/** Per-request context (request id) carried across awaits, read by the logger. */
export const requestContext = new AsyncLocalStorage<RequestContext>();

export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}

const REQUEST_ID = /^req_[A-Za-z0-9]{8,64}$/;

/** A well-formed incoming request id is reused; anything else is replaced. */
export function isValidRequestId(value: unknown): value is string {
  return typeof value === 'string' && REQUEST_ID.test(value);
}
