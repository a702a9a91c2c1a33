import type { policy } from '@secsvc/proto';
import { newId } from '@secsvc/shared';
import { conditionsInput, environmentOf, type PolicyContext } from '../context';
import { requestContext, validateSimulation } from '../domain/policies';
import { decisionReason } from '../domain/step-up';
import type { Explanation } from '../engine';

/**
 * The decision for one request, by the engine over the environment's stored policies, or over draft
 * policies merged with (or replacing) them; with `explain`, why each policy that did not match failed.
 * `roles` are the acting user's roles as the caller resolved them (role_<name>); an empty `ip` means no ip
 * is known (an ip allowlist condition then fails); `mfa` with `mfaAgeSeconds` says the credential carries a
 * completed MFA that old (0 by default). `evaluationTimeMs` is the engine's evaluation time, rounded. Drafts
 * travel in the engine's input: the stored policies loaded for other requests are untouched. A denial says
 * whether an MFA completed just now would allow it (`mfaRequired`, as Authorize does), and `reason` puts the
 * answer in one line.
 */
export const simulate =
  (ctx: PolicyContext) =>
  async (req: policy.SimulateRequest): Promise<policy.SimulateResponse> => {
    const environment = environmentOf(req.environment);
    const input = validateSimulation({ ...req, policies: req.policies.map((d) => ({ ...d, conditions: conditionsInput(d.conditions) })) });
    const decision = await ctx.decisions.decide(
      environment,
      {
        principal: { id: input.userId, roles: input.roles },
        action: input.action,
        resource: input.resource,
        context: requestContext(input),
        ...(input.drafts ? { drafts: input.drafts } : {}),
      },
      { explain: input.explain },
    );
    return {
      allowed: decision.allowed,
      effect: decision.effect,
      matchedPolicies: decision.matchedPolicies,
      evaluationTimeMs: Math.round(decision.evaluationMs),
      decisionId: newId('dec'),
      explanations: decision.explanation?.notMatched.map(toExplanationMessage) ?? [],
      notMatchedCount: decision.explanation?.notMatchedCount ?? 0,
      mfaRequired: decision.mfaRequired,
      mfaMaxAgeSeconds: decision.mfaMaxAgeSeconds,
      reason: decisionReason(decision, decision),
    };
  };

function toExplanationMessage(e: Explanation): policy.PolicyExplanation {
  return {
    policyId: e.id,
    name: e.name,
    effect: e.effect,
    failed: e.failed,
    condition: e.condition ?? '',
    expected: e.expected,
    actual: typeof e.actual === 'string' ? e.actual : undefined,
    actualPrincipals: Array.isArray(e.actual) ? e.actual : [],
  };
}
