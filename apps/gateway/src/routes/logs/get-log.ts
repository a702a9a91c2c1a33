import { z } from 'zod';
import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { logForms, logFull } from './schemas';

export const getLogRoute = defineRoute({
  method: 'get',
  path: '/logs/:id',
  scope: 'read:logs',
  operationId: 'getLog',
  summary: 'Get one audit log entry (full form: traceId, metadata, region and coordinates)',
  tags: ['logs'],
  params: z.object({ id: z.string() }),
  responses: {
    200: { description: 'The log entry', schema: dataOf(logFull) },
    404: { description: 'No such entry in this environment', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('log', params.id)) throw AppError.notFound('Log entry');
    const entry = await ctx.clients.audit.getLog({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 200, body: { data: logForms.full(entry) } };
  },
});
