import { AppError, isId } from '@secsvc/shared';
import { defineRoute, errorSchema } from '../route';
import { clientIdParams, refuseTokenClientChange } from './schemas';

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
    403: { description: 'Denied by policy; or an OAuth access token deleting a first-party client or one with scopes it lacks (id)', schema: errorSchema },
    404: { description: 'No such client', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('cli', params.id)) throw AppError.notFound('OAuth client');
    if (ctx.principal.scopes) {
      const existing = await ctx.clients.identity.getOAuthClient({ environment: ctx.principal.environment, id: params.id }, ctx.call);
      refuseTokenClientChange(ctx.principal, {}, existing);
    }
    await ctx.clients.identity.deleteOAuthClient({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 204 };
  },
});
