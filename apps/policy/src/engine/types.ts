// The shapes the policy engine reads and returns. They mirror the stored policy and the SPEC's simulation
// result, but only the fields the decision needs: callers map their own records onto them.

export type Effect = 'allow' | 'deny';

export interface IpCondition {
  /** CIDRs (IPv4 or IPv6); the request's context.ip must lie in one of them. */
  allowlist: readonly string[];
}

export interface PolicyConditions {
  ip?: IpCondition;
}

export interface EnginePolicy {
  id: string;
  name: string;
  effect: Effect;
  /** `role:<name>`, `user:<id>`, `user:${self}` or `*`. */
  principals: readonly string[];
  /** Action names or `*`. */
  actions: readonly string[];
  /** `*`, an absolute path, or a path ending in `/*`; `${self}` may stand as a whole segment. */
  resources: readonly string[];
  /** `{}`, null or absent: no condition. */
  conditions?: PolicyConditions | null;
}

export interface AuthzRequest {
  /** roles as the identity service stores them: `role_<name>`. */
  principal: { id: string; roles: readonly string[] };
  action: string;
  resource: string;
  context?: { ip?: string | null };
}

export interface MatchedPolicy {
  id: string;
  name: string;
  effect: Effect;
}

export interface Decision {
  allowed: boolean;
  effect: Effect;
  /** Every matching policy: the denies first, then the allows, each group sorted by id. */
  matchedPolicies: MatchedPolicy[];
}
