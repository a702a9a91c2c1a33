import { z } from 'zod';
import { cursorParam, defineRoute, errorSchema, limitParam, listOf, pageOf } from '../route';
import { connectionForm, connectionOf } from './schemas';

export const listConnectionsRoute = defineRoute({
  method: 'get',
  path: '/sso/connections',
  scope: 'read:sso',
  operationId: 'listSsoConnections',
  summary: 'List SSO connections, newest first',
  tags: ['sso'],
  query: z.strictObject({ limit: limitParam, cursor: cursorParam }),
  responses: {
    200: { description: 'A page of connections', schema: listOf(connectionForm) },
    400: { description: 'Invalid limit or cursor', schema: errorSchema },
  },
  async handle({ query }, ctx) {
    const page = await ctx.clients.identity.listSsoConnections(
      { environment: ctx.principal.environment, limit: query.limit, cursor: query.cursor ?? '' },
      ctx.call,
    );
    return pageOf(page.connections.map((c) => connectionOf(c, ctx.sso?.baseUrl)), page.hasMore, page.nextCursor);
  },
});
