/** The steps that serve a /v1 route (routes/serve.ts), each on its own, without HTTP. */
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppError } from '@secsvc/shared';
import type { Principal } from '../src/context';
import type { Route } from '../src/routes/route';
import { authorizePolicy, authorizeScope, checkKeyType, requireCredential, respond, validate } from '../src/routes/serve';
import { updateUserRoute } from '../src/routes/users/update-user';

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
  type AuthorizeInput = { action: string; resource: string; mfa: boolean; mfaAgeSeconds: number };
  const policy = (allowed: boolean, stepUp: { mfaRequired?: boolean; mfaMaxAgeSeconds?: number } = {}) => ({
    authorize: jest.fn(async (_input: AuthorizeInput, _call: unknown) => ({ allowed, mfaRequired: false, mfaMaxAgeSeconds: 0, ...stepUp })),
  });
  /** 2023-11-14T22:13:20Z, in milliseconds: the clock of these tests. */
  const NOW = 1_700_000_000_000;
  const clock = () => NOW;

  it('asks the policies for users, with the action of the method or the route', async () => {
    const p = policy(true);
    await authorizePolicy({ method: 'delete' }, request(), user, p as never, 1000, response());
    await authorizePolicy({ method: 'post', action: 'simulate' }, request({ path: '/policies/simulate' }), user, p as never, 1000, response());
    expect(p.authorize.mock.calls.map(([input]) => [input.action, input.resource])).toEqual([
      ['delete', '/users/user_2'],
      ['simulate', '/policies/simulate'],
    ]);
  });

  it('asks a further decision for part of a call (assigning roles needs assign_roles on the roles, not update)', async () => {
    const answers = [true, false];
    const p = { authorize: jest.fn(async (_input: AuthorizeInput) => ({ allowed: answers.shift()!, mfaRequired: false, mfaMaxAgeSeconds: 0 })) };
    const withRoles = request({ body: { name: 'x', roles: ['role_admin'] } });
    expect(await thrown(() => authorizePolicy(updateUserRoute, withRoles, user, p as never, 1000, response()))).toMatchObject({ code: 'forbidden' });
    expect(p.authorize.mock.calls.map(([input]) => [input.action, input.resource])).toEqual([
      ['update', '/users/user_2'],
      ['assign_roles', '/users/user_2/roles'],
    ]);
    // Without roles in the body: one decision, as for any update.
    const q = policy(true);
    await authorizePolicy(updateUserRoute, request({ body: { name: 'x' } }), user, q as never, 1000, response());
    expect(q.authorize.mock.calls.map(([input]) => input.action)).toEqual(['update']);
  });

  it('refuses what the policies deny; never asks for API keys or a user acting on its own credential', async () => {
    expect(await thrown(() => authorizePolicy({ method: 'get' }, request(), user, policy(false) as never, 1000, response()))).toMatchObject({
      code: 'forbidden',
      message: 'Denied by policy',
    });
    const p = policy(false);
    await authorizePolicy({ method: 'get' }, request(), apiKey(), p as never, 1000, response());
    await authorizePolicy({ method: 'post', ownCredential: () => true }, request(), user, p as never, 1000, response());
    expect(p.authorize).not.toHaveBeenCalled();
  });

  it('says whether the credential carries a completed MFA and its age in seconds (never negative)', async () => {
    const p = policy(true);
    const at = (mfaAt: number | undefined): Principal => ({ ...user, ...(mfaAt === undefined ? {} : { mfaAt }) });
    await authorizePolicy({ method: 'get' }, request(), at(undefined), p as never, 1000, response(), clock);
    await authorizePolicy({ method: 'get' }, request(), at(NOW / 1000 - 125), p as never, 1000, response(), clock);
    await authorizePolicy({ method: 'get' }, request(), at(NOW / 1000), p as never, 1000, response(), clock);
    // a clock behind the identity service's
    await authorizePolicy({ method: 'get' }, request(), at(NOW / 1000 + 30), p as never, 1000, response(), clock);
    expect(p.authorize.mock.calls.map(([input]) => [input.mfa, input.mfaAgeSeconds])).toEqual([
      [false, 0],
      [true, 125],
      [true, 0],
      [true, 0],
    ]);
  });

  it('answers mfa_required (403) when an MFA would allow it: a session gets no challenge header', async () => {
    const res = response();
    const err = await thrown(() => authorizePolicy({ method: 'get' }, request(), user, policy(false, { mfaRequired: true }) as never, 1000, res));
    expect(err).toMatchObject({
      code: 'mfa_required',
      httpStatus: 403,
      message: 'Multi-factor authentication required: step up with POST /v1/auth/step-up',
      details: [{ field: 'mfa', message: 'a multi-factor authentication is required' }],
    });
    expect(res.headers).toEqual({});
    const recent = await thrown(() => authorizePolicy({ method: 'get' }, request(), { ...user, mfaAt: NOW / 1000 - 900 }, policy(false, { mfaRequired: true, mfaMaxAgeSeconds: 300 }) as never, 1000, res, clock));
    expect(recent).toMatchObject({
      code: 'mfa_required',
      message: 'Multi-factor authentication required (completed within the last 300 seconds): step up with POST /v1/auth/step-up',
      details: [{ field: 'mfa', message: 'a multi-factor authentication within the last 300 seconds is required' }],
    });
    expect(res.headers).toEqual({});
  });

  it('gives an OAuth access token (jwt) the RFC 9470 challenge, with max_age when there is one', async () => {
    const jwtUser: Principal = { ...user, keyType: 'jwt', scopes: ['read:users'], clientId: 'cli_1' };
    const res = response();
    const err = await thrown(() => authorizePolicy({ method: 'get' }, request(), jwtUser, policy(false, { mfaRequired: true }) as never, 1000, res));
    expect(err).toMatchObject({
      code: 'mfa_required',
      message: 'Multi-factor authentication required: step up with POST /v1/auth/step-up',
      details: [{ field: 'mfa', message: 'a multi-factor authentication is required: request a new access token with acr_values=urn:secsvc:acr:mfa' }],
    });
    expect(res.headers['WWW-Authenticate']).toBe(
      'Bearer error="insufficient_user_authentication", error_description="A multi-factor authentication is required", acr_values="urn:secsvc:acr:mfa"',
    );
    const withMax = response();
    const recent = await thrown(() => authorizePolicy({ method: 'get' }, request(), jwtUser, policy(false, { mfaRequired: true, mfaMaxAgeSeconds: 60 }) as never, 1000, withMax));
    expect(recent!.details).toEqual([
      { field: 'mfa', message: 'a multi-factor authentication within the last 60 seconds is required: request a new access token with acr_values=urn:secsvc:acr:mfa and max_age=60' },
    ]);
    expect(withMax.headers['WWW-Authenticate']).toBe(
      'Bearer error="insufficient_user_authentication", error_description="A multi-factor authentication within the last 60 seconds is required", acr_values="urn:secsvc:acr:mfa", max_age=60',
    );
    // a plain denial of a JWT caller: forbidden, no challenge
    const denied = response();
    expect(await thrown(() => authorizePolicy({ method: 'get' }, request(), jwtUser, policy(false) as never, 1000, denied))).toMatchObject({ code: 'forbidden' });
    expect(denied.headers).toEqual({});
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
