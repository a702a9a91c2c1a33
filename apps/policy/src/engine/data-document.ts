import type { EnginePolicy } from './types';

// The data document the Rego program reads (see apps/policy/rego/README.md):
//   policies: { <policy id>: <policy> }
//   index.by_action_principal: { <action key>: { <principal key>: { <policy id>: true } } }
// A request's candidates are the policies listed under one of its action keys (its action and `*`) and one
// of its principal keys (`*`, `user:<id>`, `role:<name>` for each `role_<name>` it holds). Each candidate is
// then checked in full, so the index only has to list a policy under every key pair it could match; listing
// more is harmless. Maps are null-prototype objects so an id such as `__proto__` stays an ordinary key.
//   index.order: every policy id, sorted: the order explanations list stored policies in (sorting in the
// program itself takes quadratic time in the WebAssembly runtime, so it is done here, once per load).

export type IdSet = Record<string, true>;

export interface DataDocument {
  policies: Record<string, EnginePolicy>;
  index: {
    by_action_principal: Record<string, Record<string, IdSet>>;
    /** Every policy id in ascending order (code-unit order, which is byte order for the ASCII ids we store). */
    order: string[];
  };
}

/**
 * A policy is listed once per (action, principal pattern) pair. Past this many pairs it is listed under its
 * actions with principal key `*` only, so one policy adds at most max(actions, this) entries (validation
 * allows 100 of each; 100 x 100 pairs for each of 10,000 policies would not fit in memory).
 */
export const MAX_INDEX_PAIRS_PER_POLICY = 64;

/**
 * The index key a principal pattern is listed under. Patterns that match any user, and any pattern this
 * function does not recognise, go under `*`, which every request looks up.
 */
export function principalKey(pattern: string): string {
  if (pattern === '*' || pattern === 'user:${self}') return '*';
  if (pattern.startsWith('user:') || pattern.startsWith('role:')) return pattern;
  return '*';
}

function nullObject<T>(): Record<string, T> {
  return Object.create(null) as Record<string, T>;
}

/** A policy as the program reads it, in data.policies or as a draft in the input: `conditions` `{}` when none. */
export function documentPolicy(policy: EnginePolicy): EnginePolicy {
  return {
    id: policy.id,
    name: policy.name,
    effect: policy.effect,
    principals: policy.principals,
    actions: policy.actions,
    resources: policy.resources,
    conditions: policy.conditions ?? {},
  };
}

export function buildDataDocument(policies: readonly EnginePolicy[]): DataDocument {
  const byId = nullObject<EnginePolicy>();
  const index = nullObject<Record<string, IdSet>>();
  for (const policy of policies) {
    if (Object.prototype.hasOwnProperty.call(byId, policy.id)) throw new Error(`duplicate policy id ${policy.id}`);
    byId[policy.id] = documentPolicy(policy);
    const wide = policy.principals.length * policy.actions.length > MAX_INDEX_PAIRS_PER_POLICY;
    const principalKeys = wide ? ['*'] : policy.principals.map(principalKey);
    for (const action of policy.actions) {
      const byPrincipal = (index[action] ??= nullObject<IdSet>());
      for (const key of principalKeys) (byPrincipal[key] ??= nullObject<true>())[policy.id] = true;
    }
  }
  const order = policies.map((p) => p.id).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { policies: byId, index: { by_action_principal: index, order } };
}
