import type { audit } from '@secsvc/proto';
import { AppError, environmentOf, isId } from '@secsvc/shared';
import type { ExportContext } from '../export-context';
import { toExport } from './exports';

/** GET /logs/export/{id}: the job's current state, in the caller's environment only. */
export const getExport =
  (ctx: ExportContext) =>
  async (req: audit.GetExportRequest): Promise<audit.Export> => {
    const environment = environmentOf(req.environment);
    const job = isId('exp', req.id) ? await ctx.exports.jobs.get(environment, req.id) : undefined;
    if (!job) throw AppError.notFound('Export');
    return toExport(job, ctx.secret);
  };
