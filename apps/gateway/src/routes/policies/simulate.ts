import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { simulateBody, simulationResult } from './schemas';

export const simulateRoute = defineRoute({
  method: 'post',
  path: '/policies/simulate',
  operationId: 'simulatePolicies',
  summary: 'Evaluate a request against the stored policies: who (user:<id>), what action, which resource, from which ip',
  tags: ['policies'],
  action: 'simulate',
  body: simulateBody,
  responses: {
    200: { description: 'The decision', schema: dataOf(simulationResult) },
    400: { description: 'Invalid body', schema: errorSchema },
    404: { description: 'No such user (field principal)', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const userId = body.principal.startsWith('user:') ? body.principal.slice(5) : '';
    if (!userId) throw AppError.field('principal', 'must look like user:<id>');
    const unknownUser = () => new AppError('not_found', 'User not found', [{ field: 'principal', message: 'no such user' }]);
    if (!isId('user', userId)) throw unknownUser();
    const fetchRoles = async () => {
      const user = await ctx.clients.identity.getUser({ environment: ctx.principal.environment, id: userId }, ctx.call).catch((err: unknown) => {
        throw err instanceof AppError && err.code === 'not_found' ? unknownUser() : err;
      });
      return user.roles;
    };
    const roles = ctx.rolesCache ? await ctx.rolesCache.get(ctx.principal.environment, userId, fetchRoles) : await fetchRoles();
    const res = await ctx.clients.policy.simulate(
      {
        environment: ctx.principal.environment,
        principal: body.principal,
        action: body.action,
        resource: body.resource,
        ip: body.context?.ip ?? '',
        roles,
      },
      ctx.call,
    );
    return {
      status: 200,
      body: {
        data: {
          allowed: res.allowed,
          effect: res.effect,
          matchedPolicies: res.matchedPolicies.map((m) => ({ id: m.id, name: m.name, effect: m.effect })),
          evaluationTimeMs: res.evaluationTimeMs,
          decisionId: res.decisionId,
        },
      },
    };
  },
});
