import type { policy } from '@secsvc/proto';
import { newId } from '@secsvc/shared';
import { environmentOf, type PolicyContext } from '../context';
import { validateSimulation } from '../domain/policies';
import type { Explanation } from '../engine';

/**
 * The decision for one request, by the engine over the environment's stored policies, or over draft
 * policies merged with (or replacing) them; with `explain`, why each policy that did not match failed.
 * `roles` are the acting user's roles as the caller resolved them (role_<name>); an empty `ip` means no ip
 * is known (an ip allowlist condition then fails). `evaluationTimeMs` is the engine's evaluation time,
 * rounded. Drafts travel in the engine's input: the stored policies loaded for other requests are untouched.
 */
export const simulate =
  (ctx: PolicyContext) =>
  async (req: policy.SimulateRequest): Promise<policy.SimulateResponse> => {
    const environment = environmentOf(req.environment);
    const input = validateSimulation(req);
    const decision = await ctx.decisions.decide(
      environment,
      {
        principal: { id: input.userId, roles: input.roles },
        action: input.action,
        resource: input.resource,
        context: input.ip === undefined ? {} : { ip: input.ip },
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
