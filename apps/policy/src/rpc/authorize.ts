import type { policy } from '@secsvc/proto';
import { appendEvent, callerOf, eventOfCall, newId, type CallContext } from '@secsvc/shared';
import { environmentOf, type PolicyContext } from '../context';
import { requestContext, validateSimulation } from '../domain/policies';

/**
 * The enforced decision for a user's API call: the same engine and policies as Simulate, and a denial is an
 * authz.denied event (actor: the user; target: the resource; the action, the denying policies and whether an
 * MFA would have allowed it). `mfa`/`mfaAgeSeconds` say whether the caller's credential carries a completed
 * MFA and how old it is; a denial that an MFA completed just now would turn into an allow answers
 * `mfaRequired` (with the smallest maximum age of the mfa conditions that made the difference), so the
 * gateway can ask for a step-up.
 */
export const authorize =
  (ctx: PolicyContext) =>
  async (req: policy.AuthorizeRequest, call: CallContext): Promise<policy.AuthorizeResponse> => {
    const environment = environmentOf(req.environment);
    const input = validateSimulation({
      principal: `user:${req.userId}`,
      action: req.action,
      resource: req.resource,
      ip: req.ip,
      mfa: req.mfa,
      mfaAgeSeconds: req.mfaAgeSeconds,
      roles: req.roles,
    });
    const decision = await ctx.decisions.decide(environment, {
      principal: { id: input.userId, roles: input.roles },
      action: input.action,
      resource: input.resource,
      context: requestContext(input),
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
          metadata: {
            action: input.action,
            decisionId,
            matchedPolicies: decision.matchedPolicies.map((m) => m.id),
            mfaRequired: decision.mfaRequired,
          },
        }),
      );
    }
    return {
      allowed: decision.allowed,
      matchedPolicies: decision.matchedPolicies,
      decisionId,
      mfaRequired: decision.mfaRequired,
      mfaMaxAgeSeconds: decision.mfaMaxAgeSeconds,
    };
  };
