import { dataOf, defineRoute, errorSchema } from '../route';
import { createdSessionForm, createSessionBody, sessionOf } from './schemas';

export const DEFAULT_SESSION_SECONDS = 24 * 3600;

export const createSessionRoute = defineRoute({
  method: 'post',
  path: '/sessions',
  scope: 'write:users',
  operationId: 'createSession',
  summary: 'Create a session for a user (the token is in this response only)',
  tags: ['sessions'],
  body: createSessionBody,
  responses: {
    201: { description: 'Created', schema: dataOf(createdSessionForm) },
    400: { description: 'Invalid body (expiresIn: 1m to 30d)', schema: errorSchema },
    404: { description: 'No such user (field userId)', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const created = await ctx.clients.identity.createSession(
      {
        environment: ctx.principal.environment,
        userId: body.userId,
        expiresInSeconds: body.expiresIn ?? DEFAULT_SESSION_SECONDS,
        metadataJson: body.metadata ? JSON.stringify(body.metadata) : '',
      },
      ctx.call,
    );
    return { status: 201, body: { data: { ...sessionOf(created.session!), token: created.token } } };
  },
});
