import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Metrics } from './metrics';

/** Resolves false when `p` takes longer than `ms` (a hung dependency makes a probe fail, not hang). */
export function withTimeout(p: Promise<boolean>, ms: number): Promise<boolean> {
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

/**
 * The admin HTTP surface of a process: /healthz (alive), /readyz (dependencies reachable), /metrics
 * (Prometheus). Kept off the public port so metrics are never exposed to API callers.
 */
export async function startAdminServer(opts: {
  host: string;
  port: number;
  metrics: Metrics;
  ready: () => Promise<boolean>;
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
        (ok) => send(ok ? 200 : 503, JSON.stringify({ status: ok ? 'ready' : 'not ready' })),
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
