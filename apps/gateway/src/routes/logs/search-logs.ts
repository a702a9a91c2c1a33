import { z } from 'zod';
import { integerSchema } from '../body-rules';
import { defineRoute, errorSchema, paginationSchema } from '../route';
import { logForms, logSearchHit, timeParam, withTimeOrder } from './schemas';

export const searchLogsRoute = defineRoute({
  method: 'post',
  path: '/logs/search',
  scope: 'read:logs',
  operationId: 'searchLogs',
  summary: 'Full-text search over the audit log, newest first, with highlights',
  tags: ['logs'],
  action: 'read',
  body: withTimeOrder(
    z.strictObject({
      query: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(1000, 'must be at most 1,000 characters'),
      from: timeParam.optional(),
      to: timeParam.optional().describe('before this time (after from)'),
      limit: integerSchema(1, 100, 'must be an integer from 1 to 100').default(20),
      cursor: z.string({ error: 'must be a string' }).max(512, 'invalid or expired cursor').optional(),
    }),
  ),
  responses: {
    200: {
      description: 'Matching entries with highlights; meta.totalHits counts every match in the time window',
      schema: z.object({
        data: z.array(logSearchHit),
        pagination: paginationSchema,
        meta: z.object({ totalHits: z.number().int(), searchTimeMs: z.number().int() }),
      }),
    },
    400: { description: 'The query cannot be parsed, or another field is invalid', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const res = await ctx.clients.audit.searchLogs(
      { environment: ctx.principal.environment, query: body.query, from: body.from, to: body.to, limit: body.limit, cursor: body.cursor ?? '' },
      ctx.call,
    );
    return {
      status: 200,
      body: {
        data: res.entries.map(logForms.searchHit),
        pagination: { hasMore: res.hasMore, ...(res.hasMore ? { nextCursor: res.nextCursor } : {}) },
        meta: { totalHits: Number(res.totalHits), searchTimeMs: res.searchTimeMs },
      },
    };
  },
});
