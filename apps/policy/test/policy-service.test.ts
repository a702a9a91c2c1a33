// The PolicyService RPCs against a real PostgreSQL (schema `policy`) and the real OPA WebAssembly engine:
// CRUD, paging, validation, environments, outbox events, Simulate semantics, and convergence between two
// replicas (two service contexts on one database, each with its own LISTEN connection and engines).
import { Metadata } from '@grpc/grpc-js';
import type { policy } from '@secsvc/proto';
import { AppError, createLogger, createPool, migrate, newId, readMigrations, type CallContext, type Pool } from '@secsvc/shared';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';
import type { PolicyContext } from '../src/context';
import { startDecisionRuntime, type DecisionRuntime } from '../src/decision-runtime';
import { policyLimits } from '../src/domain/policies';
import { migrationsDir } from '../src/migrations';
import { policyService } from '../src/rpc';

const SECRET = 's'.repeat(40);
const logger = createLogger('test', 'silent');

interface Replica {
  pool: Pool;
  runtime: DecisionRuntime;
  rpc: ReturnType<typeof policyService>;
}

let db: TestDatabase;
let a: Replica;
const extra: Replica[] = [];

async function replica(databaseUrl = db.url, listenUrl = databaseUrl): Promise<Replica> {
  const pool = createPool(databaseUrl, 5, logger, 'policy');
  const runtime = await startDecisionRuntime(pool, listenUrl, logger);
  const ctx: PolicyContext = { pool, logger, config: { SERVER_SECRET: SECRET }, decisions: runtime.decisions };
  return { pool, runtime, rpc: policyService(ctx) };
}

function call(actor = 'key_test'): CallContext {
  const metadata = new Metadata();
  metadata.set('x-actor-id', actor);
  metadata.set('x-client-ip', '203.0.113.7');
  metadata.set('x-user-agent', 'jest');
  metadata.set('x-auth-method', 'api_key');
  metadata.set('traceparent', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
  return { requestId: 'req_0123456789abcdef', metadata };
}

async function rejected(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const fields = async (p: Promise<unknown>) => (await rejected(p)).details.map((d) => d.field);

function draft(overrides: Partial<policy.CreatePolicyRequest> = {}): policy.CreatePolicyRequest {
  return {
    environment: 'live',
    name: 'Developers read docs',
    description: '',
    effect: 'allow',
    principals: ['role:dev'],
    actions: ['read'],
    resources: ['/docs/*'],
    conditions: undefined,
    ...overrides,
  };
}

const user1 = newId('user');
const user2 = newId('user');

function sim(overrides: Partial<policy.SimulateRequest> = {}): policy.SimulateRequest {
  return { environment: 'test', principal: `user:${user1}`, action: 'read', resource: '/x', ip: '', roles: [], policies: [], mode: '', explain: false, mfa: false, mfaAgeSeconds: 0, ...overrides };
}

async function until(check: () => Promise<boolean>, timeoutMs = 2000): Promise<number> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - started;
}

async function outboxFor(policyId: string) {
  const { rows } = await a.pool.query<{ event_type: string; environment: string; event_key: string; payload: Record<string, unknown> }>(
    `SELECT event_type, environment, event_key, payload FROM outbox WHERE payload->'target'->>'id' = $1 ORDER BY seq`,
    [policyId],
  );
  return rows;
}

beforeAll(async () => {
  db = await testDatabase();
  const pool = createPool(db.url, 2, logger, 'policy');
  await migrate(pool, 'policy', await readMigrations(migrationsDir), logger);
  await pool.end();
  a = await replica();
});

afterAll(async () => {
  for (const r of [a, ...extra]) {
    await r?.runtime.feed.stop();
    await r?.pool.end();
  }
  await db.drop();
  await stopTestPostgres();
});

describe('CRUD', () => {
  it('creates a policy with defaults and writes policy.created in the same transaction', async () => {
    const created = await a.rpc.createPolicy(draft(), call('key_abc'));
    expect(created).toMatchObject({
      environment: 'live',
      name: 'Developers read docs',
      description: '',
      effect: 'allow',
      principals: ['role:dev'],
      actions: ['read'],
      resources: ['/docs/*'],
      conditions: {},
    });
    expect(created.id).toMatch(/^pol_[0-9a-z]{26}$/);
    expect(created.createdAt).toBe(created.updatedAt);
    expect(await a.rpc.getPolicy({ environment: 'live', id: created.id })).toEqual(created);

    const events = await outboxFor(created.id);
    expect(events).toHaveLength(1);
    expect(events[0]!.event_type).toBe('policy.created');
    expect(events[0]!.environment).toBe('live');
    expect(events[0]!.event_key).toBe('key_abc');
    expect(events[0]!.payload).toMatchObject({
      type: 'policy.created',
      actor: { id: 'key_abc', type: 'api_key' },
      target: { id: created.id, type: 'policy' },
      context: { ip: '203.0.113.7', userAgent: 'jest' },
      result: 'success',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    });
    expect(JSON.parse(events[0]!.payload.metadataJson as string)).toEqual({
      authMethod: 'api_key',
      mfaUsed: false,
      name: 'Developers read docs',
      effect: 'allow',
    });
  });

  it('stores an mfa condition as written: true stays true, an object stays an object', async () => {
    for (const mfa of [{ required: true }, { options: {} }, { options: { maxAgeSeconds: 300 } }]) {
      const created = await a.rpc.createPolicy(draft({ conditions: { ip: { allowlist: ['10.0.0.0/8'] }, mfa } }), call());
      expect((await a.rpc.getPolicy({ environment: 'live', id: created.id })).conditions).toEqual({ ip: { allowlist: ['10.0.0.0/8'] }, mfa });
      await a.rpc.deletePolicy({ environment: 'live', id: created.id }, call());
    }
    // the stored JSON is the form written over HTTP: true, {} or {maxAgeSeconds}
    const created = await a.rpc.createPolicy(draft({ conditions: { mfa: { required: true } } }), call());
    expect((await a.pool.query(`SELECT conditions FROM policies WHERE id = $1`, [created.id])).rows[0].conditions).toEqual({ mfa: true });
    const updated = await a.rpc.updatePolicy({ environment: 'live', id: created.id, conditions: { mfa: { options: { maxAgeSeconds: 60 } } } }, call());
    expect(updated.conditions).toEqual({ mfa: { options: { maxAgeSeconds: 60 } } });
    expect((await a.pool.query(`SELECT conditions FROM policies WHERE id = $1`, [created.id])).rows[0].conditions).toEqual({ mfa: { maxAgeSeconds: 60 } });
    await a.rpc.deletePolicy({ environment: 'live', id: created.id }, call());
  });

  it('stores every field as given, conditions included', async () => {
    const created = await a.rpc.createPolicy(
      draft({
        description: 'Office network only',
        effect: 'deny',
        principals: ['*', `user:${user1}`, 'user:${self}', 'role:ops-team_2'],
        actions: ['*', 'users:read', 'export.create'],
        resources: ['*', '/users/${self}/keys/*', '/a/b', '/*'],
        conditions: { ip: { allowlist: ['10.1.2.3/8', '2001:db8::/32'] } },
      }),
      call(),
    );
    const got = await a.rpc.getPolicy({ environment: 'live', id: created.id });
    expect(got.description).toBe('Office network only');
    expect(got.effect).toBe('deny');
    expect(got.principals).toEqual(['*', `user:${user1}`, 'user:${self}', 'role:ops-team_2']);
    expect(got.actions).toEqual(['*', 'users:read', 'export.create']);
    expect(got.resources).toEqual(['*', '/users/${self}/keys/*', '/a/b', '/*']);
    // host bits are kept as given (and ignored when matching)
    expect(got.conditions).toEqual({ ip: { allowlist: ['10.1.2.3/8', '2001:db8::/32'] } });
    await a.rpc.deletePolicy({ environment: 'live', id: created.id }, call());
  });

  it('updates any subset: lists and conditions replace the stored value; updatedAt moves', async () => {
    const created = await a.rpc.createPolicy(
      draft({ principals: ['role:dev', 'role:qa'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } }),
      call(),
    );
    const renamed = await a.rpc.updatePolicy({ environment: 'live', id: created.id, name: 'Renamed' }, call('key_upd'));
    expect(renamed).toMatchObject({ name: 'Renamed', principals: ['role:dev', 'role:qa'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } });
    expect(renamed.createdAt).toBe(created.createdAt);
    expect(Date.parse(renamed.updatedAt!)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt!));

    const replaced = await a.rpc.updatePolicy(
      {
        environment: 'live',
        id: created.id,
        principals: { values: ['role:ops'] },
        actions: { values: ['update', 'delete'] },
        conditions: { ip: { allowlist: ['192.168.0.0/16'] } },
      },
      call(),
    );
    expect(replaced.principals).toEqual(['role:ops']);
    expect(replaced.actions).toEqual(['update', 'delete']);
    expect(replaced.resources).toEqual(['/docs/*']);
    expect(replaced.conditions).toEqual({ ip: { allowlist: ['192.168.0.0/16'] } });
    expect(replaced.name).toBe('Renamed');

    // conditions: {} (no ip) removes every condition
    const cleared = await a.rpc.updatePolicy({ environment: 'live', id: created.id, conditions: {}, description: 'd', effect: 'deny' }, call());
    expect(cleared).toMatchObject({ conditions: {}, description: 'd', effect: 'deny' });
    expect(await a.rpc.getPolicy({ environment: 'live', id: created.id })).toEqual(cleared);

    const events = await outboxFor(created.id);
    expect(events.map((e) => e.event_type)).toEqual(['policy.created', 'policy.updated', 'policy.updated', 'policy.updated']);
    expect(events[1]!.payload.actor).toEqual({ id: 'key_upd', type: 'api_key' });
    expect(JSON.parse(events[1]!.payload.metadataJson as string).fields).toEqual(['name']);
    expect(JSON.parse(events[2]!.payload.metadataJson as string).fields).toEqual(['principals', 'actions', 'conditions']);
  });

  it('refuses an empty update, an invalid one (naming the field) and an unknown id, writing nothing', async () => {
    const created = await a.rpc.createPolicy(draft(), call());
    const empty = await rejected(a.rpc.updatePolicy({ environment: 'live', id: created.id }, call()));
    expect(empty.code).toBe('invalid_request');
    expect(empty.details[0]!.field).toBe('(body)');
    expect(await fields(a.rpc.updatePolicy({ environment: 'live', id: created.id, actions: { values: ['ok', 'Bad Action'] } }, call()))).toEqual([
      'actions[1]',
    ]);
    expect(await fields(a.rpc.updatePolicy({ environment: 'live', id: created.id, principals: { values: [] } }, call()))).toEqual(['principals']);
    expect(await fields(a.rpc.updatePolicy({ environment: 'live', id: created.id, name: '  ' }, call()))).toEqual(['name']);
    expect((await rejected(a.rpc.updatePolicy({ environment: 'live', id: 'pol_missing', name: 'x' }, call()))).code).toBe('not_found');
    expect((await outboxFor(created.id)).map((e) => e.event_type)).toEqual(['policy.created']);
    expect(await a.rpc.getPolicy({ environment: 'live', id: created.id })).toEqual(created);
  });

  it('deletes, then answers not_found; policy.deleted is written once', async () => {
    const created = await a.rpc.createPolicy(draft(), call());
    expect(await a.rpc.deletePolicy({ environment: 'live', id: created.id }, call('key_del'))).toEqual({});
    expect((await rejected(a.rpc.getPolicy({ environment: 'live', id: created.id }))).code).toBe('not_found');
    expect((await rejected(a.rpc.deletePolicy({ environment: 'live', id: created.id }, call()))).code).toBe('not_found');
    const events = await outboxFor(created.id);
    expect(events.map((e) => e.event_type)).toEqual(['policy.created', 'policy.deleted']);
    expect(events[1]!.payload.actor).toEqual({ id: 'key_del', type: 'api_key' });
  });

  it('keeps live and test apart and refuses any other environment', async () => {
    const live = await a.rpc.createPolicy(draft({ environment: 'live' }), call());
    const test = await a.rpc.createPolicy(draft({ environment: 'test' }), call());
    expect((await rejected(a.rpc.getPolicy({ environment: 'test', id: live.id }))).code).toBe('not_found');
    expect((await rejected(a.rpc.updatePolicy({ environment: 'test', id: live.id, name: 'x' }, call()))).code).toBe('not_found');
    expect((await rejected(a.rpc.deletePolicy({ environment: 'test', id: live.id }, call()))).code).toBe('not_found');
    expect((await a.rpc.getPolicy({ environment: 'test', id: test.id })).environment).toBe('test');
    const testList = await a.rpc.listPolicies({ environment: 'test', limit: 100, cursor: '' });
    expect(testList.policies.map((p) => p.id)).toContain(test.id);
    expect(testList.policies.every((p) => p.environment === 'test')).toBe(true);
    for (const p of [
      a.rpc.getPolicy({ environment: 'staging', id: live.id }),
      a.rpc.createPolicy(draft({ environment: '' }), call()),
      a.rpc.listPolicies({ environment: 'LIVE', limit: 10, cursor: '' }),
      a.rpc.simulate(sim({ environment: 'prod' })),
    ]) {
      expect(await fields(p)).toEqual(['environment']);
    }
    const events = await outboxFor(test.id);
    expect(events[0]!.environment).toBe('test');
    await a.rpc.deletePolicy({ environment: 'test', id: test.id }, call());
  });
});

describe('ListPolicies', () => {
  it('pages newest first with an opaque cursor bound to its list and environment', async () => {
    for (let i = 0; i < 5; i++) await a.rpc.createPolicy(draft({ name: `page ${i}` }), call());
    const all = await a.rpc.listPolicies({ environment: 'live', limit: 100, cursor: '' });
    expect(all.hasMore).toBe(false);
    expect(all.nextCursor).toBe('');
    const ids = all.policies.map((p) => p.id);
    expect(ids.length).toBeGreaterThanOrEqual(5);
    expect([...ids].sort().reverse()).toEqual(ids);
    expect(all.policies[0]!.name).toBe('page 4');

    const paged: string[] = [];
    let cursor = '';
    let pages = 0;
    for (;;) {
      const page = await a.rpc.listPolicies({ environment: 'live', limit: 2, cursor });
      pages++;
      expect(page.policies.length).toBeLessThanOrEqual(2);
      paged.push(...page.policies.map((p) => p.id));
      if (!page.hasMore) {
        expect(page.nextCursor).toBe('');
        break;
      }
      expect(page.nextCursor).toMatch(/^cur_/);
      cursor = page.nextCursor;
    }
    expect(paged).toEqual(ids);
    expect(pages).toBe(Math.ceil(ids.length / 2));

    const first = await a.rpc.listPolicies({ environment: 'live', limit: 1, cursor: '' });
    expect(first.hasMore).toBe(true);
    expect(await fields(a.rpc.listPolicies({ environment: 'test', limit: 1, cursor: first.nextCursor }))).toEqual(['cursor']);
    expect(await fields(a.rpc.listPolicies({ environment: 'live', limit: 1, cursor: first.nextCursor + 'x' }))).toEqual(['cursor']);
    expect(await fields(a.rpc.listPolicies({ environment: 'live', limit: 0, cursor: '' }))).toEqual(['limit']);
    expect(await fields(a.rpc.listPolicies({ environment: 'live', limit: 101, cursor: '' }))).toEqual(['limit']);
  });
});

describe('validation', () => {
  it('names each faulty field, all at once', async () => {
    const err = await rejected(
      a.rpc.createPolicy(
        draft({
          name: '',
          description: 'x'.repeat(2001),
          effect: 'permit',
          principals: ['*', 'role:dev', 'group:admins', 'user:bob', 'role:Dev'],
          actions: ['read', '', 'READ', '*'],
          resources: ['/ok', 'relative', '/a/*/b', '/a//b', '/users/x${self}', '/a/', '/a/b*', `/${'x'.repeat(512)}`],
          conditions: { ip: { allowlist: ['10.0.0.0/33', '10.0.0.0/8', 'nope/8', '10.0.0.1', '::ffff:10.0.0.0/104', 'fe80::1%eth0/64', '10.0.0.0/08'] } },
        }),
        call(),
      ),
    );
    expect(err.code).toBe('invalid_request');
    expect(err.details.map((d) => d.field)).toEqual([
      'name',
      'description',
      'effect',
      'principals[2]',
      'principals[3]',
      'principals[4]',
      'actions[1]',
      'actions[2]',
      'resources[1]',
      'resources[2]',
      'resources[3]',
      'resources[4]',
      'resources[5]',
      'resources[6]',
      'resources[7]',
      'conditions.ip.allowlist[0]',
      'conditions.ip.allowlist[2]',
      'conditions.ip.allowlist[3]',
      'conditions.ip.allowlist[4]',
      'conditions.ip.allowlist[5]',
      'conditions.ip.allowlist[6]',
    ]);
    expect(err.details.find((d) => d.field === 'conditions.ip.allowlist[0]')!.message).toMatch(/prefix length must be 0 to 32/);
    expect((await a.pool.query(`SELECT count(*)::int AS n FROM policies WHERE name = ''`)).rows[0].n).toBe(0);
  });

  it('requires the lists, bounds them, and refuses unknown condition keys', async () => {
    expect(await fields(a.rpc.createPolicy(draft({ principals: [], actions: [], resources: [] }), call()))).toEqual([
      'principals',
      'actions',
      'resources',
    ]);
    const many = Array.from({ length: policyLimits.maxEntries + 1 }, (_, i) => `/r${i}`);
    expect(await fields(a.rpc.createPolicy(draft({ resources: many }), call()))).toEqual(['resources']);
    const full = await a.rpc.createPolicy(draft({ resources: many.slice(1) }), call());
    expect(full.resources).toHaveLength(policyLimits.maxEntries);
    await a.rpc.deletePolicy({ environment: 'live', id: full.id }, call());
    expect(await fields(a.rpc.createPolicy(draft({ conditions: { ip: { allowlist: [] } } }), call()))).toEqual(['conditions.ip.allowlist']);
    // A JSON body (or any caller) may carry keys the protobuf message cannot: they are named, not dropped.
    const unknownKeys = { ip: { allowlist: ['10.0.0.0/8'], blocklist: ['10.0.0.1/32'] }, time: { after: '09:00' } };
    expect(await fields(a.rpc.createPolicy(draft({ conditions: unknownKeys as policy.Conditions }), call()))).toEqual([
      'conditions.time',
      'conditions.ip.blocklist',
    ]);
    expect(await fields(a.rpc.createPolicy(draft({ conditions: { ip: 'x' } as unknown as policy.Conditions }), call()))).toEqual(['conditions.ip']);
    // mfa: required false, neither form set, or a max age outside 1..31536000
    expect(await fields(a.rpc.createPolicy(draft({ conditions: { mfa: { required: false } } }), call()))).toEqual(['conditions.mfa']);
    expect(await fields(a.rpc.createPolicy(draft({ conditions: { mfa: {} } }), call()))).toEqual(['conditions.mfa']);
    for (const maxAgeSeconds of [0, -1, policyLimits.mfaMaxAgeSeconds + 1]) {
      expect(await fields(a.rpc.createPolicy(draft({ conditions: { mfa: { options: { maxAgeSeconds } } } }), call()))).toEqual(['conditions.mfa.maxAgeSeconds']);
    }
    expect(await fields(a.rpc.createPolicy(draft({ name: 'n'.repeat(201) }), call()))).toEqual(['name']);
    expect(await fields(a.rpc.createPolicy(draft({ principals: ['*', 7 as unknown as string] }), call()))).toEqual(['principals[1]']);
  });

  it(`holds at most ${policyLimits.maxPoliciesPerEnvironment} policies per environment (409 conflict)`, async () => {
    const { rows } = await a.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM policies WHERE environment = 'test'`);
    const fill = policyLimits.maxPoliciesPerEnvironment - rows[0]!.n;
    await a.pool.query(
      `INSERT INTO policies (id, environment, name, effect, principals, actions, resources)
       SELECT 'pol_' || lpad(i::text, 26, '0'), 'test', 'filler', 'allow', '{role:x}', '{fill}', '{/fill}' FROM generate_series(1, $1) AS i`,
      [fill],
    );
    const before = (await a.pool.query(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n;
    const err = await rejected(a.rpc.createPolicy(draft({ environment: 'test' }), call()));
    expect(err.code).toBe('conflict');
    expect(err.message).toContain('10000');
    expect((await a.pool.query(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n).toBe(before);
    // the other environment is not affected
    const live = await a.rpc.createPolicy(draft({ environment: 'live' }), call());
    await a.rpc.deletePolicy({ environment: 'live', id: live.id }, call());
    await a.pool.query(`DELETE FROM policies WHERE environment = 'test' AND name = 'filler'`);
    const ok = await a.rpc.createPolicy(draft({ environment: 'test' }), call());
    await a.rpc.deletePolicy({ environment: 'test', id: ok.id }, call());
  });
});

describe('Simulate', () => {
  beforeAll(async () => {
    // a clean test environment, deleted through the service so this replica's engine reloads at once
    const { rows } = await a.pool.query<{ id: string }>(`SELECT id FROM policies WHERE environment = 'test'`);
    for (const { id } of rows) await a.rpc.deletePolicy({ environment: 'test', id }, call());
  });

  const create = (fields: Partial<policy.CreatePolicyRequest>) => a.rpc.createPolicy(draft({ environment: 'test', ...fields }), call());
  const ref = (p: policy.Policy) => ({ id: p.id, name: p.name, effect: p.effect });

  it('authorizes enforced calls like Simulate and records each denial as authz.denied', async () => {
    const p = await create({ name: 'enforced', principals: ['role:ops'], actions: ['read'], resources: ['/ops/*'] });
    const ask = (roles: string[]) =>
      a.rpc.authorize({ environment: 'test', userId: user1, roles, action: 'read', resource: '/ops/dash', ip: '', mfa: false, mfaAgeSeconds: 0 }, call());
    expect(await ask(['role_ops'])).toEqual({ allowed: true, matchedPolicies: [ref(p)], decisionId: expect.stringMatching(/^dec_/), mfaRequired: false, mfaMaxAgeSeconds: 0 });
    const before = await a.pool.query(`SELECT count(*)::int AS n FROM outbox WHERE event_type = 'authz.denied'`);
    expect((await ask([])).allowed).toBe(false);
    const { rows } = await a.pool.query(`SELECT payload FROM outbox WHERE event_type = 'authz.denied' ORDER BY seq DESC LIMIT 1`);
    expect((await a.pool.query(`SELECT count(*)::int AS n FROM outbox WHERE event_type = 'authz.denied'`)).rows[0].n).toBe(before.rows[0].n + 1);
    expect(rows[0].payload).toMatchObject({ environment: 'test', result: 'failure', actor: { id: user1, type: 'user' }, target: { id: '/ops/dash', type: 'resource' } });
    await a.rpc.deletePolicy({ environment: 'test', id: p.id }, call());
  });

  it('answers mfaRequired on a denial that an MFA completed just now would allow, with the smallest max age', async () => {
    const any = await create({ name: 'stepup any', principals: ['*'], actions: ['read'], resources: ['/stepup/*'], conditions: { mfa: { required: true } } });
    const recent = await create({ name: 'stepup recent', principals: ['role:ops'], actions: ['read'], resources: ['/stepup/*'], conditions: { mfa: { options: { maxAgeSeconds: 300 } } } });
    const recenter = await create({ name: 'stepup recenter', principals: ['role:ops'], actions: ['read'], resources: ['/stepup/ops/*'], conditions: { mfa: { options: { maxAgeSeconds: 60 } } } });
    const ask = (over: Partial<policy.AuthorizeRequest>) =>
      a.rpc.authorize({ environment: 'test', userId: user1, roles: [], action: 'read', resource: '/stepup/doc', ip: '', mfa: false, mfaAgeSeconds: 0, ...over }, call());
    // no MFA: the policy without a max age makes the difference
    expect(await ask({})).toMatchObject({ allowed: false, matchedPolicies: [], mfaRequired: true, mfaMaxAgeSeconds: 0 });
    const { rows } = await a.pool.query(`SELECT payload FROM outbox WHERE event_type = 'authz.denied' ORDER BY seq DESC LIMIT 1`);
    expect(JSON.parse(rows[0].payload.metadataJson as string)).toMatchObject({ action: 'read', mfaRequired: true });
    expect(await ask({ mfa: true, mfaAgeSeconds: 100000 })).toMatchObject({ allowed: true, matchedPolicies: [ref(any)], mfaRequired: false, mfaMaxAgeSeconds: 0 });
    // an ops user: all three need MFA, two with a max age; the smallest one of those that would allow it
    expect(await ask({ roles: ['role_ops'], resource: '/stepup/ops/x' })).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 60 });
    expect(await ask({ roles: ['role_ops'], resource: '/stepup/ops/x', mfa: true, mfaAgeSeconds: 200 })).toMatchObject({
      allowed: true,
      matchedPolicies: [ref(any), ref(recent)].sort((x, y) => (x.id < y.id ? -1 : 1)),
      mfaRequired: false,
    });
    // without the policy that takes any MFA: an MFA too old for the 300 s policy
    await a.rpc.deletePolicy({ environment: 'test', id: any.id }, call());
    expect(await ask({ roles: ['role_ops'], mfa: true, mfaAgeSeconds: 400 })).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 300 });
    // a denial an MFA cannot lift: no step-up
    expect(await ask({ resource: '/elsewhere' })).toMatchObject({ allowed: false, mfaRequired: false, mfaMaxAgeSeconds: 0 });
    const deny = await create({ name: 'stepup deny', effect: 'deny', principals: ['role:ops'], actions: ['read'], resources: ['/stepup/*'] });
    expect(await ask({ roles: ['role_ops'] })).toMatchObject({ allowed: false, matchedPolicies: [ref(deny)], mfaRequired: false });
    expect(await fields(ask({ mfa: true, mfaAgeSeconds: -1 }))).toEqual(['mfaAgeSeconds']);
    for (const p of [recent, recenter, deny]) await a.rpc.deletePolicy({ environment: 'test', id: p.id }, call());
  });

  it('denies by default, with no matched policies and an integer evaluation time', async () => {
    const result = await a.rpc.simulate(sim({ action: 'anything', resource: '/nothing' }));
    expect(result).toEqual({
      allowed: false,
      effect: 'deny',
      matchedPolicies: [],
      evaluationTimeMs: expect.any(Number),
      decisionId: expect.stringMatching(/^dec_/),
      explanations: [],
      notMatchedCount: 0,
      mfaRequired: false,
      mfaMaxAgeSeconds: 0,
      reason: 'no policy allows it',
    });
    expect(Number.isInteger(result.evaluationTimeMs)).toBe(true);
    expect(result.evaluationTimeMs).toBeGreaterThanOrEqual(0);
  });

  it('matches role:<name> against the role_<name> the user holds, and nothing else', async () => {
    const allow = await create({ name: 'devs read docs', principals: ['role:dev'], actions: ['docs.read'], resources: ['/docs/*'] });
    expect(await a.rpc.simulate(sim({ action: 'docs.read', resource: '/docs/a/b', roles: ['role_dev'] }))).toMatchObject({
      allowed: true,
      effect: 'allow',
      matchedPolicies: [ref(allow)],
    });
    for (const req of [
      sim({ action: 'docs.read', resource: '/docs/a', roles: ['role_qa'] }),
      sim({ action: 'docs.read', resource: '/docs/a', roles: ['dev'] }),
      sim({ action: 'docs.read', resource: '/docs', roles: ['role_dev'] }), // /docs/* is strictly below /docs
      sim({ action: 'docs.write', resource: '/docs/a', roles: ['role_dev'] }),
    ]) {
      expect(await a.rpc.simulate(req)).toMatchObject({ allowed: false, effect: 'deny', matchedPolicies: [] });
    }
  });

  it('lets a matching deny override every allow, listing denies first', async () => {
    const allow = await create({ name: 'everyone reads reports', principals: ['*'], actions: ['reports.read'], resources: ['/reports/*'] });
    const deny = await create({
      name: 'not user2',
      effect: 'deny',
      principals: [`user:${user2}`],
      actions: ['reports.read', 'reports.write'],
      resources: ['/reports/secret'],
    });
    expect(await a.rpc.simulate(sim({ principal: `user:${user2}`, action: 'reports.read', resource: '/reports/secret' }))).toMatchObject({
      allowed: false,
      effect: 'deny',
      matchedPolicies: [ref(deny), ref(allow)],
    });
    expect(await a.rpc.simulate(sim({ principal: `user:${user1}`, action: 'reports.read', resource: '/reports/secret' }))).toMatchObject({
      allowed: true,
      effect: 'allow',
      matchedPolicies: [ref(allow)],
    });
  });

  it('replaces ${self} with the acting user id', async () => {
    const self = await create({ name: 'own keys', principals: ['user:${self}'], actions: ['self.update'], resources: ['/users/${self}/*'] });
    expect(await a.rpc.simulate(sim({ action: 'self.update', resource: `/users/${user1}/keys` }))).toMatchObject({
      allowed: true,
      matchedPolicies: [ref(self)],
    });
    expect(await a.rpc.simulate(sim({ action: 'self.update', resource: `/users/${user2}/keys` }))).toMatchObject({
      allowed: false,
      matchedPolicies: [],
    });
  });

  it('holds an ip allowlist only for a client ip inside one of its CIDRs', async () => {
    const net = await create({
      name: 'office only',
      principals: ['*'],
      actions: ['net.read'],
      resources: ['*'],
      conditions: { ip: { allowlist: ['10.9.9.9/8', '2001:db8::/32'] } },
    });
    const decide = (ip: string) => a.rpc.simulate(sim({ action: 'net.read', resource: '/anything', ip }));
    expect(await decide('10.1.2.3')).toMatchObject({ allowed: true, matchedPolicies: [ref(net)] });
    expect(await decide('::ffff:10.1.2.3')).toMatchObject({ allowed: true });
    expect(await decide('2001:db8:1::7')).toMatchObject({ allowed: true });
    for (const ip of ['11.0.0.1', '192.168.0.1', '2001:db9::1', '']) {
      expect(await decide(ip)).toMatchObject({ allowed: false, effect: 'deny', matchedPolicies: [] });
    }
  });

  it('holds an mfa condition for a request with a recent enough MFA; says why in reason; explains it', async () => {
    const mfa = await create({ name: 'mfa docs', principals: ['*'], actions: ['mfa.read'], resources: ['*'], conditions: { mfa: { options: { maxAgeSeconds: 300 } } } });
    const decide = (over: Partial<policy.SimulateRequest>) => a.rpc.simulate(sim({ action: 'mfa.read', resource: '/doc', ...over }));
    expect(await decide({ mfa: true, mfaAgeSeconds: 300 })).toMatchObject({ allowed: true, matchedPolicies: [ref(mfa)], mfaRequired: false, reason: 'allowed by mfa docs' });
    expect(await decide({ mfa: true })).toMatchObject({ allowed: true, reason: 'allowed by mfa docs' });
    const old = await decide({ mfa: true, mfaAgeSeconds: 301, explain: true });
    expect(old).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 300, reason: 'denied: requires MFA within 300 s' });
    expect(old.explanations.find((e) => e.policyId === mfa.id)).toEqual({
      policyId: mfa.id,
      name: 'mfa docs',
      effect: 'allow',
      failed: 'condition',
      condition: 'mfa.maxAgeSeconds',
      expected: ['300'],
      actual: '301',
      actualPrincipals: [],
    });
    const none = await decide({ explain: true, mfaAgeSeconds: 5 });
    expect(none).toMatchObject({ allowed: false, mfaRequired: true, reason: 'denied: requires MFA within 300 s' });
    expect(none.explanations.find((e) => e.policyId === mfa.id)).toMatchObject({ condition: 'mfa', expected: ['300'], actual: undefined });
    await a.rpc.updatePolicy({ environment: 'test', id: mfa.id, conditions: { mfa: { required: true } } }, call());
    expect(await decide({})).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 0, reason: 'denied: requires MFA' });
    const deny = await create({ name: 'mfa deny', effect: 'deny', principals: ['*'], actions: ['mfa.read'], resources: ['/secret'] });
    expect(await decide({ resource: '/secret', mfa: true })).toMatchObject({ allowed: false, mfaRequired: false, reason: 'denied by policy mfa deny' });
    expect(await fields(decide({ mfa: true, mfaAgeSeconds: -5 }))).toEqual(['mfaAgeSeconds']);
    for (const p of [mfa, deny]) await a.rpc.deletePolicy({ environment: 'test', id: p.id }, call());
  });

  it('sees its own replica writes at once: update and delete change the next decision', async () => {
    const p = await create({ name: 'toggle', principals: ['*'], actions: ['toggle'], resources: ['/t'] });
    const decide = () => a.rpc.simulate(sim({ action: 'toggle', resource: '/t' }));
    expect((await decide()).allowed).toBe(true);
    await a.rpc.updatePolicy({ environment: 'test', id: p.id, effect: 'deny' }, call());
    expect(await decide()).toMatchObject({ allowed: false, effect: 'deny', matchedPolicies: [{ id: p.id, name: 'toggle', effect: 'deny' }] });
    await a.rpc.deletePolicy({ environment: 'test', id: p.id }, call());
    expect(await decide()).toMatchObject({ allowed: false, matchedPolicies: [] });
  });

  it('uses only the policies of its environment', async () => {
    await a.rpc.createPolicy(draft({ environment: 'live', name: 'live only', principals: ['*'], actions: ['iso'], resources: ['*'] }), call());
    expect((await a.rpc.simulate(sim({ environment: 'live', action: 'iso' }))).allowed).toBe(true);
    expect(await a.rpc.simulate(sim({ environment: 'test', action: 'iso' }))).toMatchObject({ allowed: false, matchedPolicies: [] });
  });

  describe('drafts and explanations', () => {
    const drafted = (over: Partial<policy.DraftPolicy> = {}): policy.DraftPolicy => ({
      id: '',
      name: 'draft',
      description: '',
      effect: 'allow',
      principals: ['*'],
      actions: ['draft.read'],
      resources: ['/drafts/*'],
      conditions: undefined,
      ...over,
    });

    it('merges drafts with the stored policies (draft_<index> ids) and stores nothing', async () => {
      const stored = await create({ name: 'stored reader', principals: ['*'], actions: ['draft.read'], resources: ['/drafts/*'] });
      const policiesBefore = (await a.pool.query(`SELECT count(*)::int AS n FROM policies`)).rows[0].n;
      const outboxBefore = (await a.pool.query(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n;
      const result = await a.rpc.simulate(
        sim({ action: 'draft.read', resource: '/drafts/a', policies: [drafted({ name: 'no one', effect: 'deny', principals: [`user:${user1}`] }), drafted({ name: 'unused', actions: ['other'] })] }),
      );
      expect(result).toMatchObject({
        allowed: false,
        effect: 'deny',
        matchedPolicies: [{ id: 'draft_0', name: 'no one', effect: 'deny' }, ref(stored)],
        explanations: [],
        notMatchedCount: 0,
      });
      expect((await a.pool.query(`SELECT count(*)::int AS n FROM policies`)).rows[0].n).toBe(policiesBefore);
      expect((await a.pool.query(`SELECT count(*)::int AS n FROM outbox`)).rows[0].n).toBe(outboxBefore);
      // the stored decision is unchanged afterwards
      expect(await a.rpc.simulate(sim({ action: 'draft.read', resource: '/drafts/a' }))).toMatchObject({ allowed: true, matchedPolicies: [ref(stored)] });
    });

    it('replace evaluates the drafts only; a draft with a stored id stands in for that policy under merge', async () => {
      const stored = await create({ name: 'stored writer', principals: ['*'], actions: ['draft.write'], resources: ['/drafts/*'] });
      const write = { action: 'draft.write', resource: '/drafts/a' };
      expect(await a.rpc.simulate(sim({ ...write, mode: 'replace', policies: [drafted({ id: 'draft_mine' })] }))).toMatchObject({ allowed: false, matchedPolicies: [] });
      expect(await a.rpc.simulate(sim({ ...write, mode: 'replace', policies: [drafted({ id: 'draft_mine', actions: ['draft.write'] })] }))).toMatchObject({
        allowed: true,
        matchedPolicies: [{ id: 'draft_mine', name: 'draft', effect: 'allow' }],
      });
      // "what if I changed it": the edited copy replaces the stored one in this simulation only
      const edited = drafted({ id: stored.id, name: 'stored writer, edited', effect: 'deny', actions: ['draft.write'] });
      expect(await a.rpc.simulate(sim({ ...write, mode: 'merge', policies: [edited] }))).toMatchObject({
        allowed: false,
        matchedPolicies: [{ id: stored.id, name: 'stored writer, edited', effect: 'deny' }],
      });
      expect(await a.rpc.simulate(sim(write))).toMatchObject({ allowed: true, matchedPolicies: [ref(stored)] });
    });

    it('explains every policy that did not match, drafts first, with the values compared', async () => {
      const office = await create({
        name: 'explain office',
        principals: ['*'],
        actions: ['explain.read'],
        resources: ['/explain/*'],
        conditions: { ip: { allowlist: ['10.0.0.0/8'] } },
      });
      const result = await a.rpc.simulate(
        sim({
          action: 'explain.read',
          resource: '/explain/doc',
          ip: '192.0.2.1',
          roles: ['role_dev'],
          explain: true,
          policies: [drafted({ name: 'ops only', principals: ['role:ops'], actions: ['explain.read'], resources: ['/explain/*'] })],
        }),
      );
      expect(result.allowed).toBe(false);
      expect(result.explanations[0]).toEqual({
        policyId: 'draft_0',
        name: 'ops only',
        effect: 'allow',
        failed: 'principal',
        condition: '',
        expected: ['role:ops'],
        actual: undefined,
        actualPrincipals: [`user:${user1}`, 'role:dev'],
      });
      expect(result.explanations.find((e) => e.policyId === office.id)).toEqual({
        policyId: office.id,
        name: 'explain office',
        effect: 'allow',
        failed: 'condition',
        condition: 'ip.allowlist',
        expected: ['10.0.0.0/8'],
        actual: '192.0.2.1',
        actualPrincipals: [],
      });
      const stored = (await a.pool.query(`SELECT count(*)::int AS n FROM policies WHERE environment = 'test'`)).rows[0].n;
      expect(result.notMatchedCount).toBe(stored + 1);
      expect(result.explanations).toHaveLength(Math.min(stored + 1, 100));
      const parts = new Map(result.explanations.map((e) => [e.policyId, e.failed]));
      expect(result.explanations.every((e) => ['principal', 'action', 'resource', 'condition'].includes(e.failed))).toBe(true);
      expect(parts.get(office.id)).toBe('condition');
      // a matching policy is not explained
      const inside = await a.rpc.simulate(sim({ action: 'explain.read', resource: '/explain/doc', ip: '10.1.1.1', explain: true }));
      expect(inside.matchedPolicies).toEqual([ref(office)]);
      expect(inside.explanations.map((e) => e.policyId)).not.toContain(office.id);
      expect(inside.notMatchedCount).toBe(stored - 1);
      // without explain: nothing
      expect(await a.rpc.simulate(sim({ action: 'explain.read', resource: '/explain/doc' }))).toMatchObject({ explanations: [], notMatchedCount: 0 });
    });

    it('simulates drafts with mfa conditions: mfaRequired and the max age come from the drafts that would allow it', async () => {
      const stepUp = await a.rpc.simulate(
        sim({
          action: 'draft.read',
          resource: '/drafts/mfa',
          mode: 'replace',
          policies: [drafted({ conditions: { mfa: { options: { maxAgeSeconds: 120 } } } }), drafted({ name: 'any mfa', conditions: { mfa: { options: {} } } })],
        }),
      );
      expect(stepUp).toMatchObject({ allowed: false, mfaRequired: true, mfaMaxAgeSeconds: 120, reason: 'denied: requires MFA within 120 s' });
      const allowed = await a.rpc.simulate(sim({ action: 'draft.read', resource: '/drafts/mfa', mode: 'replace', mfa: true, mfaAgeSeconds: 500, policies: [drafted({ name: 'any mfa', conditions: { mfa: { required: true } } })] }));
      expect(allowed).toMatchObject({ allowed: true, mfaRequired: false, reason: 'allowed by any mfa' });
      expect(await fields(a.rpc.simulate(sim({ policies: [drafted({ conditions: { mfa: { required: false } } }), drafted({ conditions: { mfa: { options: { maxAgeSeconds: 0 } } } })] })))).toEqual([
        'policies[0].conditions.mfa',
        'policies[1].conditions.mfa.maxAgeSeconds',
      ]);
    });

    it('names every faulty draft field (policies[<i>].<field>), the mode and the draft limit', async () => {
      expect(
        await fields(
          a.rpc.simulate(
            sim({
              mode: 'upsert',
              policies: [drafted(), drafted({ principals: ['role:ok', 'group:x'], effect: 'permit' }), drafted({ id: 'pol_nope', conditions: { ip: { allowlist: ['10.0.0.0/33'] } } })],
            }),
          ),
        ),
      ).toEqual(['mode', 'policies[1].effect', 'policies[1].principals[1]', 'policies[2].conditions.ip.allowlist[0]', 'policies[2].id']);
      expect(await fields(a.rpc.simulate(sim({ policies: Array.from({ length: 101 }, () => drafted()) })))).toEqual(['policies']);
    });

    it('answers concurrent draft and stored-only simulations each from its own policy set', async () => {
      const stored = await create({ name: 'concurrent', principals: ['*'], actions: ['conc.read'], resources: ['/conc'] });
      const plain = () => a.rpc.simulate(sim({ action: 'conc.read', resource: '/conc' }));
      const replaced = () => a.rpc.simulate(sim({ action: 'conc.read', resource: '/conc', mode: 'replace', policies: [drafted({ effect: 'deny', actions: ['conc.read'], resources: ['/conc'] })] }));
      const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? replaced() : plain())));
      results.forEach((r, i) =>
        expect(r.matchedPolicies).toEqual(i % 2 ? [{ id: 'draft_0', name: 'draft', effect: 'deny' }] : [ref(stored)]),
      );
    });
  });

  it('validates the request, naming the field', async () => {
    expect(await fields(a.rpc.simulate(sim({ principal: 'role:dev' })))).toEqual(['principal']);
    expect(await fields(a.rpc.simulate(sim({ principal: 'user:bob' })))).toEqual(['principal']);
    expect(await fields(a.rpc.simulate(sim({ principal: user1 })))).toEqual(['principal']);
    expect(await fields(a.rpc.simulate(sim({ action: '', resource: '' })))).toEqual(['action', 'resource']);
    expect(await fields(a.rpc.simulate(sim({ ip: 'not-an-ip' })))).toEqual(['ip']);
  });
});

describe('replicas', () => {
  it('converge on another replica after create, update and delete (LISTEN/NOTIFY)', async () => {
    const b = await replica();
    extra.push(b);
    const decideOnB = () => b.rpc.simulate(sim({ environment: 'live', action: 'conv.read', resource: '/conv' }));
    expect((await decideOnB()).allowed).toBe(false); // B has loaded live before the change

    const p = await a.rpc.createPolicy(draft({ name: 'conv', principals: ['*'], actions: ['conv.read'], resources: ['/conv'] }), call());
    await until(async () => (await decideOnB()).allowed);
    expect((await decideOnB()).matchedPolicies).toEqual([{ id: p.id, name: 'conv', effect: 'allow' }]);

    await a.rpc.updatePolicy({ environment: 'live', id: p.id, effect: 'deny' }, call());
    await until(async () => (await decideOnB()).matchedPolicies[0]?.effect === 'deny');
    expect((await decideOnB()).allowed).toBe(false);

    await a.rpc.deletePolicy({ environment: 'live', id: p.id }, call());
    await until(async () => (await decideOnB()).matchedPolicies.length === 0);
  });

  it('reload on every decision while the LISTEN connection is down, so they are never stale', async () => {
    // a replica whose LISTEN connection cannot be made (nothing listens on port 1), with a working pool
    const down = await replica(db.url, 'postgres://127.0.0.1:1/none');
    extra.push(down);
    expect(down.runtime.feed.live).toBe(false);
    const decide = () => down.rpc.simulate(sim({ environment: 'live', action: 'down.read', resource: '/down' }));
    expect((await decide()).allowed).toBe(false);
    const p = await a.rpc.createPolicy(draft({ name: 'down', principals: ['*'], actions: ['down.read'], resources: ['/down'] }), call());
    expect((await decide()).allowed).toBe(true); // no wait: the decision itself reloaded
    await a.rpc.deletePolicy({ environment: 'live', id: p.id }, call());
    expect((await decide()).allowed).toBe(false);
  });

  it('reconnect after the LISTEN connection dies, resynchronise, and converge again', async () => {
    const b = await replica();
    extra.push(b);
    const decideOnB = () => b.rpc.simulate(sim({ environment: 'live', action: 'rec.read', resource: '/rec' }));
    expect((await decideOnB()).allowed).toBe(false);
    const killed = await a.pool.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN secsvc_policy_changes' AND datname = current_database()`,
    );
    expect(killed.rowCount).toBeGreaterThanOrEqual(2); // A's and B's (and the first convergence replica's)
    // each feed reconnects by itself (a second successful connection) and resynchronises its engines
    await until(async () => b.runtime.feed.connections === 2 && b.runtime.feed.live && a.runtime.feed.connections === 2 && a.runtime.feed.live, 5000);
    await a.rpc.createPolicy(draft({ name: 'rec', principals: ['*'], actions: ['rec.read'], resources: ['/rec'] }), call());
    await until(async () => (await decideOnB()).allowed);
  });
});
