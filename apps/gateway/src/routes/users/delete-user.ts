import { AppError, isId } from '@secsvc/shared';
import { defineRoute, errorSchema } from '../route';
import { userIdParams } from './schemas';

export const deleteUserRoute = defineRoute({
  method: 'delete',
  path: '/users/:id',
  scope: 'write:users',
  operationId: 'deleteUser',
  summary: 'Delete a user and their data',
  tags: ['users'],
  params: userIdParams,
  responses: {
    204: { description: 'Deleted' },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('user', params.id)) throw AppError.notFound('User');
    await ctx.clients.identity.deleteUser({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    await ctx.verifyCache?.dropUser(params.id);
    ctx.userCache?.dropUser(params.id);
    return { status: 204 };
  },
});
