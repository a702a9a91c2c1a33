import { AppError, environmentOf, isEventKind, type FieldError } from '@secsvc/shared';
import { EXPORT_FORMATS, type ExportSpec } from '../export-jobs';
import { exportCriteria } from '../export-source';
import type { LogFilters } from '../store';

// The checks of what callers ask of the log (list, search, export): each answers 400 naming every faulty
// field at once.

const DAY_MS = 86_400_000;

/** The time window and event filters a list or search request carries, as asked (unchecked). */
export type FilterRequest = LogFilters;

/** The faults of the time window and event filters shared by list, search and export, all of them. */
export function filterErrors(req: { events?: string[]; from?: string; to?: string; result?: string }): FieldError[] {
  const errors: FieldError[] = [];
  for (const [i, e] of (req.events ?? []).entries()) {
    if (!isEventKind(e)) errors.push({ field: `events[${i}]`, message: 'must be an event kind the product emits, such as user.login' });
  }
  if (req.from && req.to && Date.parse(req.from) >= Date.parse(req.to)) errors.push({ field: 'to', message: 'must be after from' });
  if (req.result && req.result !== 'success' && req.result !== 'failure') errors.push({ field: 'result', message: 'must be success or failure' });
  return errors;
}

/** A window that must be given, from..to, at most `maxDays` long (`why` ends the message: what the limit is for). */
export function windowErrors(req: { from?: string; to?: string }, maxDays: number | undefined, why = ''): FieldError[] {
  const errors: FieldError[] = [];
  if (!req.from) errors.push({ field: 'from', message: 'is required' });
  if (!req.to) errors.push({ field: 'to', message: 'is required' });
  if (req.from && req.to && maxDays !== undefined && Date.parse(req.to) - Date.parse(req.from) > maxDays * DAY_MS) {
    errors.push({ field: 'to', message: `the range from..to must be at most ${maxDays} days${why}` });
  }
  return errors;
}

/** The time window and event filters shared by list and search (400 naming every faulty field). */
export function filtersOf(req: FilterRequest): LogFilters {
  const environment = environmentOf(req.environment);
  const errors = filterErrors(req);
  if (errors.length) throw AppError.invalid(errors);
  return { environment, events: req.events, from: req.from, to: req.to, actorId: req.actorId || undefined, result: req.result || undefined };
}

/** What an export request carries (a status or download request has no format: it is not checked then). */
export interface ExportRequest {
  environment: string;
  from?: string;
  to?: string;
  events?: string[];
  query?: string;
  format?: string;
}

/** The export a request asks for, validated field by field (400 naming every faulty field at once). */
export function exportSpecOf(req: ExportRequest, maxRangeDays?: number): ExportSpec {
  const environment = environmentOf(req.environment);
  const errors: FieldError[] = [];
  if (req.format !== undefined && !(EXPORT_FORMATS as readonly string[]).includes(req.format)) {
    errors.push({ field: 'format', message: `must be one of ${EXPORT_FORMATS.join(', ')}` });
  }
  errors.push(...windowErrors(req, maxRangeDays), ...filterErrors(req));
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
