import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createLogger, Metrics, type Readiness } from '@secsvc/shared';
import { createApp, type GatewayDeps } from '../../src/app';
import { RateLimiter } from '../../src/rate-limit/limiter';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store';
import type { RateLimitPolicy } from '../../src/rate-limit/subjects';
import { FakeIdentity, VALID_KEY, type IdentityPort } from './fake-identity';

export interface TestGateway {
  url: string;
  fake: FakeIdentity;
  deps: GatewayDeps;
  close: () => Promise<void>;
}

/** The limits of the local profile's defaults (the gateway's configuration defaults). */
export const DEFAULT_LIMITS: RateLimitPolicy = { anonymousPerMinute: 100, userPerMinute: 1000, enterprisePerMinute: 10_000 };

/**
 * The gateway over an in-memory identity fake, listening on an ephemeral port of 127.0.0.1, rate limited
 * like the local profile (memory store, default limits) unless `rateLimit` says otherwise.
 */
export async function startGateway(
  options: {
    fake?: FakeIdentity;
    ready?: () => Promise<Readiness>;
    rateLimit?: GatewayDeps['rateLimit'];
    /** The policy service, for user callers (absent: policy routes and user callers are not reachable). */
    policy?: Partial<GatewayDeps['clients']['policy']>;
    /** More of the gateway's surface (oauth, sso, downloads). */
    extra?: Partial<GatewayDeps>;
  } = {},
): Promise<TestGateway> {
  const fake = options.fake ?? new FakeIdentity();
  const deps: GatewayDeps = {
    config: { GRPC_DEADLINE_MS: 1000, TRUST_PROXY: ['loopback'], HOST: '127.0.0.1', PORT: 0 },
    // Methods the fake does not have are never reached by these tests (a call would throw a TypeError).
    // No policy service unless given: the policy routes are covered end to end.
    clients: { identity: fake as unknown as IdentityPort, policy: (options.policy ?? {}) as never, audit: {} as never },
    logger: createLogger('test', 'silent'),
    metrics: new Metrics('test'),
    ready: options.ready ?? (async () => true),
    rateLimit: options.rateLimit ?? { limiter: new RateLimiter({ store: new MemoryRateLimitStore() }), policy: DEFAULT_LIMITS },
    ...options.extra,
  };
  const app = createApp(deps);
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    fake,
    deps,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}

export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test assertions walk arbitrary JSON
  body: any;
}

export interface CallInit {
  /** A value to send as JSON (application/json), unless `raw` is given. */
  json?: unknown;
  /** A raw body, sent as is with the given headers. */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  /** Send `Authorization: Bearer <VALID_KEY>` (default true). */
  auth?: boolean;
}

export async function call(gw: TestGateway, method: string, path: string, init: CallInit = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (init.auth !== false) headers.authorization = `Bearer ${VALID_KEY}`;
  let body: string | Uint8Array<ArrayBuffer> | undefined;
  if (init.raw !== undefined) body = typeof init.raw === 'string' ? init.raw : new Uint8Array(init.raw);
  else if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers['content-type'] = 'application/json';
  }
  Object.assign(headers, init.headers);
  const res = await fetch(`${gw.url}${path}`, { method, headers, body });
  const text = await res.text();
  let parsed: unknown = undefined;
  if (text && (res.headers.get('content-type') ?? '').startsWith('application/json')) parsed = JSON.parse(text);
  return { status: res.status, headers: res.headers, text, body: parsed };
}

export const REQUEST_ID = /^req_[0-9a-z]{26}$/;

/** Asserts the one error shape: status, code, a message, meta.requestId (req_...) echoed as X-Request-Id. */
export function expectError(reply: Reply, status: number, code: string): void {
  expect({ status: reply.status, code: reply.body?.error?.code }).toEqual({ status, code });
  expect(reply.headers.get('content-type')).toMatch(/^application\/json/);
  expect(Object.keys(reply.body).sort()).toEqual(['error', 'meta']);
  expect(typeof reply.body.error.message).toBe('string');
  expect(reply.body.error.message.length).toBeGreaterThan(0);
  expect(reply.body.meta.requestId).toMatch(/^req_/);
  expect(reply.headers.get('x-request-id')).toBe(reply.body.meta.requestId);
}

/** The details of an invalid_request reply, sorted by field. */
export function detailsOf(reply: Reply): { field: string; message: string }[] {
  expectError(reply, 400, 'invalid_request');
  const details = reply.body.error.details as { field: string; message: string }[];
  return [...details].sort((a, b) => a.field.localeCompare(b.field));
}
