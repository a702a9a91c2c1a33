import { z } from 'zod';
import { cursorParam, defineRoute, errorSchema, limitParam, listOf, pageOf } from '../route';
import { clientForm, clientOf } from './schemas';

export const listClientsRoute = defineRoute({
  method: 'get',
  path: '/oauth/clients',
  scope: 'read:clients',
  operationId: 'listOAuthClients',
  summary: 'List OAuth clients, newest first',
  tags: ['oauth'],
  query: z.strictObject({ limit: limitParam, cursor: cursorParam }),
  responses: {
    200: { description: 'A page of clients', schema: listOf(clientForm) },
    400: { description: 'Invalid limit or cursor', schema: errorSchema },
  },
  async handle({ query }, ctx) {
    const page = await ctx.clients.identity.listOAuthClients(
      { environment: ctx.principal.environment, limit: query.limit, cursor: query.cursor ?? '' },
      ctx.call,
    );
    return pageOf(page.clients.map(clientOf), page.hasMore, page.nextCursor);
  },
});
