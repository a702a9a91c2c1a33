// The policy semantics of issue 5 through the compiled module (apps/policy/rego/policy.wasm) and the Node
// wrapper: every rule, the decision shape and ordering, the indexed data document, drafts and explanations.
import fs from 'node:fs';
import path from 'node:path';
import { DEFAULT_WASM_PATH, EXPLAIN_LIMIT, MAX_INDEX_PAIRS_PER_POLICY, buildDataDocument, loadEngine, principalKey } from '../src/engine';
import type { AuthzRequest, Decision, EnginePolicy, PolicyEngine } from '../src/engine';

const alice = { id: 'user_alice', roles: ['role_admin', 'role_dev'] };
const bob = { id: 'user_bob', roles: [] as string[] };

function request(principal: AuthzRequest['principal'], action: string, resource: string, ip?: string | null): AuthzRequest {
  return { principal, action, resource, context: ip === undefined ? {} : { ip } };
}

function policy(id: string, fields: Partial<EnginePolicy> = {}): EnginePolicy {
  return {
    id,
    name: `name of ${id}`,
    effect: 'allow',
    principals: ['*'],
    actions: ['*'],
    resources: ['*'],
    conditions: {},
    ...fields,
  };
}

let engine: PolicyEngine;

beforeAll(async () => {
  engine = await loadEngine();
});

function decide(policies: EnginePolicy[], req: AuthzRequest): Decision {
  engine.setPolicies(policies);
  return engine.evaluate(req);
}

/** Whether a single allow policy with these fields matches the request. */
function matches(fields: Partial<EnginePolicy>, req: AuthzRequest): boolean {
  const decision = decide([policy('pol_1', fields)], req);
  return decision.matchedPolicies.length === 1;
}

describe('loading', () => {
  test('the default path points at the committed module, from src/ as from dist/', () => {
    expect(DEFAULT_WASM_PATH).toBe(path.join(__dirname, '..', 'rego', 'policy.wasm'));
    expect(fs.statSync(DEFAULT_WASM_PATH).size).toBeGreaterThan(1000);
  });

  test('a fresh engine has no policies and denies everything', async () => {
    const fresh = await loadEngine();
    expect(fresh.size).toBe(0);
    expect(fresh.evaluate(request(alice, 'read', '/x'))).toEqual({ allowed: false, effect: 'deny', matchedPolicies: [] });
  });

  test('a file that is not a wasm module is refused', async () => {
    await expect(loadEngine({ wasmPath: path.join(__dirname, 'engine.test.ts') })).rejects.toThrow();
  });
});

describe('principals', () => {
  test.each([
    ['*', alice, true],
    ['*', bob, true],
    ['user:${self}', alice, true],
    ['user:${self}', bob, true],
    ['user:user_bob', bob, true],
    ['user:user_bob', alice, false],
    ['user:user_bo', bob, false],
    ['user_bob', bob, false],
    ['role:admin', alice, true],
    ['role:dev', alice, true],
    ['role:admin', bob, false],
    ['role:adm', alice, false],
    ['role:role_admin', alice, false],
    ['role_admin', alice, false],
  ])('%s against %j → %s', (pattern, principal, expected) => {
    expect(matches({ principals: [pattern] }, request(principal, 'read', '/x'))).toBe(expected);
  });

  test('role:<name> needs the role_ prefix on the user side', () => {
    expect(matches({ principals: ['role:admin'] }, request({ id: 'u', roles: ['admin'] }, 'read', '/x'))).toBe(false);
  });

  test('any of several patterns; none when the list is empty', () => {
    expect(matches({ principals: ['user:nobody', 'role:dev'] }, request(alice, 'read', '/x'))).toBe(true);
    expect(matches({ principals: ['user:nobody', 'role:dev'] }, request(bob, 'read', '/x'))).toBe(false);
    expect(matches({ principals: [] }, request(alice, 'read', '/x'))).toBe(false);
  });
});

describe('actions', () => {
  test.each([
    [['read'], 'read', true],
    [['read'], 'delete', false],
    [['Read'], 'read', false],
    [['rea'], 'read', false],
    [['*'], 'read', true],
    [['*'], 'simulate', true],
    [['create', 'update'], 'update', true],
    [['create', 'update'], 'read', false],
  ])('%j against %s → %s', (actions, action, expected) => {
    expect(matches({ actions }, request(bob, action, '/x'))).toBe(expected);
  });
});

describe('resources', () => {
  test.each([
    ['/a/b', '/a/b', true],
    ['/a/b', '/a/b/c', false],
    ['/a/b', '/a', false],
    ['/a/b', '/a/b/', false],
    ['*', '/', true],
    ['*', '/a/b/c', true],
    ['/a/*', '/a/b', true],
    ['/a/*', '/a/b/c/d', true],
    ['/a/*', '/a', false],
    ['/a/*', '/a/', false],
    ['/a/*', '/ab', false],
    ['/a/*', '/ab/c', false],
    ['/a/*', '/b/a/c', false],
    ['/*', '/a', true],
    ['/*', '/', false],
    ['/a/b/*', '/a/b/c', true],
    ['/a/b/*', '/a/b', false],
  ])('%s against %s → %s', (pattern, resource, expected) => {
    expect(matches({ resources: [pattern] }, request(bob, 'read', resource))).toBe(expected);
  });

  test.each([
    ['/users/${self}', alice, '/users/user_alice', true],
    ['/users/${self}', bob, '/users/user_bob', true],
    ['/users/${self}', bob, '/users/user_alice', false],
    ['/users/${self}', bob, '/users/${self}', false],
    ['/users/${self}/keys/*', bob, '/users/user_bob/keys/key_1', true],
    ['/users/${self}/keys/*', bob, '/users/user_bob/keys', false],
    ['/users/${self}/keys/*', alice, '/users/user_bob/keys/key_1', false],
    ['/users/${self}/*', bob, '/users/user_bob/sessions', true],
    ['/users/${self}/*', bob, '/users/user_bob', false],
    ['/${self}/${self}', bob, '/user_bob/user_bob', true],
    // Only a whole segment is replaced.
    ['/users/x${self}', bob, '/users/xuser_bob', false],
    ['/users/x${self}', bob, '/users/x${self}', true],
  ])('${self}: %s for %j against %s → %s', (pattern, principal, resource, expected) => {
    expect(matches({ resources: [pattern] }, request(principal, 'read', resource))).toBe(expected);
  });

  test('any of several patterns', () => {
    expect(matches({ resources: ['/a', '/b/*'] }, request(bob, 'read', '/b/c'))).toBe(true);
    expect(matches({ resources: ['/a', '/b/*'] }, request(bob, 'read', '/b'))).toBe(false);
  });
});

describe('conditions', () => {
  const allowlist = (cidrs: string[]): Partial<EnginePolicy> => ({ conditions: { ip: { allowlist: cidrs } } });

  test('no conditions: {}, null or absent always hold', () => {
    expect(matches({ conditions: {} }, request(bob, 'read', '/x'))).toBe(true);
    expect(matches({ conditions: null }, request(bob, 'read', '/x'))).toBe(true);
    expect(matches({ conditions: undefined }, request(bob, 'read', '/x'))).toBe(true);
  });

  test.each([
    [['10.0.0.0/8', '192.168.1.0/24'], '10.1.2.3', true],
    [['10.0.0.0/8', '192.168.1.0/24'], '192.168.1.255', true],
    [['10.0.0.0/8', '192.168.1.0/24'], '192.168.2.1', false],
    [['203.0.113.7/32'], '203.0.113.7', true],
    [['203.0.113.7/32'], '203.0.113.8', false],
    [['2001:db8::/32'], '2001:db8::1', true],
    [['2001:db8::/32'], '2001:db8:ffff::1', true],
    [['2001:db8::/32'], '2001:db9::1', false],
    [['2001:db8::/32'], '10.0.0.1', false],
    [['::/0'], '10.0.0.1', false],
    [['0.0.0.0/0'], '2001:db8::1', false],
    // An IPv4-mapped address written ::ffff:a.b.c.d is that IPv4 address; other spellings match nothing.
    [['10.0.0.0/8'], '::ffff:10.1.2.3', true],
    [['10.0.0.0/8'], '::FFFF:10.1.2.3', true],
    [['::/0'], '::ffff:10.1.2.3', false],
    [['::ffff:0:0/96'], '10.1.2.3', false],
    [['10.0.0.0/8', '::/0', '::ffff:0:0/96'], '::ffff:a01:203', false],
    [['10.0.0.0/8', '::/0', '::ffff:0:0/96'], '0:0:0:0:0:ffff:10.1.2.3', false],
    // The WebAssembly parser alone would accept a trailing single colon.
    [['::/0'], '::ffff:', false],
    [['::/0'], '1::2:', false],
    [['::/0'], '1::', true],
    // No ip, an invalid one, or a CIDR given as the ip: the condition fails.
    [['0.0.0.0/0', '::/0'], undefined, false],
    [['0.0.0.0/0', '::/0'], null, false],
    [['0.0.0.0/0', '::/0'], 'not-an-ip', false],
    [['0.0.0.0/0', '::/0'], '', false],
    [['0.0.0.0/0', '::/0'], '10.0.0.256', false],
    [['10.0.0.0/8'], '10.1.0.0/16', false],
    [[], '10.0.0.1', false],
  ])('ip.allowlist %j with ip %j → %s', (cidrs, ip, expected) => {
    expect(matches(allowlist(cidrs), request(bob, 'read', '/x', ip))).toBe(expected);
  });

  const withContext = (context: AuthzRequest['context']): AuthzRequest => ({ ...request(bob, 'read', '/x'), context });
  test.each([
    [true, { mfa: true }, true],
    [true, { mfa: true, mfaAgeSeconds: 86400 }, true],
    [{}, { mfa: true }, true],
    [{ maxAgeSeconds: 300 }, { mfa: true, mfaAgeSeconds: 0 }, true],
    [{ maxAgeSeconds: 300 }, { mfa: true, mfaAgeSeconds: 300 }, true],
    [{ maxAgeSeconds: 300 }, { mfa: true, mfaAgeSeconds: 301 }, false],
    [{ maxAgeSeconds: 300 }, { mfa: true }, false],
    [{ maxAgeSeconds: 300 }, { mfa: true, mfaAgeSeconds: -1 }, false],
    [true, {}, false],
    [true, { mfa: false, mfaAgeSeconds: 0 }, false],
    [{ maxAgeSeconds: 300 }, { ip: '10.0.0.1', mfaAgeSeconds: 0 }, false],
  ] as const)('mfa %j with context %j → %s', (mfa, context, expected) => {
    expect(matches({ conditions: { mfa } }, withContext(context))).toBe(expected);
  });

  test('ip and mfa must both hold', () => {
    const both: Partial<EnginePolicy> = { conditions: { ip: { allowlist: ['10.0.0.0/8'] }, mfa: true } };
    expect(matches(both, withContext({ ip: '10.0.0.1', mfa: true }))).toBe(true);
    expect(matches(both, withContext({ ip: '10.0.0.1' }))).toBe(false);
    expect(matches(both, withContext({ ip: '11.0.0.1', mfa: true }))).toBe(false);
  });

  test('every part must match', () => {
    const fields: Partial<EnginePolicy> = {
      principals: ['role:dev'],
      actions: ['update'],
      resources: ['/a/*'],
      conditions: { ip: { allowlist: ['10.0.0.0/8'] } },
    };
    expect(matches(fields, request(alice, 'update', '/a/b', '10.0.0.1'))).toBe(true);
    expect(matches(fields, request(bob, 'update', '/a/b', '10.0.0.1'))).toBe(false);
    expect(matches(fields, request(alice, 'read', '/a/b', '10.0.0.1'))).toBe(false);
    expect(matches(fields, request(alice, 'update', '/a', '10.0.0.1'))).toBe(false);
    expect(matches(fields, request(alice, 'update', '/a/b', '11.0.0.1'))).toBe(false);
  });
});

describe('decision', () => {
  test('default deny with nothing matched', () => {
    expect(decide([], request(alice, 'read', '/x'))).toEqual({ allowed: false, effect: 'deny', matchedPolicies: [] });
    expect(decide([policy('pol_1', { resources: ['/y'] })], request(alice, 'read', '/x'))).toEqual({
      allowed: false,
      effect: 'deny',
      matchedPolicies: [],
    });
  });

  test('a matching allow allows', () => {
    expect(decide([policy('pol_1')], request(alice, 'read', '/x'))).toEqual({
      allowed: true,
      effect: 'allow',
      matchedPolicies: [{ id: 'pol_1', name: 'name of pol_1', effect: 'allow' }],
    });
  });

  test('any matching deny overrides every allow', () => {
    const policies = [policy('pol_1'), policy('pol_2', { effect: 'deny', principals: ['role:dev'], actions: ['delete'], resources: ['/a/*'] })];
    expect(decide(policies, request(alice, 'delete', '/a/b'))).toEqual({
      allowed: false,
      effect: 'deny',
      matchedPolicies: [
        { id: 'pol_2', name: 'name of pol_2', effect: 'deny' },
        { id: 'pol_1', name: 'name of pol_1', effect: 'allow' },
      ],
    });
    expect(decide(policies, request(alice, 'read', '/a/b')).allowed).toBe(true);
    expect(decide(policies, request(bob, 'delete', '/a/b')).allowed).toBe(true);
  });

  test('matched lists denies first, then allows, each group sorted by id', () => {
    const policies = [
      policy('pol_c'),
      policy('pol_b', { effect: 'deny' }),
      policy('pol_a'),
      policy('pol_z', { effect: 'deny' }),
      policy('pol_d', { effect: 'deny' }),
      policy('pol_x', { principals: ['user:nobody'] }),
    ];
    const decision = decide(policies, request(bob, 'read', '/x'));
    expect(decision.matchedPolicies.map((m) => `${m.effect}:${m.id}`)).toEqual([
      'deny:pol_b',
      'deny:pol_d',
      'deny:pol_z',
      'allow:pol_a',
      'allow:pol_c',
    ]);
    expect(decision).toMatchObject({ allowed: false, effect: 'deny' });
  });

  test('setPolicies replaces the previous set', () => {
    engine.setPolicies([policy('pol_1', { effect: 'deny' })]);
    expect(engine.evaluate(request(bob, 'read', '/x')).allowed).toBe(false);
    engine.setPolicies([policy('pol_2')]);
    expect(engine.size).toBe(1);
    expect(engine.evaluate(request(bob, 'read', '/x')).matchedPolicies.map((m) => m.id)).toEqual(['pol_2']);
  });

  test('ids that are special words in JavaScript are ordinary keys', () => {
    const policies = [policy('__proto__'), policy('constructor', { effect: 'deny' }), policy('toString')];
    expect(decide(policies, request(bob, 'read', '/x')).matchedPolicies.map((m) => m.id)).toEqual([
      'constructor',
      '__proto__',
      'toString',
    ]);
  });

  test('duplicate ids are refused', () => {
    expect(() => engine.setPolicies([policy('pol_1'), policy('pol_1')])).toThrow('duplicate policy id pol_1');
  });
});

describe('the indexed data document', () => {
  test('principal keys: * and user:${self} under *, users and roles under themselves', () => {
    expect(['*', 'user:${self}', 'user:u1', 'role:dev', 'weird'].map(principalKey)).toEqual(['*', '*', 'user:u1', 'role:dev', '*']);
  });

  test('a policy is listed under each (action, principal key) pair', () => {
    const doc = buildDataDocument([policy('p1', { principals: ['role:dev', 'user:${self}'], actions: ['read', '*'] })]);
    expect(JSON.parse(JSON.stringify(doc.index))).toEqual({
      by_action_principal: {
        read: { 'role:dev': { p1: true }, '*': { p1: true } },
        '*': { 'role:dev': { p1: true }, '*': { p1: true } },
      },
      order: ['p1'],
    });
    expect(doc.policies['p1']).toEqual(policy('p1', { principals: ['role:dev', 'user:${self}'], actions: ['read', '*'] }));
  });

  test('a wide policy is listed under its actions with principal key * only', () => {
    const principals = Array.from({ length: MAX_INDEX_PAIRS_PER_POLICY + 1 }, (_, i) => `user:u${i}`);
    const doc = buildDataDocument([policy('p1', { principals, actions: ['read'] })]);
    expect(JSON.parse(JSON.stringify(doc.index))).toEqual({ by_action_principal: { read: { '*': { p1: true } } }, order: ['p1'] });
    engine.setPolicies([policy('p1', { principals, actions: ['read'] })]);
    expect(engine.evaluate(request({ id: `u${MAX_INDEX_PAIRS_PER_POLICY}`, roles: [] }, 'read', '/x')).allowed).toBe(true);
    expect(engine.evaluate(request({ id: 'someone-else', roles: [] }, 'read', '/x')).allowed).toBe(false);
  });

  test('the index carries every id in ascending order (the order explanations list stored policies in)', () => {
    const doc = buildDataDocument([policy('pol_c'), policy('pol_a'), policy('__proto__'), policy('pol_b')]);
    expect(doc.index.order).toEqual(['__proto__', 'pol_a', 'pol_b', 'pol_c']);
  });

  test('the index prunes: a document whose index lists nothing matches nothing', () => {
    engine.setDataDocument({ policies: { p1: policy('p1') }, index: { by_action_principal: {}, order: ['p1'] } });
    expect(engine.evaluate(request(bob, 'read', '/x')).matchedPolicies).toEqual([]);
  });

  test('without an index every policy is checked', () => {
    engine.setDataDocument({ policies: { p1: policy('p1'), p2: policy('p2', { actions: ['delete'] }) } });
    expect(engine.evaluate(request(bob, 'read', '/x')).matchedPolicies.map((m) => m.id)).toEqual(['p1']);
  });
});

describe('drafts (in the input, the loaded policies untouched)', () => {
  const stored = [policy('pol_docs', { actions: ['read'], resources: ['/docs/*'] }), policy('pol_secret', { effect: 'deny', principals: ['role:dev'], resources: ['/docs/secret'] })];
  const withDrafts = (req: AuthzRequest, mode: 'merge' | 'replace', drafts: EnginePolicy[]): AuthzRequest => ({ ...req, drafts: { mode, policies: drafts } });
  const ids = (d: Decision) => d.matchedPolicies.map((m) => `${m.effect}:${m.id}`);

  beforeEach(() => engine.setPolicies(stored));

  test('merge: drafts are evaluated with the stored policies (deny-overrides across both)', () => {
    const draft = policy('draft_0', { effect: 'deny', principals: ['user:user_bob'], resources: ['/docs/*'] });
    expect(ids(engine.evaluate(withDrafts(request(bob, 'read', '/docs/a'), 'merge', [draft])))).toEqual(['deny:draft_0', 'allow:pol_docs']);
    expect(ids(engine.evaluate(withDrafts(request(alice, 'read', '/docs/a'), 'merge', [draft])))).toEqual(['allow:pol_docs']);
  });

  test('replace: only the drafts count', () => {
    const draft = policy('draft_0', { actions: ['create'], resources: ['/new'] });
    expect(engine.evaluate(withDrafts(request(bob, 'read', '/docs/a'), 'replace', [draft]))).toEqual({ allowed: false, effect: 'deny', matchedPolicies: [] });
    expect(ids(engine.evaluate(withDrafts(request(bob, 'create', '/new'), 'replace', [draft])))).toEqual(['allow:draft_0']);
    expect(engine.evaluate(withDrafts(request(alice, 'delete', '/docs/secret'), 'replace', [])).matchedPolicies).toEqual([]);
  });

  test('merge: a draft with a stored id stands in for that policy', () => {
    expect(engine.evaluate(request(alice, 'read', '/docs/secret')).allowed).toBe(false);
    const edited = policy('pol_secret', { effect: 'deny', principals: ['role:dev'], resources: ['/docs/other'] });
    expect(ids(engine.evaluate(withDrafts(request(alice, 'read', '/docs/secret'), 'merge', [edited])))).toEqual(['allow:pol_docs']);
  });

  test('drafts get conditions {} when none are given, like stored policies', () => {
    const { conditions: _none, ...bare } = policy('draft_0', { resources: ['/bare'] });
    expect(ids(engine.evaluate(withDrafts(request(bob, 'read', '/bare'), 'merge', [bare])))).toEqual(['allow:draft_0']);
  });

  test('a draft simulation leaves the loaded policies as they were, for every later request', () => {
    const before = engine.evaluate(request(alice, 'read', '/docs/secret'));
    engine.evaluate(withDrafts(request(alice, 'read', '/docs/secret'), 'replace', [policy('draft_0')]));
    engine.explain(withDrafts(request(alice, 'read', '/docs/secret'), 'merge', [policy('pol_secret')]));
    expect(engine.evaluate(request(alice, 'read', '/docs/secret'))).toEqual(before);
    expect(engine.size).toBe(stored.length);
  });
});

describe('explanations (entry point explained)', () => {
  test('the decision is the same as evaluate gives; matched policies get nothing extra', () => {
    engine.setPolicies([policy('pol_1', { actions: ['read'] }), policy('pol_2', { actions: ['delete'] })]);
    const req = request(alice, 'read', '/x');
    const { notMatched, notMatchedCount, ...decision } = engine.explain(req);
    expect(decision).toEqual(engine.evaluate(req));
    expect(notMatched.map((e) => e.id)).toEqual(['pol_2']);
    expect(notMatchedCount).toBe(1);
  });

  test('each part, with the values compared', () => {
    engine.setPolicies([
      policy('pol_p', { principals: ['role:ops', 'user:user_carol'] }),
      policy('pol_a', { effect: 'deny', actions: ['create', 'update'] }),
      policy('pol_r', { resources: ['/a/*', '/users/${self}'] }),
      policy('pol_c', { conditions: { ip: { allowlist: ['10.0.0.0/8', '2001:db8::/32'] } } }),
    ]);
    expect(engine.explain(request(alice, 'read', '/a', '192.0.2.1')).notMatched).toEqual([
      { id: 'pol_c', name: 'name of pol_c', effect: 'allow', failed: 'condition', condition: 'ip.allowlist', expected: ['10.0.0.0/8', '2001:db8::/32'], actual: '192.0.2.1' },
      { id: 'pol_r', name: 'name of pol_r', effect: 'allow', failed: 'resource', condition: null, expected: ['/a/*', '/users/${self}'], actual: '/a' },
      { id: 'pol_a', name: 'name of pol_a', effect: 'deny', failed: 'action', condition: null, expected: ['create', 'update'], actual: 'read' },
      { id: 'pol_p', name: 'name of pol_p', effect: 'allow', failed: 'principal', condition: null, expected: ['role:ops', 'user:user_carol'], actual: ['user:user_alice', 'role:admin', 'role:dev'] },
    ]);
    // no ip: the condition compares against null
    expect(engine.explain(request(alice, 'read', '/a')).notMatched[0]).toMatchObject({ id: 'pol_c', failed: 'condition', actual: null });
  });

  test('mfa conditions: no MFA, or an MFA too long ago, with the max age and the request age as decimal strings', () => {
    engine.setPolicies([policy('pol_m', { conditions: { mfa: true } }), policy('pol_n', { conditions: { mfa: { maxAgeSeconds: 300 } } })]);
    const why = (context: AuthzRequest['context']) => engine.explain({ ...request(bob, 'read', '/x'), context }).notMatched;
    expect(why({})).toEqual([
      { id: 'pol_m', name: 'name of pol_m', effect: 'allow', failed: 'condition', condition: 'mfa', expected: [], actual: null },
      { id: 'pol_n', name: 'name of pol_n', effect: 'allow', failed: 'condition', condition: 'mfa', expected: ['300'], actual: null },
    ]);
    expect(why({ mfa: true, mfaAgeSeconds: 900 })).toEqual([
      { id: 'pol_n', name: 'name of pol_n', effect: 'allow', failed: 'condition', condition: 'mfa.maxAgeSeconds', expected: ['300'], actual: '900' },
    ]);
    expect(why({ mfa: true })).toEqual([expect.objectContaining({ id: 'pol_n', condition: 'mfa.maxAgeSeconds', actual: null })]);
    expect(why({ mfa: true, mfaAgeSeconds: 300 })).toEqual([]);
  });

  test('storedPolicy gives a loaded policy by id (drafts are not loaded)', () => {
    const p = policy('pol_s', { conditions: { mfa: { maxAgeSeconds: 60 } } });
    engine.setPolicies([p]);
    expect(engine.storedPolicy('pol_s')).toEqual(p);
    expect(engine.storedPolicy('pol_x')).toBeUndefined();
    expect(engine.storedPolicy('__proto__')).toBeUndefined();
    expect(engine.storedPolicy('toString')).toBeUndefined();
  });

  test('the first failing part, in the order principal, action, resource, condition', () => {
    const all: Partial<EnginePolicy> = { principals: ['role:ops'], actions: ['delete'], resources: ['/y'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } };
    const failedOf = (fields: Partial<EnginePolicy>) => {
      engine.setPolicies([policy('pol_1', { ...all, ...fields })]);
      return engine.explain(request(bob, 'read', '/x', '192.0.2.1')).notMatched.map((e) => e.failed);
    };
    expect(failedOf({})).toEqual(['principal']);
    expect(failedOf({ principals: ['*'] })).toEqual(['action']);
    expect(failedOf({ principals: ['*'], actions: ['read'] })).toEqual(['resource']);
    expect(failedOf({ principals: ['*'], actions: ['read'], resources: ['/x'] })).toEqual(['condition']);
    expect(failedOf({ principals: ['*'], actions: ['read'], resources: ['/x'], conditions: {} })).toEqual([]);
  });

  test('drafts are explained first and only policies in play are explained', () => {
    engine.setPolicies([policy('pol_a', { resources: ['/a'] }), policy('pol_b', { resources: ['/b'] })]);
    const drafts = [policy('draft_0', { resources: ['/d'] }), policy('pol_b', { resources: ['/edited'] })];
    const merged = engine.explain({ ...request(bob, 'read', '/x'), drafts: { mode: 'merge', policies: drafts } });
    expect(merged.notMatched.map((e) => [e.id, e.expected])).toEqual([
      ['draft_0', ['/d']],
      ['pol_b', ['/edited']],
      ['pol_a', ['/a']],
    ]);
    const replaced = engine.explain({ ...request(bob, 'read', '/x'), drafts: { mode: 'replace', policies: drafts } });
    expect(replaced.notMatched.map((e) => e.id)).toEqual(['draft_0', 'pol_b']);
    expect(replaced.notMatchedCount).toBe(2);
  });

  test(`lists at most EXPLAIN_LIMIT (${EXPLAIN_LIMIT}), nearest misses first, and counts them all`, () => {
    const many = Array.from({ length: 150 }, (_, i) => policy(`pol_${String(i).padStart(3, '0')}`, { principals: ['role:none'] }));
    many.push(policy('pol_zzz', { resources: ['/elsewhere'] }));
    engine.setPolicies(many);
    const explained = engine.explain(request(bob, 'read', '/x'));
    expect(explained.notMatched).toHaveLength(EXPLAIN_LIMIT);
    expect(explained.notMatchedCount).toBe(151);
    expect(explained.notMatched[0]).toMatchObject({ id: 'pol_zzz', failed: 'resource' });
    expect(explained.notMatched[1]!.id).toBe('pol_000');
    expect(explained.notMatched[EXPLAIN_LIMIT - 1]!.id).toBe(`pol_0${EXPLAIN_LIMIT - 2}`);
  });

  test('explains every stored policy, indexed or not', () => {
    const policies = [policy('pol_1', { principals: ['role:ops'] }), policy('pol_2', { actions: ['delete'] }), policy('pol_3')];
    engine.setPolicies(policies);
    const indexed = engine.explain(request(bob, 'read', '/x'));
    engine.setDataDocument({ policies: buildDataDocument(policies).policies });
    expect(engine.explain(request(bob, 'read', '/x'))).toEqual(indexed);
    expect(indexed.notMatched.map((e) => e.id)).toEqual(['pol_2', 'pol_1']);
  });
});
