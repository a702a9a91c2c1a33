// Seeded generators of policy sets and requests for the differential test, the soak test and the latency script.
import type { AuthzRequest, EnginePolicy, MfaCondition, SimulationDrafts } from '../../src/engine';

export type Rng = () => number;

/** mulberry32: a small, fast, seeded PRNG (uniform in [0, 1)). */
export function seeded(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pick<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)] as T;
}

/** 1..max distinct items (fewer if there are not that many). */
export function some<T>(rng: Rng, items: readonly T[], max: number): T[] {
  const n = 1 + Math.floor(rng() * max);
  const out = new Set<T>();
  for (let i = 0; i < n; i++) out.add(pick(rng, items));
  return [...out];
}

/**
 * A deliberately small vocabulary, so random policies and requests match each other often and every rule
 * (role prefixes, `${self}`, `/a/*` against `/a` and `/a/`, `*`, IPv4, IPv6, IPv4-mapped, invalid or
 * missing ips) is exercised many times in 10,000 cases.
 */
export const SMALL = {
  users: ['u1', 'u2', 'u3'],
  roles: ['role_a', 'role_b', 'role_c', 'a', 'role_', 'role_role_a'],
  principals: ['*', 'user:${self}', 'user:u1', 'user:u2', 'user:u9', 'role:a', 'role:b', 'role:c', 'role:role_a', 'role:'],
  actions: ['read', 'create', 'delete', '*'],
  requestActions: ['read', 'create', 'delete', 'update'],
  resources: [
    '*', '/*', '/a', '/a/*', '/a/b', '/a/b/*', '/ab', '/users/${self}', '/users/${self}/*', '/users/${self}/keys/*',
    '/users/u1', '/users/u1/*', '/x${self}',
  ],
  requestResources: [
    '/', '/a', '/a/', '/a/b', '/a/b/c', '/ab', '/ab/c', '/users', '/users/u1', '/users/u2', '/users/u1/keys',
    '/users/u2/keys/k1', '/users/u3/x', '/users/${self}', '/xu1', '/x${self}',
  ],
  cidrs: [
    '10.0.0.0/8', '10.1.0.0/16', '192.168.1.0/24', '0.0.0.0/0', '203.0.113.7/32', '2001:db8::/32', '2001:db8::1/128',
    '::/0', 'fe80::/10', '::ffff:0:0/96', '::ffff:10.0.0.0/104', '::/80', '10.0.0.1/8',
  ],
  ips: [
    '10.1.2.3', '10.2.0.1', '192.168.1.5', '8.8.8.8', '203.0.113.7', '0.0.0.0', '255.255.255.255', '2001:db8::1',
    '2001:db8:1::5', 'fe80::1', '::1', '::', '::ffff:10.1.2.3', 'not-an-ip', '', '10.0.0.0/8', '999.1.1.1', '1.2.3',
    '2001:db8::g', '10.1.2.3 ', '::FFFF:192.168.1.5', '::ffff:a01:203', '0:0:0:0:0:ffff:10.1.2.3', '::1.2.3.4',
    'fe80::1%eth0', '::ffff:', '1::2:', '1::', ':', '::ffff:10.1.2.3/8', '2001:DB8::1', '01.2.3.4', '1.2.3.4.', null, undefined,
  ],
  /** mfa conditions: the valid forms, and a few the service refuses (the program must still agree with opa). */
  mfaConditions: [true, {}, { maxAgeSeconds: 60 }, { maxAgeSeconds: 60 }, { maxAgeSeconds: 300 }, { maxAgeSeconds: 300 }, false, { maxAgeSeconds: '300' }, { maxAgeSeconds: 60, other: 1 }],
  /** A request's mfa and mfaAgeSeconds (undefined: the key is absent). */
  mfa: [true, true, true, false, undefined, 'true'],
  mfaAges: [0, 1, 59, 60, 61, 300, 301, 299.5, 300.5, 86400, -1, -5.5, 1e3, undefined, null, '10'],
} as const;

let serial = 0;

export function randomPolicy(rng: Rng, id: string): EnginePolicy {
  const v = SMALL;
  const roll = rng();
  // the mfa forms the service refuses are cast: the program is checked on them too
  const mfa = () => pick(rng, v.mfaConditions) as MfaCondition;
  const conditions =
    roll < 0.1
      ? undefined
      : roll < 0.4
        ? {}
        : roll < 0.7
          ? { ip: { allowlist: some(rng, v.cidrs, 3) } }
          : roll < 0.9
            ? { mfa: mfa() }
            : { ip: { allowlist: some(rng, v.cidrs, 3) }, mfa: mfa() };
  return {
    id,
    name: `policy ${id}`,
    effect: rng() < 0.35 ? 'deny' : 'allow',
    principals: some(rng, v.principals, 3),
    actions: some(rng, v.actions, 2),
    resources: some(rng, v.resources, 3),
    ...(conditions === undefined ? {} : { conditions }),
  };
}

/** 0..maxPolicies policies with unique ids whose sort order is unrelated to their position. */
export function randomPolicySet(rng: Rng, maxPolicies: number): EnginePolicy[] {
  const n = Math.floor(rng() * (maxPolicies + 1));
  const out: EnginePolicy[] = [];
  for (let i = 0; i < n; i++) {
    serial += 1;
    out.push(randomPolicy(rng, `pol_${Math.floor(rng() * 1e6).toString(36)}_${serial}`));
  }
  return out;
}

export function randomRequest(rng: Rng): AuthzRequest {
  const v = SMALL;
  const roles = rng() < 0.2 ? [] : some(rng, v.roles, 3);
  const ip = pick(rng, v.ips);
  const mfa = pick(rng, v.mfa);
  const age = pick(rng, v.mfaAges);
  // mfa and its age as the service sends them, and (cast) values it never sends
  const context = {
    ...(ip === undefined ? {} : { ip: ip as string }),
    ...(mfa === undefined ? {} : { mfa: mfa as boolean }),
    ...(age === undefined ? {} : { mfaAgeSeconds: age as number }),
  };
  return {
    principal: { id: pick(rng, v.users), roles },
    action: pick(rng, v.requestActions),
    resource: pick(rng, v.requestResources),
    context,
  };
}

/**
 * Draft policies for a simulation over `stored`: 0..4 drafts, numbered draft_<i> or (a third of them, when
 * there are stored policies) carrying a stored policy's id so they stand in for it; merge two times in three.
 */
export function randomDrafts(rng: Rng, stored: readonly EnginePolicy[]): SimulationDrafts {
  const n = Math.floor(rng() * 5);
  const ids = new Set<string>();
  const policies: EnginePolicy[] = [];
  for (let i = 0; i < n; i++) {
    const id = stored.length > 0 && rng() < 0.33 ? pick(rng, stored).id : `draft_${i}`;
    if (ids.has(id)) continue;
    ids.add(id);
    policies.push(randomPolicy(rng, id));
  }
  return { mode: rng() < 0.67 ? 'merge' : 'replace', policies };
}

/**
 * A larger, service-like policy set for latency measurements: 50 roles, 1,000 users, the five API actions and
 * API-like paths. Principals are mostly roles (75%), then single users (20%), then everyone (5%); a quarter
 * of the policies carry an ip allowlist.
 */
export function servicePolicies(rng: Rng, count: number): EnginePolicy[] {
  const actions = ['read', 'create', 'update', 'delete', 'simulate'];
  const resources = ['/users/*', '/users/${self}', '/users/${self}/*', '/policies/*', '/policies', '/logs', '/logs/*', '/exports/*', '*'];
  const out: EnginePolicy[] = [];
  for (let i = 0; i < count; i++) {
    const roll = rng();
    const principal = roll < 0.75 ? `role:r${Math.floor(rng() * 50)}` : roll < 0.95 ? `user:user_${Math.floor(rng() * 1000)}` : '*';
    out.push({
      id: `pol_${i.toString().padStart(6, '0')}`,
      name: `policy ${i}`,
      effect: rng() < 0.2 ? 'deny' : 'allow',
      principals: [principal],
      actions: some(rng, actions, 2),
      resources: [pick(rng, resources).replace('/*', rng() < 0.5 ? `/${Math.floor(rng() * 100)}/*` : '/*')],
      conditions: rng() < 0.25 ? { ip: { allowlist: ['10.0.0.0/8', '2001:db8::/32'] } } : {},
    });
  }
  return out;
}

export function serviceRequest(rng: Rng): AuthzRequest {
  const user = Math.floor(rng() * 1000);
  return {
    principal: { id: `user_${user}`, roles: [`role_r${Math.floor(rng() * 50)}`, `role_r${Math.floor(rng() * 50)}`] },
    action: pick(rng, ['read', 'create', 'update', 'delete', 'simulate']),
    resource: pick(rng, [`/users/user_${user}`, `/users/user_${user}/keys`, `/policies/${Math.floor(rng() * 100)}`, '/logs', '/exports/1']),
    context: { ip: rng() < 0.5 ? `10.0.${Math.floor(rng() * 256)}.${Math.floor(rng() * 256)}` : '192.0.2.1' },
  };
}
