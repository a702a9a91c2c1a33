import { authorizedFetch } from './client';

describe('authorizedFetch', () => {
  it('sends the access token, and on a 401 refreshes once and retries with the new token and the same body', async () => {
    let token = 'at1';
    const tokens = { accessToken: jest.fn(async () => token), refresh: jest.fn(async () => void (token = 'at2')) };
    const seen: { auth: string | null; body: string }[] = [];
    const send = async (r: Request) => {
      seen.push({ auth: r.headers.get('authorization'), body: await r.text() });
      return new Response(null, { status: seen.length === 1 ? 401 : 200 });
    };
    const f = authorizedFetch(tokens, send);
    const res = await f(new Request('https://auth.example.com/v1/users', { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' } }));
    expect(res.status).toBe(200);
    expect(seen).toEqual([
      { auth: 'Bearer at1', body: '{"a":1}' },
      { auth: 'Bearer at2', body: '{"a":1}' },
    ]);
    expect(tokens.refresh).toHaveBeenCalledTimes(1);
  });

  it('does not retry other failures', async () => {
    const tokens = { accessToken: async () => 'at', refresh: jest.fn(async () => undefined) };
    const f = authorizedFetch(tokens, async () => new Response(null, { status: 403 }));
    expect((await f(new Request('https://auth.example.com/v1/users'))).status).toBe(403);
    expect(tokens.refresh).not.toHaveBeenCalled();
  });
});
