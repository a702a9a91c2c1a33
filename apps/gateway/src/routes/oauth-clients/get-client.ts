import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { clientForm, clientIdParams, clientOf } from './schemas';

export const getClientRoute = defineRoute({
  method: 'get',
  path: '/oauth/clients/:id',
  scope: 'read:clients',
  operationId: 'getOAuthClient',
  summary: 'Get an OAuth client (never its secret)',
  tags: ['oauth'],
  params: clientIdParams,
  responses: {
    200: { description: 'The client', schema: dataOf(clientForm) },
    404: { description: 'No such client', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('cli', params.id)) throw AppError.notFound('OAuth client');
    const client = await ctx.clients.identity.getOAuthClient({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 200, body: { data: clientOf(client) } };
  },
});
