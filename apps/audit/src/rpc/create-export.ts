import type { audit } from '@secsvc/proto';
import { EXPORT_FORMATS, exportCriteria, type ExportFormat, type ExportSpec } from '@secsvc/audit-store';
import { AppError, callerOf, newId, type CallContext } from '@secsvc/shared';
import type { ExportContext } from '../export-context';
import { filtersOf } from './list-logs';
import { toExport } from './exports';

const DAY_MS = 86_400_000;

/** The export a request asks for, validated field by field (400 naming each). */
export function exportSpecOf(req: { environment: string; from?: string; to?: string; events?: string[]; query?: string }, maxRangeDays?: number): ExportSpec {
  if (!req.from) throw AppError.field('from', 'is required');
  if (!req.to) throw AppError.field('to', 'is required');
  const filters = filtersOf(req);
  if (maxRangeDays !== undefined && Date.parse(req.to) - Date.parse(req.from) > maxRangeDays * DAY_MS) throw AppError.field('to', `the range from..to must be at most ${maxRangeDays} days`);
  const spec = { environment: filters.environment, from: new Date(req.from).toISOString(), to: new Date(req.to).toISOString(), events: req.events ?? [], query: req.query ?? '' };
  exportCriteria(spec); // a query that cannot be parsed is a 400 naming `query`
  return spec;
}

/**
 * POST /logs/export: validates, counts the matching entries (the estimate: one count() over the table's
 * key range and text index) and stores the job, which a worker picks up (log.export.created).
 */
export const createExport =
  (ctx: ExportContext) =>
  async (req: audit.CreateExportRequest, call: CallContext): Promise<audit.Export> => {
    if (!(EXPORT_FORMATS as readonly string[]).includes(req.format)) throw AppError.field('format', `must be one of ${EXPORT_FORMATS.join(', ')}`);
    const spec = exportSpecOf(req, ctx.exports.maxRangeDays);
    const { filters, clause } = exportCriteria(spec);
    const estimatedRecords = await ctx.store.count(filters, clause);
    const job = await ctx.exports.jobs.create({
      ...spec,
      id: newId('exp'),
      format: req.format as ExportFormat,
      estimatedRecords,
      requestedBy: callerOf(call),
      traceId: call.requestId,
    });
    return toExport(job, ctx.secret);
  };
