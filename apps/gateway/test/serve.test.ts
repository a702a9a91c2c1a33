/** The steps that serve a /v1 route (routes/serve.ts), each on its own, without HTTP. */
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppError } from '@secsvc/shared';
import type { Principal } from '../src/context';
import type { Route } from '../src/routes/route';
import { authorizePolicy, authorizeScope, checkKeyType, requireCredential, respond, validate } from '../src/routes/serve';

const apiKey = (keyType: Principal['keyType'] = 'secret'): Principal => ({ type: 'api_key', id: 'key_1', credentialId: 'key_1', keyType, environment: 'live', plan: 'pro' });
const user: Principal = { type: 'user', id: 'user_1', email: 'a@example.com', credentialId: 'ses_1', keyType: 'session', environment: 'live', plan: 'pro', roles: ['admin'] };
const oauthUser = (scopes: string[]): Principal => ({ ...user, keyType: 'jwt', scopes, clientId: 'cli_1' });
const anonymous: Principal = { type: 'anonymous', id: '', credentialId: '', keyType: 'none', environment: 'live', plan: 'free' };

const request = (over: Partial<Request> = {}) => ({ path: '/users/user_2', ip: '10.0.0.1', requestId: 'req_1', get: () => undefined, ...over }) as unknown as Request;
function response() {
  const res = { headers: {} as Record<string, string>, status: jest.fn(), json: jest.fn(), end: jest.fn(), setHeader: (k: string, v: string) => void (res.headers[k] = v) };
  res.status.mockReturnValue(res);
  return res;
}
/** The AppError a step throws (or undefined). */
async function thrown(step: () => unknown): Promise<AppError | undefined> {
  try {
    await step();
    return undefined;
  } catch (err) {
    return err as AppError;
  }
}

describe('authorizeScope', () => {
  it('lets credentials without scopes through and OAuth tokens carrying the route scope', async () => {
    expect(await thrown(() => authorizeScope({}, apiKey(), response() as unknown as Response))).toBeUndefined();
    expect(await thrown(() => authorizeScope({ scope: 'read:users' }, oauthUser(['openid', 'read:users']), response() as unknown as Response))).toBeUndefined();
  });

  it('refuses an OAuth token without the scope (naming it) or on a route no scope opens', async () => {
    const res = response();
    const missing = await thrown(() => authorizeScope({ scope: 'write:users' }, oauthUser(['read:users']), res as unknown as Response));
    expect(missing).toMatchObject({ code: 'forbidden', details: [{ field: 'scope', message: 'write:users is required' }] });
    expect(res.headers['WWW-Authenticate']).toBe('Bearer realm="secsvc", error="insufficient_scope", scope="write:users"');
    const closed = await thrown(() => authorizeScope({}, oauthUser(['read:users']), response() as unknown as Response));
    expect(closed).toMatchObject({ code: 'forbidden', message: 'Insufficient scope: OAuth access tokens cannot call this endpoint' });
  });
});

describe('requireCredential', () => {
  it('lets anonymous callers reach only the open routes', async () => {
    expect(await thrown(() => requireCredential({}, anonymous))).toMatchObject({ code: 'unauthorized' });
    expect(await thrown(() => requireCredential({ anonymous: true }, anonymous))).toBeUndefined();
    expect(await thrown(() => requireCredential({}, apiKey()))).toBeUndefined();
  });
});

describe('authorizePolicy', () => {
  const policy = (allowed: boolean) => ({ authorize: jest.fn(async (_input: { action: string; resource: string }, _call: unknown) => ({ allowed })) });

  it('asks the policies for users, with the action of the method or the route', async () => {
    const p = policy(true);
    await authorizePolicy({ method: 'delete' }, request(), user, p as never, 1000);
    await authorizePolicy({ method: 'post', action: 'simulate' }, request({ path: '/policies/simulate' }), user, p as never, 1000);
    expect(p.authorize.mock.calls.map(([input]) => [input.action, input.resource])).toEqual([
      ['delete', '/users/user_2'],
      ['simulate', '/policies/simulate'],
    ]);
  });

  it('refuses what the policies deny; never asks for API keys or a user acting on its own credential', async () => {
    expect(await thrown(() => authorizePolicy({ method: 'get' }, request(), user, policy(false) as never, 1000))).toMatchObject({ code: 'forbidden', message: 'Denied by policy' });
    const p = policy(false);
    await authorizePolicy({ method: 'get' }, request(), apiKey(), p as never, 1000);
    await authorizePolicy({ method: 'post', ownCredential: () => true }, request(), user, p as never, 1000);
    expect(p.authorize).not.toHaveBeenCalled();
  });
});

describe('checkKeyType', () => {
  it('allows secret and test keys by default, public keys where the route names them', async () => {
    const route: Pick<Route, 'method' | 'path' | 'keyTypes'> = { method: 'get', path: '/users' };
    expect(await thrown(() => checkKeyType(route, apiKey('test')))).toBeUndefined();
    expect(await thrown(() => checkKeyType(route, apiKey('public')))).toMatchObject({ code: 'forbidden', message: 'A public key cannot call GET /users' });
    expect(await thrown(() => checkKeyType({ ...route, keyTypes: ['public'] }, apiKey('public')))).toBeUndefined();
    expect(await thrown(() => checkKeyType(route, user))).toBeUndefined();
  });
});

describe('validate', () => {
  const route = { params: z.object({ id: z.string().startsWith('user_') }), body: z.object({ name: z.string() }) };

  it('names the faults of path and body in one error', async () => {
    const err = await thrown(() => validate(route, { params: { id: 'x' }, query: {}, body: undefined } as never));
    expect(err).toMatchObject({ code: 'invalid_request' });
    expect(err!.details.map((d) => d.field)).toEqual(['id', 'name']);
  });

  it('returns the parsed input', () => {
    expect(validate(route, { params: { id: 'user_1' }, query: {}, body: { name: 'n' } } as never)).toEqual({ params: { id: 'user_1' }, query: {}, body: { name: 'n' } });
  });
});

describe('respond', () => {
  it('answers JSON, or no body at all', () => {
    const withBody = response();
    respond(withBody as unknown as Response, { status: 201, body: { data: 1 } });
    expect([withBody.status.mock.calls, withBody.json.mock.calls]).toEqual([[[201]], [[{ data: 1 }]]]);
    const empty = response();
    respond(empty as unknown as Response, { status: 204 });
    expect([empty.status.mock.calls, empty.end.mock.calls.length, empty.json.mock.calls.length]).toEqual([[[204]], 1, 0]);
  });
});
