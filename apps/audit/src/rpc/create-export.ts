import type { audit } from '@secsvc/proto';
import { EXPORT_FORMATS, exportCriteria, type ExportFormat, type ExportSpec } from '@secsvc/audit-store';
import { AppError, callerOf, newId, type CallContext, type FieldError } from '@secsvc/shared';
import { environmentOf } from '../context';
import type { ExportContext } from '../export-context';
import { filterErrors } from './list-logs';
import { toExport } from './exports';

const DAY_MS = 86_400_000;

/** The export a request asks for, validated field by field (400 naming every faulty field at once). */
export function exportSpecOf(
  req: { environment: string; from?: string; to?: string; events?: string[]; query?: string; format?: string },
  maxRangeDays?: number,
): ExportSpec {
  const environment = environmentOf(req.environment);
  const errors: FieldError[] = [];
  if (req.format !== undefined && !(EXPORT_FORMATS as readonly string[]).includes(req.format)) {
    errors.push({ field: 'format', message: `must be one of ${EXPORT_FORMATS.join(', ')}` });
  }
  if (!req.from) errors.push({ field: 'from', message: 'is required' });
  if (!req.to) errors.push({ field: 'to', message: 'is required' });
  errors.push(...filterErrors(req));
  if (req.from && req.to && maxRangeDays !== undefined && Date.parse(req.to) - Date.parse(req.from) > maxRangeDays * DAY_MS) {
    errors.push({ field: 'to', message: `the range from..to must be at most ${maxRangeDays} days` });
  }
  const spec = { environment, from: req.from ?? '', to: req.to ?? '', events: req.events ?? [], query: req.query ?? '' };
  try {
    exportCriteria(spec); // a query that cannot be parsed is a 400 naming `query`
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
    errors.push(...err.details);
  }
  if (errors.length) throw AppError.invalid(errors);
  return { ...spec, from: new Date(spec.from).toISOString(), to: new Date(spec.to).toISOString() };
}

/**
 * POST /logs/export: validates, counts the matching entries (the estimate: one count() over the table's
 * key range and text index) and stores the job, which a worker picks up (log.export.created).
 */
export const createExport =
  (ctx: ExportContext) =>
  async (req: audit.CreateExportRequest, call: CallContext): Promise<audit.Export> => {
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
