import { z } from 'zod';
import { cursorParam, defineRoute, errorSchema, limitParam, listOf, pageOf } from '../route';
import { eventsParam, logForms, logListItem, timeParam, withTimeOrder } from './schemas';

export const listLogsRoute = defineRoute({
  method: 'get',
  path: '/logs',
  scope: 'read:logs',
  operationId: 'listLogs',
  summary: 'List audit log entries, newest first, with cursor pagination and filters',
  tags: ['logs'],
  query: withTimeOrder(
    z.strictObject({
      limit: limitParam,
      cursor: cursorParam,
      events: eventsParam.optional(),
      from: timeParam.optional().describe('entries at or after this time'),
      to: timeParam.optional().describe('entries before this time (after from)'),
      actorId: z.string().min(1).max(200).optional(),
      result: z.enum(['success', 'failure'], { error: 'must be success or failure' }).optional(),
    }),
  ),
  responses: {
    200: { description: 'A page of log entries (list form)', schema: listOf(logListItem) },
    400: { description: 'A filter, limit or cursor is invalid', schema: errorSchema },
  },
  async handle({ query }, ctx) {
    const page = await ctx.clients.audit.listLogs(
      {
        environment: ctx.principal.environment,
        limit: query.limit,
        cursor: query.cursor ?? '',
        events: query.events ?? [],
        from: query.from,
        to: query.to,
        actorId: query.actorId ?? '',
        result: query.result ?? '',
      },
      ctx.call,
    );
    return pageOf(page.entries.map(logForms.listItem), page.hasMore, page.nextCursor);
  },
});
