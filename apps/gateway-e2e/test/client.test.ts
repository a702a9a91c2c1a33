/**
 * The generated typed client (@secsvc/client) against the local stack: one full flow (users, sessions,
 * policies, audit logs and typed error bodies), every call through the client alone, so a document that
 * no longer describes what the gateway answers fails here as well as in the client's drift check.
 */
import { createClient, type Schemas, type SecsvcClient } from '@secsvc/client';
import type { LocalStack } from '@secsvc/dev/stack';
import { eventually, startTestStack } from './support';

jest.setTimeout(180_000);

const KEY = 'svc_sk_' + 'clientTests_'.repeat(4);
let stack: LocalStack;
let stop: (() => Promise<void>) | undefined;
let client: SecsvcClient;

beforeAll(async () => {
  ({ stack, stop } = await startTestStack('client', KEY));
  // The document's paths carry /v1; the client's base is the origin (stack.baseUrl ends in /v1).
  client = createClient({ baseUrl: new URL(stack.baseUrl).origin, token: KEY });
});

afterAll(async () => {
  await stop?.();
});

const REQUEST_ID = /^req_[0-9a-z]{26}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Every user, following the cursors `limit` at a time; also counts the pages. */
async function allUsers(limit: number): Promise<{ users: Schemas['UserListItem'][]; pages: number }> {
  const users: Schemas['UserListItem'][] = [];
  let cursor: string | undefined;
  let pages = 0;
  for (;;) {
    const { data, error, response } = await client.GET('/v1/users', { params: { query: { limit, ...(cursor ? { cursor } : {}) } } });
    if (error) throw new Error(`GET /v1/users: ${response.status} ${JSON.stringify(error)}`);
    expect(response.status).toBe(200);
    expect(data.data.length).toBeLessThanOrEqual(limit);
    users.push(...data.data);
    pages++;
    if (!data.pagination.hasMore) return { users, pages };
    expect(data.pagination.nextCursor).toMatch(/^cur_/);
    cursor = data.pagination.nextCursor;
  }
}

/** Every audit entry of the given events (comma-separated), following the cursors. */
async function allLogs(events?: string): Promise<Schemas['LogListItem'][]> {
  const out: Schemas['LogListItem'][] = [];
  let cursor: string | undefined;
  for (;;) {
    const { data, error, response } = await client.GET('/v1/logs', { params: { query: { ...(events && { events }), limit: 100, ...(cursor ? { cursor } : {}) } } });
    if (error) throw new Error(`GET /v1/logs: ${response.status} ${JSON.stringify(error)}`);
    out.push(...data.data);
    if (!data.pagination.hasMore) return out;
    cursor = data.pagination.nextCursor;
  }
}

describe('the typed client, one full flow', () => {
  it('creates, reads, updates and pages users; opens, verifies and revokes a session; simulates a policy; finds it all in the audit log', async () => {
    // Create a user.
    const created = await client.POST('/v1/users', {
      body: { email: 'typed.client@example.com', name: 'Typed Client', roles: ['role_reader'], metadata: { source: 'client.test' } },
    });
    expect(created.error).toBeUndefined();
    expect(created.response.status).toBe(201);
    expect(created.response.headers.get('x-request-id')).toMatch(REQUEST_ID);
    const user = created.data!.data;
    expect(user).toEqual({
      id: expect.stringMatching(/^user_[0-9a-z]{26}$/),
      email: 'typed.client@example.com',
      name: 'Typed Client',
      emailVerified: false,
      createdAt: expect.stringMatching(ISO),
      roles: ['role_reader'],
    });

    // Read it (the full form adds metadata and updatedAt).
    const read = await client.GET('/v1/users/{id}', { params: { path: { id: user.id } } });
    expect(read.response.status).toBe(200);
    expect(read.data?.data).toEqual({ ...user, metadata: { source: 'client.test' }, updatedAt: user.createdAt });

    // Update its metadata (replaced as a whole) and name.
    const metadata = { plan: { tier: 'gold', seats: 5 }, tags: ['a', null, 3.5], nothing: null };
    const updated = await client.PATCH('/v1/users/{id}', { params: { path: { id: user.id } }, body: { name: 'Typed Client Renamed', metadata } });
    expect(updated.response.status).toBe(200);
    const changed = updated.data!.data;
    expect(changed).toEqual({ id: user.id, email: user.email, name: 'Typed Client Renamed', metadata, updatedAt: expect.stringMatching(ISO) });
    expect(Date.parse(changed.updatedAt)).toBeGreaterThanOrEqual(Date.parse(user.createdAt));
    const reread = await client.GET('/v1/users/{id}', { params: { path: { id: user.id } } });
    expect(reread.data?.data).toMatchObject({ name: 'Typed Client Renamed', metadata, updatedAt: changed.updatedAt });

    // List users with cursor paging: a few more users, two per page, each seen exactly once.
    const others: Schemas['UserCreated'][] = [];
    for (let i = 0; i < 4; i++) {
      const res = await client.POST('/v1/users', { body: { email: `typed.page${i}@example.com`, name: `Page ${i}` } });
      expect(res.response.status).toBe(201);
      others.push(res.data!.data);
    }
    const { users, pages } = await allUsers(2);
    const ids = users.map((u) => u.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining([user.id, ...others.map((o) => o.id)]));
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(users.find((u) => u.id === user.id)).toEqual({ id: user.id, email: user.email, name: 'Typed Client Renamed', createdAt: user.createdAt, roles: ['role_reader'] });

    // Create a session for the user and verify it.
    const opened = await client.POST('/v1/sessions', { body: { userId: user.id, expiresIn: '1h', metadata: { device: 'typed-client' } } });
    expect(opened.response.status).toBe(201);
    const session = opened.data!.data;
    expect(session).toEqual({
      id: expect.stringMatching(/^ses_[0-9a-z]{26}$/),
      userId: user.id,
      createdAt: expect.stringMatching(ISO),
      expiresAt: expect.stringMatching(ISO),
      metadata: { device: 'typed-client' },
      amr: [],
      acr: '',
      mfaAt: null,
      token: expect.any(String),
    });
    const lifetime = Date.parse(session.expiresAt) - Date.parse(session.createdAt);
    expect(Math.abs(lifetime - 3_600_000)).toBeLessThan(2_000);
    const verified = await client.POST('/v1/sessions/verify', { body: { token: session.token } });
    expect(verified.response.status).toBe(200);
    expect(verified.data?.data).toMatchObject({
      valid: true,
      user: { id: user.id, email: user.email, name: 'Typed Client Renamed', metadata },
      session: { id: session.id, expiresAt: session.expiresAt },
    });

    // Revoke it: 204, no body, and the token no longer verifies.
    const revoked = await client.POST('/v1/sessions/revoke', { body: { token: session.token } });
    expect(revoked.response.status).toBe(204);
    expect(revoked.error).toBeUndefined();
    const afterRevoke = await client.POST('/v1/sessions/verify', { body: { token: session.token } });
    expect(afterRevoke.data).toEqual({ data: { valid: false } });

    // The holder logs itself out with its own token as bearer, with no policy at all; naming another session
    // (even one of its own user's) needs a policy.
    const [mine1, mine2] = [(await client.POST('/v1/sessions', { body: { userId: user.id } })).data!.data, (await client.POST('/v1/sessions', { body: { userId: user.id } })).data!.data];
    const asHolder = { headers: { authorization: `Bearer ${mine1.token}` } };
    expect((await client.POST('/v1/sessions/revoke', { body: { token: mine2.token }, ...asHolder })).response.status).toBe(403);
    expect((await client.POST('/v1/sessions/revoke', { body: { token: mine1.token }, ...asHolder })).response.status).toBe(204);
    expect((await client.POST('/v1/sessions/verify', { body: { token: mine1.token } })).data).toEqual({ data: { valid: false } });

    // Create a policy for the user and simulate decisions.
    const policyBody = {
      name: 'typed client reads documents',
      effect: 'allow' as const,
      principals: [`user:${user.id}`],
      actions: ['read'],
      resources: ['/documents/*'],
    };
    const pol = await client.POST('/v1/policies', { body: policyBody });
    expect(pol.response.status).toBe(201);
    const policy = pol.data!.data;
    expect(policy).toEqual({ ...policyBody, id: expect.stringMatching(/^pol_/), createdAt: expect.stringMatching(ISO) });
    const allowed = await client.POST('/v1/policies/simulate', { body: { principal: `user:${user.id}`, action: 'read', resource: '/documents/42' } });
    expect(allowed.response.status).toBe(200);
    expect(allowed.data?.data).toMatchObject({
      allowed: true,
      effect: 'allow',
      matchedPolicies: [{ id: policy.id, name: policyBody.name, effect: 'allow' }],
      decisionId: expect.stringMatching(/^dec_/),
    });
    expect(Number.isInteger(allowed.data?.data.evaluationTimeMs)).toBe(true);
    const denied = await client.POST('/v1/policies/simulate', {
      body: { principal: `user:${user.id}`, action: 'delete', resource: '/documents/42', explain: true },
    });
    expect(denied.data?.data).toMatchObject({ allowed: false, effect: 'deny', matchedPolicies: [] });
    expect(denied.data?.data.explanations).toEqual(
      expect.arrayContaining([expect.objectContaining({ policyId: policy.id, failed: 'action', expected: ['read'], actual: 'delete' })]),
    );

    // The audit log: the user's and the session's events arrive (outbox -> bus -> audit -> ClickHouse).
    // Revoking by token is the holder's logout: user.logout, by the user, of the session.
    const wanted = ['user.created', 'user.updated', 'user.login', 'user.logout'];
    const mine = (es: Schemas['LogListItem'][]) => es.filter((e) => e.target?.id === user.id || e.target?.id === session.id);
    const entries = await eventually(
      async () => mine(await allLogs(wanted.join(','))),
      (es) => wanted.every((w) => es.some((e) => e.event === w)),
    );
    expect(entries.map((e) => e.event).sort()).toEqual([...wanted].sort());
    // The holder's own logout (mine1) is there too, by the user.
    const selfLogout = await eventually(
      async () => (await allLogs('user.logout')).filter((e) => e.target?.id === mine1.id),
      (es) => es.length === 1,
    );
    expect(selfLogout[0]).toMatchObject({ actor: { id: user.id, email: user.email, type: 'user' } });
    const byEvent = Object.fromEntries(entries.map((e) => [e.event, e]));
    for (const entry of entries) {
      expect(entry).toMatchObject({ result: 'success', id: expect.stringMatching(/^log_[0-9a-z]{26}$/), timestamp: expect.stringMatching(ISO), context: { ip: '127.0.0.1' } });
    }
    expect(byEvent['user.created']).toMatchObject({ actor: { type: 'api_key' }, target: { id: user.id, type: 'user' } });
    expect(byEvent['user.updated']).toMatchObject({ actor: { type: 'api_key' }, target: { id: user.id, type: 'user' } });
    // The SPEC's login and logout: the user (with the email it has) is the actor, the session the target.
    expect(byEvent['user.login']).toMatchObject({ actor: { id: user.id, email: user.email, type: 'user' }, target: { id: session.id, type: 'session' } });
    expect(byEvent['user.logout']).toMatchObject({ actor: { id: user.id, email: user.email, type: 'user' }, target: { id: session.id, type: 'session' } });
    // No user actor anywhere in this stack's log without an email (the denied revoke above is authz.denied by the user).
    const deniedEntries = await eventually(
      async () => (await allLogs('authz.denied')).filter((e) => e.actor.id === user.id),
      (es) => es.length >= 1,
    );
    expect(deniedEntries[0]!.actor).toEqual({ id: user.id, email: user.email, type: 'user' });
    const userActors = (await allLogs()).filter((e) => e.actor.type === 'user');
    expect(userActors.filter((e) => !e.actor.email)).toEqual([]);
    // Newest first.
    const stamps = entries.map((e) => e.timestamp);
    expect([...stamps].sort().reverse()).toEqual(stamps);
  });
});

describe('typed error bodies', () => {
  it('a 400 names every faulty field in error.details, with the request id of the answer', async () => {
    const res = await client.POST('/v1/users', { body: { email: 'not-an-email', name: '' } });
    expect(res.response.status).toBe(400);
    expect(res.data).toBeUndefined();
    const body = res.error!;
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.message).toEqual(expect.any(String));
    expect(body.error.details?.map((d) => d.field).sort()).toEqual(['email', 'name']);
    for (const d of body.error.details ?? []) expect(d.message).toEqual(expect.any(String));
    expect(body.meta.requestId).toMatch(REQUEST_ID);
    expect(body.meta.requestId).toBe(res.response.headers.get('x-request-id'));
  });

  it('a 404 for an unknown user', async () => {
    const res = await client.GET('/v1/users/{id}', { params: { path: { id: 'user_00000000000000000000000000' } } });
    expect(res.response.status).toBe(404);
    expect(res.error).toEqual({ error: { code: 'not_found', message: expect.any(String) }, meta: { requestId: expect.stringMatching(REQUEST_ID) } });
  });

  it('a 401 without a credential', async () => {
    const anonymous = createClient({ baseUrl: new URL(stack.baseUrl).origin });
    const res = await anonymous.GET('/v1/users', {});
    expect(res.response.status).toBe(401);
    expect(res.error?.error.code).toBe('unauthorized');
  });
});
