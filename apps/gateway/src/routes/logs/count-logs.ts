import { z } from 'zod';
import { dataOf, defineRoute, errorSchema } from '../route';
import { eventKindsSchema, timeParam, withTimeOrder } from './schemas';

const logCount = z.object({
  start: z.string().describe('ISO 8601 UTC: the first instant of the hour (or day)'),
  event: z.string(),
  result: z.enum(['success', 'failure']),
  count: z.number().int(),
});

export const countLogsRoute = defineRoute({
  method: 'post',
  path: '/logs/counts',
  scope: 'read:logs',
  operationId: 'countLogs',
  summary: 'How many audit log entries per hour (or day), event kind and result match a filter and an optional search query',
  tags: ['logs'],
  action: 'read',
  body: withTimeOrder(
    z.strictObject({
      from: timeParam,
      to: timeParam.describe('before this time (after from); at most 31 days after from by hour, 366 by day'),
      interval: z.enum(['hour', 'day'], { error: 'must be hour or day' }).default('hour'),
      query: z.string({ error: 'must be a string' }).max(1000, 'must be at most 1,000 characters').optional().describe('the search language of POST /logs/search'),
      events: eventKindsSchema.optional(),
      actorId: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(200, 'must be at most 200 characters').optional(),
      result: z.enum(['success', 'failure'], { error: 'must be success or failure' }).optional(),
    }),
  ),
  responses: {
    200: {
      description: 'Buckets with entries only (by start, event kind, result), and their total',
      schema: dataOf(z.object({ interval: z.enum(['hour', 'day']), counts: z.array(logCount), total: z.number().int() })),
    },
    400: { description: 'A field is invalid, the query cannot be parsed, or the window is too long for the interval', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const res = await ctx.clients.audit.countLogs(
      {
        environment: ctx.principal.environment,
        from: body.from,
        to: body.to,
        interval: body.interval,
        query: body.query ?? '',
        events: body.events ?? [],
        actorId: body.actorId ?? '',
        result: body.result ?? '',
      },
      ctx.call,
    );
    return { status: 200, body: { data: { interval: body.interval, counts: res.counts.map((c) => ({ ...c, count: Number(c.count) })), total: Number(res.total) } } };
  },
});
