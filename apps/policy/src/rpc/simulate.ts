import type { policy } from '@secsvc/proto';
import { newId } from '@secsvc/shared';
import { environmentOf, type PolicyContext } from '../context';
import { validateSimulation } from '../domain/policies';

/**
 * The decision for one request, by the engine over the environment's stored policies. `roles` are the
 * acting user's roles as the caller resolved them (role_<name>); an empty `ip` means no ip is known (an
 * ip allowlist condition then fails). `evaluationTimeMs` is the engine's evaluation time, rounded.
 */
export const simulate =
  (ctx: PolicyContext) =>
  async (req: policy.SimulateRequest): Promise<policy.SimulateResponse> => {
    const environment = environmentOf(req.environment);
    const input = validateSimulation(req);
    const decision = await ctx.decisions.decide(environment, {
      principal: { id: input.userId, roles: input.roles },
      action: input.action,
      resource: input.resource,
      context: input.ip === undefined ? {} : { ip: input.ip },
    });
    return {
      allowed: decision.allowed,
      effect: decision.effect,
      matchedPolicies: decision.matchedPolicies,
      evaluationTimeMs: Math.round(decision.evaluationMs),
      decisionId: newId('dec'),
    };
  };
