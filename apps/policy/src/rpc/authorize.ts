import type { policy } from '@secsvc/proto';
import { appendEvent, callerOf, eventOfCall, newId, type CallContext } from '@secsvc/shared';
import { environmentOf, type PolicyContext } from '../context';
import { validateSimulation } from '../domain/policies';

/**
 * The enforced decision for a user's API call: the same engine and policies as Simulate, and a denial is an
 * authz.denied event (actor: the user; target: the resource; the action and the denying policies).
 */
export const authorize =
  (ctx: PolicyContext) =>
  async (req: policy.AuthorizeRequest, call: CallContext): Promise<policy.AuthorizeResponse> => {
    const environment = environmentOf(req.environment);
    const input = validateSimulation({ principal: `user:${req.userId}`, action: req.action, resource: req.resource, ip: req.ip, roles: req.roles });
    const decision = await ctx.decisions.decide(environment, {
      principal: { id: input.userId, roles: input.roles },
      action: input.action,
      resource: input.resource,
      context: input.ip === undefined ? {} : { ip: input.ip },
    });
    const decisionId = newId('dec');
    if (!decision.allowed) {
      await appendEvent(
        ctx.pool,
        eventOfCall(call, {
          // The gateway says the user's email when its credential does (x-actor-email).
          actor: { id: input.userId, email: callerOf(call).actor.email, type: 'user' },
          environment,
          type: 'authz.denied',
          target: { id: input.resource, type: 'resource' },
          result: 'failure',
          metadata: { action: input.action, decisionId, matchedPolicies: decision.matchedPolicies.map((m) => m.id) },
        }),
      );
    }
    return { allowed: decision.allowed, matchedPolicies: decision.matchedPolicies, decisionId };
  };
