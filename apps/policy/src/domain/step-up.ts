import { hasMfaCondition, type AuthzRequest, type Decision, type EnginePolicy, type PolicyEngine } from '../engine';

// Multi-factor authentication as a policy condition (issue 23): a denied request may be one that an MFA would
// allow. The gateway then answers `mfa_required` (step up) instead of a plain `forbidden`, and the simulator
// says so. Pure functions over an engine instance: no I/O.

export interface StepUp {
  /** Denied, and the same request with an MFA completed just now (mfa true, age 0) would be allowed. */
  mfaRequired: boolean;
  /**
   * With mfaRequired: the smallest maxAgeSeconds among the mfa conditions of the policies that made the
   * difference (matched with the MFA, not without); 0 when none of them gives a maximum.
   */
  mfaMaxAgeSeconds: number;
}

export const NO_STEP_UP: StepUp = Object.freeze({ mfaRequired: false, mfaMaxAgeSeconds: 0 });

/**
 * Whether a step-up would turn `decision` (the engine's answer to `request`) into an allow. An allowed request
 * costs nothing more; a denied one is evaluated once more, with `context.mfa: true, mfaAgeSeconds: 0` (a request
 * that already says exactly that is not). An mfa condition only ever holds more often with a fresher MFA, so
 * the policies matched the second time include those matched the first time; the new ones made the difference.
 * So a denial by a matching deny policy stays one (deny wins), and without any policy in play that has an mfa
 * condition nothing can change: neither is evaluated again.
 */
export function stepUpOf(engine: Pick<PolicyEngine, 'evaluate' | 'storedPolicy' | 'hasMfaConditions'>, request: AuthzRequest, decision: Decision): StepUp {
  if (decision.allowed) return NO_STEP_UP;
  if (decision.matchedPolicies.some((m) => m.effect === 'deny')) return NO_STEP_UP;
  if (request.context?.mfa === true && request.context.mfaAgeSeconds === 0) return NO_STEP_UP;
  const drafts = request.drafts?.policies ?? [];
  const storedInPlay = request.drafts?.mode !== 'replace' && engine.hasMfaConditions;
  if (!storedInPlay && !drafts.some(hasMfaCondition)) return NO_STEP_UP;
  const withMfa = engine.evaluate({ ...request, context: { ...request.context, mfa: true, mfaAgeSeconds: 0 } });
  if (!withMfa.allowed) return NO_STEP_UP;
  const before = new Set(decision.matchedPolicies.map((m) => m.id));
  // A draft's id names it first (under merge a draft stands in for the stored policy of its id); under replace
  // only drafts take part.
  const draftById = new Map(drafts.map((p) => [p.id, p]));
  const policyOf = (id: string): EnginePolicy | undefined => draftById.get(id) ?? (request.drafts?.mode === 'replace' ? undefined : engine.storedPolicy(id));
  let smallest: number | undefined;
  for (const m of withMfa.matchedPolicies) {
    if (before.has(m.id)) continue;
    const max = maxAgeOf(policyOf(m.id));
    if (max !== undefined && (smallest === undefined || max < smallest)) smallest = max;
  }
  return { mfaRequired: true, mfaMaxAgeSeconds: smallest ?? 0 };
}

function maxAgeOf(policy: EnginePolicy | undefined): number | undefined {
  const mfa: unknown = policy?.conditions?.mfa;
  if (typeof mfa !== 'object' || mfa === null) return undefined;
  const max = (mfa as { maxAgeSeconds?: unknown }).maxAgeSeconds;
  return typeof max === 'number' ? max : undefined;
}

/**
 * One line for people about a decision (the simulator's `reason`): "allowed by <name>" (with how many more
 * allowed it), "denied by policy <name>" for a matching deny, "denied: requires MFA" (", within <n> s" with a
 * maximum age) when a step-up would allow it, else "no policy allows it" (the default deny).
 */
export function decisionReason(decision: Decision, stepUp: StepUp): string {
  const [first, ...rest] = decision.matchedPolicies;
  const nameOf = (m: { id: string; name: string }) => m.name || m.id;
  if (decision.allowed && first) return `allowed by ${nameOf(first)}${rest.length ? ` (and ${rest.length} more)` : ''}`;
  if (first?.effect === 'deny') return `denied by policy ${nameOf(first)}`;
  if (stepUp.mfaRequired) return stepUp.mfaMaxAgeSeconds > 0 ? `denied: requires MFA within ${stepUp.mfaMaxAgeSeconds} s` : 'denied: requires MFA';
  return 'no policy allows it';
}
