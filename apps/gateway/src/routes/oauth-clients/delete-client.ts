import { AppError, isId } from '@secsvc/shared';
import { defineRoute, errorSchema } from '../route';
import { clientIdParams } from './schemas';

export const deleteClientRoute = defineRoute({
  method: 'delete',
  path: '/oauth/clients/:id',
  scope: 'write:clients',
  operationId: 'deleteOAuthClient',
  summary: 'Delete an OAuth client and revoke everything issued to it (refresh and access tokens, at once)',
  tags: ['oauth'],
  params: clientIdParams,
  responses: {
    204: { description: 'Deleted' },
    404: { description: 'No such client', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('cli', params.id)) throw AppError.notFound('OAuth client');
    await ctx.clients.identity.deleteOAuthClient({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 204 };
  },
});
