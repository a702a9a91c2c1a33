import { dataOf, defineRoute, errorSchema } from '../route';
import { createUserBody, userCreated, userForms } from './schemas';

export const createUserRoute = defineRoute({
  method: 'post',
  path: '/users',
  scope: 'write:users',
  // A new user's roles need assign_roles on /users/roles too: a user allowed to create accounts does not thereby make administrators.
  alsoAuthorize: (req) => {
    const roles = (req.body as { roles?: unknown } | undefined)?.roles;
    return Array.isArray(roles) && roles.length > 0 ? { action: 'assign_roles', resource: '/users/roles' } : undefined;
  },
  operationId: 'createUser',
  summary: 'Create a user',
  tags: ['users'],
  body: createUserBody,
  responses: {
    201: { description: 'Created', schema: dataOf(userCreated) },
    400: { description: 'Invalid body; details name each field', schema: errorSchema },
    409: { description: 'Email already in use (case-insensitive)', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const user = await ctx.clients.identity.createUser(
      {
        environment: ctx.principal.environment,
        email: body.email,
        name: body.name,
        roles: body.roles,
        metadataJson: body.metadata ? JSON.stringify(body.metadata) : '',
      },
      ctx.call,
    );
    return { status: 201, body: { data: userForms.created(user) } };
  },
});
