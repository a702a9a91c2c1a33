import { call, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.close();
});

describe('health endpoints', () => {
  it('GET /healthz answers 200 {status: ok} without an API key', async () => {
    const res = await call(gw, 'GET', '/healthz', { auth: false });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok' });
    expect(gw.fake.calls).toHaveLength(0);
  });

  it('GET /readyz answers 200 when ready() resolves true', async () => {
    const res = await call(gw, 'GET', '/readyz', { auth: false });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ready' });
  });

  it('GET /readyz answers 503 when ready() resolves false', async () => {
    const notReady = await startGateway({ ready: async () => false });
    try {
      const res = await call(notReady, 'GET', '/readyz', { auth: false });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'not ready' });
    } finally {
      await notReady.close();
    }
  });

  it('GET /readyz names the services that do not answer', async () => {
    const partial = await startGateway({ ready: async () => ({ identity: true, policy: false, audit: true }) });
    try {
      const res = await call(partial, 'GET', '/readyz', { auth: false });
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ status: 'not ready', checks: { identity: true, policy: false, audit: true }, missing: ['policy'] });
    } finally {
      await partial.close();
    }
  });

  it('GET /readyz answers 500 internal_error when ready() rejects', async () => {
    const broken = await startGateway({ ready: async () => Promise.reject(new Error('redis exploded')) });
    try {
      const res = await call(broken, 'GET', '/readyz', { auth: false });
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe('internal_error');
      expect(res.text).not.toContain('redis exploded');
    } finally {
      await broken.close();
    }
  });
});
