import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { updateUserBody, userForms, userIdParams, userUpdated } from './schemas';

export const updateUserRoute = defineRoute({
  method: 'patch',
  path: '/users/:id',
  scope: 'write:users',
  operationId: 'updateUser',
  summary: 'Update name, metadata and/or roles (metadata and roles are replaced as a whole)',
  tags: ['users'],
  params: userIdParams,
  body: updateUserBody,
  // Roles decide what users may do: a user needs assign_roles on /users/<id>/roles besides update on the user.
  alsoAuthorize: (req) =>
    req.body && typeof req.body === 'object' && 'roles' in (req.body as object) ? { action: 'assign_roles', resource: `${req.path.replace(/\/+$/, '')}/roles` } : undefined,
  responses: {
    200: { description: 'The updated fields', schema: dataOf(userUpdated) },
    400: { description: 'Invalid body', schema: errorSchema },
    404: { description: 'No such user', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    // the body names name, metadata or roles (a refinement of updateUserBody)
    if (!isId('user', params.id)) throw AppError.notFound('User');
    const user = await ctx.clients.identity.updateUser(
      {
        environment: ctx.principal.environment,
        id: params.id,
        name: body.name,
        metadataJson: body.metadata === undefined ? undefined : JSON.stringify(body.metadata),
        roles: body.roles === undefined ? undefined : { values: body.roles },
      },
      ctx.call,
    );
    await ctx.verifyCache?.dropUser(user.id);
    ctx.userCache?.dropUser(user.id);
    return { status: 200, body: { data: userForms.updated(user) } };
  },
});
