import { AppError, isId } from '@secsvc/shared';
import { defineRoute, errorSchema } from '../route';
import { connectionIdParams } from './schemas';

export const deleteConnectionRoute = defineRoute({
  method: 'delete',
  path: '/sso/connections/:id',
  scope: 'write:sso',
  operationId: 'deleteSsoConnection',
  summary: 'Delete an SSO connection (users it created stay; their sessions run until they end)',
  tags: ['sso'],
  params: connectionIdParams,
  responses: {
    204: { description: 'Deleted' },
    404: { description: 'No such connection', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('sso', params.id)) throw AppError.notFound('SSO connection');
    await ctx.clients.identity.deleteSsoConnection({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 204 };
  },
});
