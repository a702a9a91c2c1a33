import { startAdminServer, type AdminServer, type Readiness } from '../src/admin';
import { Metrics } from '../src/metrics';

let admin: AdminServer;
let base: string;
let ready: () => Promise<Readiness>;
const metrics = new Metrics('admin-test');

beforeAll(async () => {
  admin = await startAdminServer({ host: '127.0.0.1', port: 0, metrics, ready: () => ready() });
  base = `http://127.0.0.1:${admin.port}`;
});

afterAll(async () => {
  await admin?.close();
});

describe('admin server', () => {
  it('listens on the port the OS gave', () => {
    expect(admin.port).toBeGreaterThan(0);
  });

  it('answers /healthz with 200', async () => {
    const res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('ignores a query string', async () => {
    expect((await fetch(`${base}/healthz?probe=1`)).status).toBe(200);
  });

  it('answers /readyz with 200 when ready', async () => {
    ready = async () => true;
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ready' });
  });

  it('answers /readyz with 503 when not ready', async () => {
    ready = async () => false;
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ status: 'not ready' });
  });

  it('names the dependencies that are missing', async () => {
    ready = async () => ({ postgres: true, clickhouse: false });
    const down = await fetch(`${base}/readyz`);
    expect(down.status).toBe(503);
    expect(await down.json()).toEqual({ status: 'not ready', checks: { postgres: true, clickhouse: false }, missing: ['clickhouse'] });
    ready = async () => ({ postgres: true, clickhouse: true });
    const up = await fetch(`${base}/readyz`);
    expect([up.status, await up.json()]).toEqual([200, { status: 'ready', checks: { postgres: true, clickhouse: true } }]);
  });

  it('follows the ready() function from call to call', async () => {
    let up = false;
    ready = async () => up;
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    up = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    up = false;
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
  });

  it('answers /readyz with 503 when ready() rejects', async () => {
    ready = async () => {
      throw new Error('database down');
    };
    const res = await fetch(`${base}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.text()).not.toContain('database down');
  });

  it('serves Prometheus text on /metrics', async () => {
    metrics.observeHttp('/v1/users', 'GET', 200, 0.012);
    metrics.observeGrpc('/secsvc.identity.v1.IdentityService/GetUser', 'OK', 0.003);
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain('# HELP http_requests_total');
    expect(text).toContain('# TYPE http_requests_total counter');
    expect(text).toMatch(/^http_requests_total\{[^}]*route="\/v1\/users"[^}]*\} 1$/m);
    expect(text).toMatch(/^grpc_server_handled_total\{[^}]*grpc_code="OK"[^}]*\} 1$/m);
    expect(text).toContain('service="admin-test"');
    expect(text).toContain('process_cpu_user_seconds_total');
  });

  it('answers an unknown path with 404', async () => {
    const res = await fetch(`${base}/nope`);
    expect(res.status).toBe(404);
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/healthz/extra`)).status).toBe(404);
  });

  it('answers other methods with 405', async () => {
    expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(405);
  });
});

describe('startAdminServer', () => {
  it('rejects when the port is taken', async () => {
    await expect(
      startAdminServer({ host: '127.0.0.1', port: admin.port, metrics, ready: async () => true }),
    ).rejects.toThrow(/EADDRINUSE/);
  });

  it('stops listening after close()', async () => {
    const other = await startAdminServer({ host: '127.0.0.1', port: 0, metrics: new Metrics('x'), ready: async () => true });
    const url = `http://127.0.0.1:${other.port}/healthz`;
    expect((await fetch(url)).status).toBe(200);
    await other.close();
    await expect(fetch(url)).rejects.toThrow();
  });
});
