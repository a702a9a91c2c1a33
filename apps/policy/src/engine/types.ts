// The shapes the policy engine reads and returns. They mirror the stored policy and the SPEC's simulation
// result, but only the fields the decision needs: callers map their own records onto them.

export type Effect = 'allow' | 'deny';

export interface IpCondition {
  /** CIDRs (IPv4 or IPv6); the request's context.ip must lie in one of them. */
  allowlist: readonly string[];
}

/**
 * The mfa condition: the request's credential carries a completed multi-factor authentication; with
 * `maxAgeSeconds`, completed at most that many seconds before the request. Written `true` or as an object
 * (`{}` is the same as `true`), and kept as written.
 */
export type MfaCondition = true | { maxAgeSeconds?: number };

export interface PolicyConditions {
  ip?: IpCondition;
  mfa?: MfaCondition;
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

/**
 * Draft policies of a simulation, evaluated with (merge) or instead of (replace) the stored ones and never
 * stored. Under merge, a draft whose id is a stored policy's id stands in for that policy.
 */
export interface SimulationDrafts {
  mode: 'merge' | 'replace';
  policies: readonly EnginePolicy[];
}

export interface AuthzRequest {
  /** roles as the identity service stores them: `role_<name>`. */
  principal: { id: string; roles: readonly string[] };
  action: string;
  resource: string;
  context?: {
    ip?: string | null;
    /** The caller's credential carries a completed multi-factor authentication (absent: it does not). */
    mfa?: boolean;
    /** Seconds since that MFA (read only when `mfa` is true); an mfa condition with a maximum age needs it. */
    mfaAgeSeconds?: number;
  };
  /** Simulations only: draft policies, passed in the input (the stored data document is left alone). */
  drafts?: SimulationDrafts;
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

export type FailedPart = 'principal' | 'action' | 'resource' | 'condition';

/** Why one policy did not match: the first part that failed (principal, action, resource, condition). */
export interface Explanation {
  id: string;
  name: string;
  effect: Effect;
  failed: FailedPart;
  /** The condition that failed (`ip.allowlist`, `mfa`, `mfa.maxAgeSeconds`); null for the other parts. */
  condition: string | null;
  /** The policy's patterns for that part, the condition's CIDRs, or an mfa condition's maxAgeSeconds as a decimal string ([] when none). */
  expected: string[];
  /**
   * The request's value: for a principal, `user:<id>` then `role:<name>` for each `role_<name>` held; the
   * action or resource; for an ip condition, context.ip as given (null when there is none); for an mfa
   * condition, context.mfaAgeSeconds as a decimal string when context.mfa is true (null otherwise).
   */
  actual: string | string[] | null;
}

export interface ExplainedDecision extends Decision {
  /** The policies in play that did not match (drafts first, then nearest misses first); at most EXPLAIN_LIMIT. */
  notMatched: Explanation[];
  /** How many policies in play did not match (notMatched may list fewer). */
  notMatchedCount: number;
}
