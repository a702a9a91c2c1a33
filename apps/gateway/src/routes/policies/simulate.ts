import type { policy } from '@secsvc/proto';
import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { simulateBody, simulationResult, toProtoConditions } from './schemas';

export const simulateRoute = defineRoute({
  method: 'post',
  path: '/policies/simulate',
  scope: 'read:policies',
  operationId: 'simulatePolicies',
  summary:
    'Evaluate a request against the stored policies (who: user:<id>, what action, which resource, from which ip, with or without MFA), optionally with draft policies (merge or replace) and an explanation of every policy that did not match',
  tags: ['policies'],
  action: 'simulate',
  body: simulateBody,
  responses: {
    200: { description: 'The decision', schema: dataOf(simulationResult) },
    400: { description: 'Invalid body', schema: errorSchema },
    404: { description: 'No such user (field principal)', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    // the body schema holds the user: prefix; an id that is no user id is no such user
    const userId = body.principal.slice(5);
    const unknownUser = () => new AppError('not_found', 'User not found', [{ field: 'principal', message: 'no such user' }]);
    if (!isId('user', userId)) throw unknownUser();
    const fetchRoles = async () => {
      const user = await ctx.clients.identity.getUser({ environment: ctx.principal.environment, id: userId }, ctx.call).catch((err: unknown) => {
        throw err instanceof AppError && err.code === 'not_found' ? unknownUser() : err;
      });
      return { roles: user.roles, email: user.email };
    };
    const { roles } = ctx.userCache ? await ctx.userCache.get(ctx.principal.environment, userId, fetchRoles) : await fetchRoles();
    const request: policy.SimulateRequest = {
      environment: ctx.principal.environment,
      principal: body.principal,
      action: body.action,
      resource: body.resource,
      ip: body.context?.ip ?? '',
      mfa: body.context?.mfa === true,
      mfaAgeSeconds: body.context?.mfaAgeSeconds ?? 0,
      roles,
      policies: (body.policies ?? []).map(
        (d): policy.DraftPolicy => ({
          id: d.id ?? '',
          name: d.name,
          description: d.description ?? '',
          effect: d.effect,
          principals: d.principals,
          actions: d.actions,
          resources: d.resources,
          conditions: toProtoConditions(d.conditions),
        }),
      ),
      mode: body.mode ?? '',
      explain: body.explain === true,
    };
    const res = await ctx.clients.policy.simulate(request, ctx.call).catch((err: unknown) => {
      // the policy service names the request context's fields `ip` and `mfaAgeSeconds`; in this body they are in context
      throw err instanceof AppError ? err.withFields((f) => (f === 'ip' || f === 'mfaAgeSeconds' ? `context.${f}` : f)) : err;
    });
    return {
      status: 200,
      body: {
        data: {
          allowed: res.allowed,
          effect: res.effect,
          matchedPolicies: res.matchedPolicies.map((m) => ({ id: m.id, name: m.name, effect: m.effect })),
          evaluationTimeMs: res.evaluationTimeMs,
          decisionId: res.decisionId,
          ...(body.explain === true ? { explanations: res.explanations.map(explanationOf), notMatchedCount: res.notMatchedCount } : {}),
          mfaRequired: res.mfaRequired,
          mfaMaxAgeSeconds: res.mfaMaxAgeSeconds,
          reason: res.reason,
        },
      },
    };
  },
});

/** The JSON form: `actual` is the principal list, the action or resource, the ip, or the MFA's age (null when none). */
function explanationOf(e: policy.PolicyExplanation) {
  return {
    policyId: e.policyId,
    name: e.name,
    effect: e.effect,
    failed: e.failed,
    ...(e.failed === 'condition' ? { condition: e.condition } : {}),
    expected: e.expected,
    actual: e.failed === 'principal' ? e.actualPrincipals : (e.actual ?? null),
  };
}
