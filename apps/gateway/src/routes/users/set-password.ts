import { AppError, isId } from '@secsvc/shared';
import { setPasswordBody } from '../auth/schemas';
import { defineRoute, errorSchema } from '../route';
import { userIdParams } from './schemas';

export const setPasswordRoute = defineRoute({
  method: 'put',
  path: '/users/:id/password',
  scope: 'write:users',
  operationId: 'setPassword',
  summary: "Set a user's password (administrators)",
  tags: ['users'],
  params: userIdParams,
  body: setPasswordBody,
  responses: {
    204: { description: 'Password set' },
    400: { description: 'At least 12 characters, not a common password, not the email', schema: errorSchema },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    if (!isId('user', params.id)) throw AppError.notFound('User');
    await ctx.clients.identity.setPassword({ environment: ctx.principal.environment, userId: params.id, password: body.password }, ctx.call);
    return { status: 204 };
  },
});
