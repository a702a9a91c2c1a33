import { defineRoute, errorSchema } from '../route';
import { tokenBody } from './schemas';

export const revokeSessionRoute = defineRoute({
  method: 'post',
  path: '/sessions/revoke',
  operationId: 'revokeSession',
  summary: 'End the session of a token (idempotent)',
  tags: ['sessions'],
  body: tokenBody,
  responses: {
    204: { description: 'The session is ended (or already was)' },
    400: { description: 'No token string in the body', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    await ctx.clients.identity.revokeSession({ environment: ctx.principal.environment, token: body.token }, ctx.call);
    await ctx.verifyCache?.dropToken(`${ctx.principal.environment}:${body.token}`);
    return { status: 204 };
  },
});
