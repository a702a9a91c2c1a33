import { call, startGateway, type TestGateway } from './support/gateway';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw.close();
});

/** The http_requests_total sample lines of the registry. */
async function requestSamples(): Promise<string[]> {
  const text = await gw.deps.metrics.registry.metrics();
  return text.split('\n').filter((l) => l.startsWith('http_requests_total{'));
}

describe('request metrics', () => {
  it('labels requests by route template, not by the concrete id', async () => {
    const created = await call(gw, 'POST', '/v1/users', { json: { email: 'ada@example.com', name: 'Ada' } });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    expect((await call(gw, 'GET', `/v1/users/${id}`)).status).toBe(200);
    expect((await call(gw, 'PATCH', `/v1/users/${id}`, { json: { name: 'Ada B.' } })).status).toBe(200);

    const samples = await requestSamples();
    expect(samples).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users\/:id")(?=[^}]*method="GET")(?=[^}]*status="200")[^}]*\} 1$/),
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users\/:id")(?=[^}]*method="PATCH")[^}]*\} 1$/),
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users")(?=[^}]*method="POST")(?=[^}]*status="201")[^}]*\} 1$/),
      ]),
    );
    expect(samples.join('\n')).not.toContain(id);
  });

  it('labels an error answered by a route handler with the same /v1 route template', async () => {
    expect((await call(gw, 'GET', '/v1/users/user_nope')).status).toBe(404);
    const samples = await requestSamples();
    expect(samples).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^http_requests_total\{(?=[^}]*route="\/v1\/users\/:id")(?=[^}]*method="GET")(?=[^}]*status="404")[^}]*\}/),
      ]),
    );
  });

  it('labels unmatched paths as "unmatched", never with the raw path', async () => {
    expect((await call(gw, 'GET', '/no/such/path/abc123', { auth: false })).status).toBe(404);
    const samples = await requestSamples();
    expect(samples).toEqual(expect.arrayContaining([expect.stringMatching(/route="unmatched"(?=[^}]*status="404")/)]));
    expect(samples.join('\n')).not.toContain('abc123');
  });
});
