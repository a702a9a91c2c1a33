import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { userFull, userForms, userIdParams } from './schemas';

export const getUserRoute = defineRoute({
  method: 'get',
  path: '/users/:id',
  scope: 'read:users',
  operationId: 'getUser',
  summary: 'Get a user (full form)',
  tags: ['users'],
  params: userIdParams,
  responses: {
    200: { description: 'The user', schema: dataOf(userFull) },
    404: { description: 'No such user in this environment', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('user', params.id)) throw AppError.notFound('User');
    const user = await ctx.clients.identity.getUser({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 200, body: { data: userForms.full(user) } };
  },
});
