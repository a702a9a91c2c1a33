import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { startLocalStack, type LocalStackOptions } from '@secsvc/dev/stack';
import { findTool } from '@secsvc/dev/testing';

const reflectionProto = path.join(
  path.dirname(require.resolve('@grpc/reflection/package.json')),
  'build/proto/grpc/reflection/v1/reflection.proto',
);

/** Lists a server's services through gRPC server reflection (what `grpcurl list` does). */
export function listServices(address: string): Promise<string[]> {
  const def = protoLoader.loadSync(reflectionProto, { keepCase: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } };
  };
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const stream = client.ServerReflectionInfo({ deadline: new Date(Date.now() + 5000) });
    stream.on('data', (msg: { list_services_response?: { service: { name: string }[] }; error_response?: { error_message: string } }) => {
      stream.end();
      client.close();
      if (msg.error_response) reject(new Error(msg.error_response.error_message));
      else resolve((msg.list_services_response?.service ?? []).map((s) => s.name));
    });
    stream.on('error', (err: Error) => {
      client.close();
      reject(err);
    });
    stream.write({ list_services: '' });
  });
}

export interface Api {
  (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{
    status: number;
    headers: Headers;
    body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON of varying shapes, asserted field by field
  }>;
}

/** A tiny JSON client for the gateway, sending the API key on every call. */
export function apiClient(baseUrl: string, key: string): Api {
  return async (method, path, body, headers = {}) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...headers,
      },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
}

/**
 * The grpcurl binary for the reflection tests: $GRPCURL, else the one scripts/install-tools.sh installs, else
 * on PATH. Missing under CI=true is an error; elsewhere the caller skips and says so.
 */
export function findGrpcurl(): string | undefined {
  return findTool('grpcurl', 'GRPCURL', 'run scripts/install-tools.sh');
}

/**
 * The local stack for one test file: free ports, a fresh temporary data directory (mode 0711, so the
 * postgres user can pass through when tests run as root), `key` as the bootstrap admin key. stop() ends the
 * stack and deletes the directory. `more.port` fixes the gateway's port (a suite that names its public origin in
 * `env`, such as ISSUER=http://localhost:<port> for WebAuthn, picks it first with freePort).
 */
export async function startTestStack(name: string, key: string, env: Record<string, string> = {}, more: Pick<LocalStackOptions, 'onRestart' | 'restartPolicy' | 'onOutput'> & { port?: number } = {}) {
  const tmp = await mkdtemp(path.join(os.tmpdir(), `secsvc-e2e-${name}-`));
  await chmod(tmp, 0o711);
  const stack = await startLocalStack({
    rootDir: path.resolve(__dirname, '../../..'),
    dataDir: path.join(tmp, 'data'),
    host: '127.0.0.1',
    port: 0,
    ports: { postgres: 0, identity: 0, policy: 0, audit: 0, admin: { gateway: 0, identity: 0, policy: 0, audit: 0, 'export-worker': 0 } },
    env: { LOG_LEVEL: 'warn', BOOTSTRAP_API_KEY: key, ...env },
    ...more,
  }).catch(async (err: unknown) => {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  });
  return {
    stack,
    dataDir: path.join(tmp, 'data'),
    api: apiClient(stack.baseUrl, key),
    stop: async () => {
      await stack.stop();
      await rm(tmp, { recursive: true, force: true });
    },
  };
}

/** Polls `fn` (every 200 ms) until `ok` holds for its value, and returns that value; fails after `ms`. */
export async function eventually<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`condition not met in time (last: ${JSON.stringify(v)?.slice(0, 300)})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A PEM certificate (or the text of an XML `X509Certificate` element) as its bare base64 body. */
export const certificateBody = (pem: string) => pem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s/g, '');

/** The certificates a SAML metadata document publishes (`X509Certificate` elements), as bare base64 bodies. */
export const metadataCertificates = (xml: string) => [...xml.matchAll(/<(?:ds:)?X509Certificate>([^<]+)</g)].map((m) => certificateBody(m[1]!));

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Requests over one HTTP/1.1 connection, written at once (pipelining): the server reads them in one go, so
 * what it does with requests that arrive together (the gateway's batch calls to the services) is exercised
 * for certain. Answers come back in order; every one must carry a Content-Length.
 */
export function pipelined(origin: string, requests: { method?: string; path: string; headers: Record<string, string>; body?: string }[]): Promise<RawResponse[]> {
  const { hostname, port } = new URL(origin);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let buffer = Buffer.alloc(0);
    const responses: RawResponse[] = [];
    socket.on('error', reject);
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf('\r\n\r\n');
        if (end < 0) return;
        const [statusLine, ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        const length = Number(headers['content-length'] ?? NaN);
        if (!Number.isInteger(length)) return reject(new Error(`an answer without Content-Length: ${statusLine}`));
        if (buffer.length < end + 4 + length) return;
        responses.push({ status: Number(statusLine!.split(' ')[1]), headers, body: buffer.subarray(end + 4, end + 4 + length).toString('utf8') });
        buffer = buffer.subarray(end + 4 + length);
        if (responses.length === requests.length) {
          socket.end();
          return resolve(responses);
        }
      }
    });
    socket.write(
      requests
        .map((r) => {
          const body = r.body ?? '';
          const head = Object.entries({ host: `${hostname}:${port}`, 'content-length': String(Buffer.byteLength(body)), ...r.headers }).map(([k, v]) => `${k}: ${v}\r\n`);
          return `${r.method ?? 'POST'} ${r.path} HTTP/1.1\r\n${head.join('')}\r\n${body}`;
        })
        .join(''),
    );
  });
}

/**
 * The auth events the services have emitted, published or not, as an SQL table expression (local profile): the
 * rows still in a service's outbox (`schema`), and those its relay has published, which the Postgres bus took
 * out of the outbox and keeps in its records. Columns: `event_type`, `payload` (jsonb) and `ord` (emission
 * order: published ones first, in bus order, then the outbox's). Published events are those of every service.
 */
export function emittedEvents(schema: 'identity' | 'policy'): string {
  return `(SELECT value::jsonb->>'type' AS event_type, value::jsonb AS payload, seq AS ord FROM bus.bus_records WHERE topic = 'auth-events'
           UNION ALL SELECT event_type, payload, (1::bigint << 62) + seq FROM ${schema}.outbox WHERE published_at IS NULL) AS events`;
}
