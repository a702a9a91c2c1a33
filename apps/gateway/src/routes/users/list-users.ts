import { z } from 'zod';
import { cursorParam, defineRoute, errorSchema, limitParam, listOf, pageOf } from '../route';
import { emailSearchParam, userForms, userListItem } from './schemas';

export const listUsersRoute = defineRoute({
  method: 'get',
  path: '/users',
  scope: 'read:users',
  operationId: 'listUsers',
  summary: 'List users, newest first, with cursor pagination; search by part of the email',
  tags: ['users'],
  query: z.strictObject({ limit: limitParam, cursor: cursorParam, email: emailSearchParam }),
  responses: {
    200: { description: 'A page of users', schema: listOf(userListItem) },
    400: { description: 'limit outside 1..100, an invalid cursor, or an empty or too long email', schema: errorSchema },
  },
  async handle({ query }, ctx) {
    const page = await ctx.clients.identity.listUsers(
      { environment: ctx.principal.environment, limit: query.limit, cursor: query.cursor ?? '', email: query.email },
      ctx.call,
    );
    return pageOf(page.users.map(userForms.listItem), page.hasMore, page.nextCursor);
  },
});
