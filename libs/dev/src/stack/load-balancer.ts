import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoadBalancer {
  /** http://<host>:<port> */
  origin: string;
  port: number;
  close: () => Promise<void>;
}

/**
 * A small HTTP load balancer for the multi-replica run on one machine (what an ingress does in Kubernetes):
 * round robin over the upstreams, keep-alive connections to them, `X-Forwarded-For` / `-Proto` / `-Host`
 * added (the gateways trust loopback proxies). Like an ingress it keeps failed requests away from a gateway that
 * stops: an upstream that refuses the connection is skipped for the request (tried on the next one); one that
 * answers `Connection: close` (a draining gateway) or refuses gets no new requests for a few seconds while
 * another can take them. A request whose connection was reset is never sent again: a gateway killed mid-request
 * may have done it (a DELETE resent would answer 404).
 */
export async function startLoadBalancer(opts: { host: string; port: number; upstreams: string[] }): Promise<LoadBalancer> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const upstreams = opts.upstreams.map((u) => new URL(u));
  /** Until when an upstream is avoided (it said it is draining, or refused). */
  const avoidUntil = upstreams.map(() => 0);
  const AVOID_MS = 3_000;
  let next = 0;
  const pick = (): number => {
    const now = Date.now();
    for (let i = 0; i < upstreams.length; i++) {
      const k = next++ % upstreams.length;
      if (avoidUntil[k]! <= now) return k;
    }
    return next++ % upstreams.length;
  };

  const forward = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer, attempt: number): void => {
    const k = pick();
    const target = upstreams[k]!;
    const headers = { ...req.headers };
    const prior = req.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = [prior, req.socket.remoteAddress].filter(Boolean).join(', ');
    headers['x-forwarded-proto'] = 'http';
    headers['x-forwarded-host'] = req.headers.host ?? '';
    const upstream = http.request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent },
      (up) => {
        if (up.headers.connection === 'close') avoidUntil[k] = Date.now() + AVOID_MS;
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ECONNREFUSED') avoidUntil[k] = Date.now() + AVOID_MS;
      // Nothing reached the upstream (refused): try the next one.
      if (err.code === 'ECONNREFUSED' && attempt + 1 < upstreams.length && !res.headersSent) return forward(req, res, body, attempt + 1);
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'unavailable', message: 'No gateway answered' } }));
      } else res.destroy();
    });
    upstream.end(body);
  };

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => forward(req, res, Buffer.concat(chunks), 0));
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    origin: `http://${opts.host}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
        agent.destroy();
      }),
  };
}
