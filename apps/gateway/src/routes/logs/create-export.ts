import { z } from 'zod';
import { dataOf, defineRoute, errorSchema } from '../route';
import { createdForm, logExport } from './export-schemas';
import { eventKindsSchema, timeParam, withTimeOrder } from './schemas';

export const createExportRoute = defineRoute({
  method: 'post',
  path: '/logs/export',
  scope: 'export:logs',
  operationId: 'createLogExport',
  summary: 'Start an asynchronous export of audit log entries to a JSON, CSV or NDJSON file',
  tags: ['logs'],
  body: withTimeOrder(
    z.strictObject({
      from: timeParam.describe('entries at or after this time'),
      to: timeParam.describe('entries before this time: after from, at most EXPORT_MAX_RANGE_DAYS later'),
      format: z.enum(['json', 'csv', 'ndjson'], { error: 'must be json, csv or ndjson' }),
      events: eventKindsSchema.optional().describe('only these event kinds'),
      query: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(1000, 'must be at most 1,000 characters').optional().describe('the search language of POST /logs/search'),
    }),
  ),
  responses: {
    202: { description: 'Accepted: the export is processing', schema: dataOf(logExport) },
    400: { description: 'A field is invalid: from after to, an unknown format, a range over the maximum, a query that cannot be parsed', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const created = await ctx.clients.audit.createExport(
      { environment: ctx.principal.environment, from: body.from, to: body.to, format: body.format, events: body.events ?? [], query: body.query ?? '' },
      ctx.call,
    );
    return { status: 202, body: { data: createdForm(created) } };
  },
});
