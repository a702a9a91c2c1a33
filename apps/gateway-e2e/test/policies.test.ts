/** Policies end to end: CRUD and the simulator through the gateway, the policy service and the wasm engine. */
import type { LocalStack } from '@secsvc/dev/stack';
import { parseMetricsText } from '@secsvc/shared';
import { apiClient, emittedEvents, pipelined, startTestStack, type Api } from './support';

jest.setTimeout(120_000);

const KEY = 'svc_sk_' + 'policyTests_'.repeat(4);
let stack: LocalStack;
let api: Api;
let stop: (() => Promise<void>) | undefined;

beforeAll(async () => {
  ({ stack, api, stop } = await startTestStack('pol', KEY));
});

afterAll(async () => {
  await stop?.();
});

const policy = (over: Record<string, unknown> = {}) => ({
  name: 'readers',
  effect: 'allow',
  principals: ['role:reader'],
  actions: ['read'],
  resources: ['/documents/*'],
  ...over,
});

describe('policy CRUD', () => {
  it('creates, reads (full form), lists, updates (replacing arrays) and deletes', async () => {
    const created = await api('POST', '/policies', policy());
    expect(created.status).toBe(201);
    const p = created.body.data;
    expect(Object.keys(p).sort()).toEqual(['actions', 'createdAt', 'effect', 'id', 'name', 'principals', 'resources']);
    expect(p.id).toMatch(/^pol_/);
    const full = (await api('GET', `/policies/${p.id}`)).body.data;
    expect(full).toMatchObject({ description: '', conditions: {}, updatedAt: expect.any(String) });
    const list = await api('GET', '/policies?limit=100');
    expect(list.body.data.map((x: { id: string }) => x.id)).toContain(p.id);
    expect(list.body.data[0].description).toBeUndefined();
    const patched = await api('PATCH', `/policies/${p.id}`, { actions: ['read', 'list'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } });
    expect(patched.status).toBe(200);
    expect(Object.keys(patched.body.data).sort()).toEqual(['actions', 'conditions', 'id', 'updatedAt']);
    expect(patched.body.data.actions).toEqual(['read', 'list']);
    expect((await api('GET', `/policies/${p.id}`)).body.data.conditions).toEqual({ ip: { allowlist: ['10.0.0.0/8'] } });
    expect((await api('DELETE', `/policies/${p.id}`)).status).toBe(204);
    expect((await api('GET', `/policies/${p.id}`)).status).toBe(404);
  });

  it('names every faulty entry', async () => {
    const res = await api('POST', '/policies', policy({ effect: 'maybe', principals: ['role:ok', 'user:${self}', 'group:x'], conditions: { ip: { allowlist: ['10.0.0.0/33'] } } }));
    expect(res.status).toBe(400);
    const fields = res.body.error.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(['effect', 'principals[2]', 'conditions.ip.allowlist[0]']));
    const unknown = await api('POST', '/policies', policy({ conditions: { time: { after: '09:00' } } }));
    expect(unknown.status).toBe(400);
  });
});

describe('simulator', () => {
  it('applies deny-overrides, ${self}, roles and ip allowlists', async () => {
    const reader = (await api('POST', '/users', { email: 'reader@example.com', name: 'Reader', roles: ['role_reader'] })).body.data;
    const other = (await api('POST', '/users', { email: 'other@example.com', name: 'Other', roles: [] })).body.data;
    const allow = (await api('POST', '/policies', policy({ name: 'read docs' }))).body.data;
    const own = (await api('POST', '/policies', policy({ name: 'own profile', principals: ['user:${self}'], actions: ['*'], resources: ['/users/${self}'] }))).body.data;
    const office = (await api('POST', '/policies', policy({ name: 'office only', effect: 'deny', principals: ['*'], actions: ['delete'], resources: ['*'] }))).body.data;
    const simulate = async (principal: string, action: string, resource: string, ip?: string) =>
      (await api('POST', '/policies/simulate', { principal, action, resource, context: ip ? { ip } : {} })).body.data;

    const granted = await simulate(`user:${reader.id}`, 'read', '/documents/42');
    expect(granted).toMatchObject({ allowed: true, effect: 'allow', matchedPolicies: [{ id: allow.id, name: 'read docs', effect: 'allow' }] });
    expect(Number.isInteger(granted.evaluationTimeMs)).toBe(true);
    expect(granted.decisionId).toMatch(/^dec_/);
    expect(await simulate(`user:${other.id}`, 'read', '/documents/42')).toMatchObject({ allowed: false, effect: 'deny', matchedPolicies: [] });
    expect((await simulate(`user:${other.id}`, 'update', `/users/${other.id}`)).allowed).toBe(true);
    expect((await simulate(`user:${other.id}`, 'update', `/users/${reader.id}`)).allowed).toBe(false);
    const denied = await simulate(`user:${other.id}`, 'delete', `/users/${other.id}`);
    expect(denied.allowed).toBe(false);
    expect(denied.matchedPolicies.map((m: { id: string }) => m.id)).toEqual([office.id, own.id]);

    await api('PATCH', `/policies/${allow.id}`, { conditions: { ip: { allowlist: ['192.0.2.0/24'] } } });
    let decision = await simulate(`user:${reader.id}`, 'read', '/documents/1', '192.0.2.10');
    for (let i = 0; i < 50 && !decision.allowed; i++) decision = await simulate(`user:${reader.id}`, 'read', '/documents/1', '192.0.2.10');
    expect(decision.allowed).toBe(true);
    expect((await simulate(`user:${reader.id}`, 'read', '/documents/1', '198.51.100.1')).allowed).toBe(false);
    expect((await simulate(`user:${reader.id}`, 'read', '/documents/1')).allowed).toBe(false);
  });

  it('follows role changes at once although it caches roles', async () => {
    const u = (await api('POST', '/users', { email: 'roles.change@example.com', name: 'R', roles: ['role_auditor'] })).body.data;
    await api('POST', '/policies', policy({ name: 'auditors read logs', principals: ['role:auditor'], resources: ['/logs/*'] }));
    const ask = async () => (await api('POST', '/policies/simulate', { principal: `user:${u.id}`, action: 'read', resource: '/logs/1' })).body.data.allowed;
    expect(await ask()).toBe(true);
    expect(await ask()).toBe(true); // cached roles
    const pg = (await import('pg')).default;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      await db.query(`UPDATE identity.users SET roles = '{}' WHERE id = $1`, [u.id]);
    } finally {
      await db.end();
    }
    let allowed = true;
    for (let i = 0; i < 50 && allowed; i++) {
      allowed = await ask();
      if (allowed) await new Promise((r) => setTimeout(r, 20));
    }
    expect(allowed).toBe(false);
  });

  it('simulates draft policies (merge, replace, standing in for a stored one) without saving them', async () => {
    const analyst = (await api('POST', '/users', { email: 'analyst@example.com', name: 'Analyst', roles: ['role_analyst'] })).body.data;
    const stored = (await api('POST', '/policies', policy({ name: 'analysts read reports', principals: ['role:analyst'], resources: ['/reports/*'] }))).body.data;
    const listed = async () => (await api('GET', '/policies?limit=100')).body.data.map((p: { id: string }) => p.id).sort();
    const before = await listed();
    const simulate = async (body: Record<string, unknown>) => {
      const res = await api('POST', '/policies/simulate', { principal: `user:${analyst.id}`, action: 'read', resource: '/reports/q1', ...body });
      expect(res.status).toBe(200);
      return res.body.data;
    };
    const freeze = { name: 'report freeze', effect: 'deny', principals: ['*'], actions: ['read'], resources: ['/reports/*'] };

    // merge (the default): the draft deny wins over the stored allow; drafts are draft_<index>
    expect(await simulate({ policies: [freeze] })).toMatchObject({
      allowed: false,
      effect: 'deny',
      matchedPolicies: [
        { id: 'draft_0', name: 'report freeze', effect: 'deny' },
        { id: stored.id, name: 'analysts read reports', effect: 'allow' },
      ],
    });
    // replace: only the drafts count
    const create = { id: 'draft_create', name: 'create reports', effect: 'allow', principals: ['role:analyst'], actions: ['create'], resources: ['/reports/*'] };
    expect(await simulate({ policies: [create], mode: 'replace' })).toMatchObject({ allowed: false, matchedPolicies: [] });
    expect(await simulate({ action: 'create', policies: [create], mode: 'replace' })).toMatchObject({
      allowed: true,
      matchedPolicies: [{ id: 'draft_create', name: 'create reports', effect: 'allow' }],
    });
    // "what if I narrowed it": a draft with the stored id stands in for the stored policy
    const narrowed = { ...policy({ name: 'analysts read public reports', principals: ['role:analyst'], resources: ['/reports/public/*'] }), id: stored.id };
    expect(await simulate({ policies: [narrowed], mode: 'merge' })).toMatchObject({ allowed: false, matchedPolicies: [] });
    expect(await simulate({ resource: '/reports/public/a', policies: [narrowed] })).toMatchObject({
      allowed: true,
      matchedPolicies: [{ id: stored.id, name: 'analysts read public reports', effect: 'allow' }],
    });

    // nothing was saved, and the stored decision is as before
    expect(await listed()).toEqual(before);
    expect((await api('GET', `/policies/${stored.id}`)).body.data.resources).toEqual(['/reports/*']);
    expect(await simulate({})).toMatchObject({ allowed: true, matchedPolicies: [{ id: stored.id }] });
  });

  it('explains every policy that did not match: which part failed and the values compared', async () => {
    const viewer = (await api('POST', '/users', { email: 'viewer@example.com', name: 'Viewer', roles: ['role_viewer'] })).body.data;
    const office = (await api('POST', '/policies', policy({ name: 'viewers from the office', principals: ['role:viewer'], actions: ['view'], resources: ['/boards/*'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } }))).body.data;
    const res = await api('POST', '/policies/simulate', {
      principal: `user:${viewer.id}`,
      action: 'view',
      resource: '/boards/7',
      context: { ip: '192.0.2.1' },
      explain: true,
      policies: [
        { name: 'ops view boards', effect: 'allow', principals: ['role:ops'], actions: ['view'], resources: ['/boards/*'] },
        { name: 'viewers edit boards', effect: 'allow', principals: ['role:viewer'], actions: ['edit', 'delete'], resources: ['/boards/*'] },
        { name: 'viewers view dashboards', effect: 'deny', principals: ['role:viewer'], actions: ['view'], resources: ['/dashboards/*'] },
      ],
    });
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data).toMatchObject({ allowed: false, effect: 'deny', matchedPolicies: [] });
    // drafts first, then the stored policies; in each group the nearest misses first (condition, resource,
    // action, principal)
    expect(data.explanations.slice(0, 3)).toEqual([
      { policyId: 'draft_2', name: 'viewers view dashboards', effect: 'deny', failed: 'resource', expected: ['/dashboards/*'], actual: '/boards/7' },
      { policyId: 'draft_1', name: 'viewers edit boards', effect: 'allow', failed: 'action', expected: ['edit', 'delete'], actual: 'view' },
      { policyId: 'draft_0', name: 'ops view boards', effect: 'allow', failed: 'principal', expected: ['role:ops'], actual: [`user:${viewer.id}`, 'role:viewer'] },
    ]);
    expect(data.explanations[3]).toEqual({
      policyId: office.id,
      name: 'viewers from the office',
      effect: 'allow',
      failed: 'condition',
      condition: 'ip.allowlist',
      expected: ['10.0.0.0/8'],
      actual: '192.0.2.1',
    });
    const stored = (await api('GET', '/policies?limit=100')).body.data.length;
    expect(data.notMatchedCount).toBe(stored + 3);
    expect(data.explanations).toHaveLength(Math.min(stored + 3, 100));
    for (const e of data.explanations) expect(['principal', 'action', 'resource', 'condition']).toContain(e.failed);
    // from the office the stored policy matches and is not explained
    const inside = (await api('POST', '/policies/simulate', { principal: `user:${viewer.id}`, action: 'view', resource: '/boards/7', context: { ip: '10.2.3.4' }, explain: true })).body.data;
    expect(inside).toMatchObject({ allowed: true, matchedPolicies: [{ id: office.id }] });
    expect(inside.explanations.map((e: { policyId: string }) => e.policyId)).not.toContain(office.id);
    expect(inside.notMatchedCount).toBe(stored - 1);
    // without explain: the SPEC result only
    const plain = (await api('POST', '/policies/simulate', { principal: `user:${viewer.id}`, action: 'view', resource: '/boards/7' })).body.data;
    expect(plain.explanations).toBeUndefined();
  });

  it('validates drafts like POST /policies bodies, naming policies[<i>].<field>', async () => {
    const u = (await api('POST', '/users', { email: 'drafter@example.com', name: 'Drafter' })).body.data;
    const res = await api('POST', '/policies/simulate', {
      principal: `user:${u.id}`,
      action: 'read',
      resource: '/x',
      policies: [policy(), policy({ principals: ['group:x'], conditions: { ip: { allowlist: ['10.0.0.0/33'] } } }), policy({ id: 'pol_nope' })],
    });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('invalid_request');
    expect(res.body.error.details.map((d: { field: string }) => d.field)).toEqual(['policies[1].principals[0]', 'policies[1].conditions.ip.allowlist[0]', 'policies[2].id']);
    const shape = await api('POST', '/policies/simulate', { principal: `user:${u.id}`, action: 'read', resource: '/x', mode: 'replace' });
    expect(shape.status).toBe(400);
    expect(shape.body.error.details.map((d: { field: string }) => d.field)).toEqual(['mode']);
  });

  it('answers requests that arrive together (SimulateBatch, GetUserBatch) each as it answers them alone', async () => {
    const users = await Promise.all(
      ['a', 'b', 'c'].map(async (n, i) => (await api('POST', '/users', { email: `together.${n}@example.com`, name: n, roles: i === 0 ? ['role_reader'] : [] })).body.data as { id: string }),
    );
    await api('POST', '/policies', policy({ name: 'together' }));
    const bodies = [
      ...users.flatMap((u) => [
        { principal: `user:${u.id}`, action: 'read', resource: '/documents/1' },
        { principal: `user:${u.id}`, action: 'update', resource: `/users/${u.id}` },
      ]),
      { principal: 'user:user_00000000000000000000000000', action: 'read', resource: '/x' },
      { principal: `user:${users[0]!.id}`, action: 'read', resource: 42 },
    ];
    const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };
    const shape = (status: number, body: { data?: Record<string, unknown>; error?: unknown }) =>
      body.data ? { status, allowed: body.data.allowed, effect: body.data.effect, matched: body.data.matchedPolicies } : { status, error: body.error };
    const alone = await Promise.all(bodies.map(async (b) => {
      const r = await api('POST', '/policies/simulate', b);
      return shape(r.status, r.body);
    }));
    const together = await pipelined(new URL(stack.baseUrl).origin, bodies.map((b) => ({ path: '/v1/policies/simulate', headers, body: JSON.stringify(b) })));
    expect(together.map((r) => shape(r.status, JSON.parse(r.body)))).toEqual(alone);
    expect(alone.slice(-2).map((a) => a.status)).toEqual([404, 400]);
    // Users read together: each its own answer, an unknown one 404 in the error shape.
    const reads = await pipelined(new URL(stack.baseUrl).origin, [...users.map((u) => `/v1/users/${u.id}`), '/v1/users/user_00000000000000000000000000'].map((path) => ({ method: 'GET', path, headers: { authorization: `Bearer ${KEY}` } })));
    expect(reads.map((r) => [r.status, (JSON.parse(r.body) as { data?: { id: string }; error?: { code: string } }).data?.id ?? JSON.parse(r.body).error.code])).toEqual([
      ...users.map((u) => [200, u.id]),
      [404, 'not_found'],
    ]);
    const batches = async (admin: string, method: string) =>
      parseMetricsText(await (await fetch(`${admin}/metrics`)).text())
        .filter((m) => m.name === 'grpc_server_handled_total' && m.labels.grpc_method === method && m.labels.grpc_code === 'OK')
        .reduce((sum, m) => sum + m.value, 0);
    expect(await batches(stack.admin.policy, 'SimulateBatch')).toBeGreaterThan(0);
    expect(await batches(stack.admin.identity, 'GetUserBatch')).toBeGreaterThan(0);
  });

  it('answers 404 naming principal for an unknown user and 400 for a malformed principal', async () => {
    const missing = await api('POST', '/policies/simulate', { principal: 'user:user_00000000000000000000000000', action: 'read', resource: '/x' });
    expect(missing.status).toBe(404);
    expect(missing.body.error.details[0].field).toBe('principal');
    const bad = await api('POST', '/policies/simulate', { principal: 'role:admin', action: 'read', resource: '/x' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe('principal');
  });
});

describe('enforcement', () => {
  it('authorizes users (session or JWT) by the policies on every call and records denials', async () => {
    // (the simulator tests above left 'own profile' (user:${self} * /users/${self}) and a deny on every delete)
    const editor = (await api('POST', '/users', { email: 'editor@example.com', name: 'Editor', roles: ['role_editor'] })).body.data;
    const colleague = (await api('POST', '/users', { email: 'colleague@example.com', name: 'Colleague' })).body.data;
    const { token } = (await api('POST', '/sessions', { userId: editor.id })).body.data;
    const asEditor = apiClient(stack.baseUrl, token);
    // nothing allows it yet: default deny
    const denied = await asEditor('GET', `/users/${colleague.id}`);
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('forbidden');
    expect((await asEditor('GET', '/users')).status).toBe(403);
    expect((await asEditor('GET', `/users/${editor.id}`)).status).toBe(200); // own profile
    const p = (await api('POST', '/policies', { name: 'editors read users', effect: 'allow', principals: ['role:editor'], actions: ['read'], resources: ['/users', '/users/*'] })).body.data;
    expect((await asEditor('GET', `/users/${colleague.id}`)).status).toBe(200);
    expect((await asEditor('GET', '/users')).status).toBe(200);
    expect((await asEditor('DELETE', `/users/${editor.id}`)).status).toBe(403);
    // a deny wins, and a policy change applies to the next call
    await api('POST', '/policies', { name: 'no listing', effect: 'deny', principals: ['*'], actions: ['read'], resources: ['/users'] });
    expect((await asEditor('GET', '/users')).status).toBe(403);
    expect((await asEditor('GET', `/users/${colleague.id}`)).status).toBe(200);
    // JWT callers carry their roles in the token
    const jwt = (await api('POST', '/tokens', { sessionToken: token })).body.data.accessToken as string;
    expect((await apiClient(stack.baseUrl, jwt)('GET', `/users/${colleague.id}`)).status).toBe(200);
    await api('DELETE', `/policies/${p.id}`);
    expect((await asEditor('GET', `/users/${colleague.id}`)).status).toBe(403);
    // Calls that arrive together are decided together (AuthorizeBatch), each as alone: allowed, denied, allowed.
    const together = await pipelined(
      new URL(stack.baseUrl).origin,
      [`/v1/users/${editor.id}`, `/v1/users/${colleague.id}`, `/v1/users/${editor.id}`].map((path) => ({ method: 'GET', path, headers: { authorization: `Bearer ${token}` } })),
    );
    expect(together.map((r) => r.status)).toEqual([200, 403, 200]);
    const authorizeBatches = parseMetricsText(await (await fetch(`${stack.admin.policy}/metrics`)).text()).filter(
      (m) => m.name === 'grpc_server_handled_total' && m.labels.grpc_method === 'AuthorizeBatch' && m.labels.grpc_code === 'OK',
    );
    expect(authorizeBatches.reduce((sum, m) => sum + m.value, 0)).toBeGreaterThan(0);
    // API keys act as administrators, whatever the policies say
    expect((await api('GET', '/users')).status).toBe(200);
    // denials are audit events the policy service emits
    const pg = (await import('pg')).default;
    const db = new pg.Client({ connectionString: stack.databaseUrl });
    await db.connect();
    try {
      const { rows } = await db.query(`SELECT payload FROM ${emittedEvents('policy')} WHERE event_type = 'authz.denied' AND payload->'actor'->>'id' = $1 ORDER BY ord`, [editor.id]);
      expect(rows.length).toBeGreaterThanOrEqual(4);
      expect(rows[0].payload.target).toEqual({ id: `/users/${colleague.id}`, type: 'resource' });
      expect(JSON.parse(rows[0].payload.metadataJson)).toMatchObject({ action: 'read', authMethod: 'session', decisionId: expect.stringMatching(/^dec_/) });
    } finally {
      await db.end();
    }
  });
});
