import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { drainHttpServer } from './http-drain';
import type { Metrics } from './metrics';

/** Resolves false when `p` takes longer than `ms` (a hung dependency makes a probe fail, not hang). */
export function withTimeout<T extends boolean | Record<string, boolean>>(p: Promise<T>, ms: number): Promise<T | false> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve(false), ms);
    p.then(
      (v) => (clearTimeout(timer), resolve(v)),
      (e: unknown) => (clearTimeout(timer), reject(e)),
    );
  });
}

export interface AdminServer {
  port: number;
  close: () => Promise<void>;
}

/** Readiness: one verdict, or one per dependency (then /readyz names the ones missing). */
export type Readiness = boolean | Record<string, boolean>;

/** The /readyz answer: 200 when every dependency is reachable, else 503 naming those that are not. */
export function readinessAnswer(r: Readiness): { status: 200 | 503; body: { status: 'ready' | 'not ready'; checks?: Record<string, boolean>; missing?: string[] } } {
  if (typeof r === 'boolean') return { status: r ? 200 : 503, body: { status: r ? 'ready' : 'not ready' } };
  const missing = Object.keys(r).filter((k) => !r[k]);
  return missing.length ? { status: 503, body: { status: 'not ready', checks: r, missing } } : { status: 200, body: { status: 'ready', checks: r } };
}

/**
 * The admin HTTP surface of a process: /healthz (alive), /readyz (dependencies reachable), /metrics
 * (Prometheus). Kept off the public port so metrics are never exposed to API callers.
 */
export async function startAdminServer(opts: {
  host: string;
  port: number;
  metrics: Pick<Metrics, 'registry'>;
  ready: () => Promise<Readiness>;
}): Promise<AdminServer> {
  const server = http.createServer((req, res) => {
    const send = (status: number, body: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    const route = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET') return send(405, JSON.stringify({ status: 'method not allowed' }));
    if (route === '/healthz') return send(200, JSON.stringify({ status: 'ok' }));
    if (route === '/readyz') {
      void withTimeout(opts.ready(), 2_000).then(
        (r) => {
          const answer = readinessAnswer(r);
          send(answer.status, JSON.stringify(answer.body));
        },
        () => send(503, JSON.stringify({ status: 'not ready' })),
      );
      return;
    }
    if (route === '/metrics') {
      void opts.metrics.registry.metrics().then(
        (text) => send(200, text, opts.metrics.registry.contentType),
        () => send(500, JSON.stringify({ status: 'metrics unavailable' })),
      );
      return;
    }
    send(404, JSON.stringify({ status: 'not found' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => drainHttpServer(server, 2_000),
  };
}
