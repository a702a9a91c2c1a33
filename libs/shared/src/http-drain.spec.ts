import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { drainHttpServer } from './http-drain';

/** A server whose answers take `ms`, with a long keep-alive (as the gateway's 65 s). */
async function slowServer(ms: number) {
  const server = http.createServer((_req, res) => setTimeout(() => res.end('done'), ms));
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

function get(port: number, agent: http.Agent): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('drainHttpServer', () => {
  it('lets a kept-alive request in flight finish, then closes its connection at once (not after the keep-alive timeout), and refuses new ones', async () => {
    const { server, port } = await slowServer(300);
    const agent = new http.Agent({ keepAlive: true });
    try {
      // A first request makes the connection kept-alive; the second is in flight when draining starts.
      expect(await get(port, agent)).toEqual({ status: 200, body: 'done' });
      const inFlight = get(port, agent);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const started = Date.now();
      const drained = drainHttpServer(server);
      expect(await inFlight).toEqual({ status: 200, body: 'done' });
      await drained;
      expect(Date.now() - started).toBeLessThan(2_000);
      await expect(get(port, new http.Agent())).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    } finally {
      agent.destroy();
    }
  });

  it('cuts what is still open after its limit', async () => {
    const { server, port } = await slowServer(10_000);
    const agent = new http.Agent({ keepAlive: true });
    const stuck = get(port, agent).catch((err: NodeJS.ErrnoException) => err.code);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = Date.now();
    await drainHttpServer(server, 300);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await stuck).toBe('ECONNRESET');
    agent.destroy();
  });
});
