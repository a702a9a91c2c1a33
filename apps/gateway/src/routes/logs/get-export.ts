import { z } from 'zod';
import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { logExport, stateForm } from './export-schemas';

export const getExportRoute = defineRoute({
  method: 'get',
  path: '/logs/export/:id',
  scope: 'export:logs',
  operationId: 'getLogExport',
  summary: 'The current state of a log export (completed: the download link, its expiry, the file size and SHA-256)',
  tags: ['logs'],
  params: z.object({ id: z.string() }),
  responses: {
    200: { description: 'The export', schema: dataOf(logExport) },
    404: { description: 'No such export in this environment', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('exp', params.id)) throw AppError.notFound('Export');
    const e = await ctx.clients.audit.getExport({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 200, body: { data: stateForm(e, ctx.downloadBaseUrl ?? '') } };
  },
});
