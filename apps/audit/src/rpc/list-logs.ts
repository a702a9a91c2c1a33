import type { audit } from '@secsvc/proto';
import type { LogFilters, LogPosition } from '@secsvc/audit-store';
import { AppError, encodeCursor, isEventKind, pageRequest, type FieldError } from '@secsvc/shared';
import { environmentOf, toLogEntry, type AuditContext } from '../context';

export const MAX_PAGE = 100;

/** A list position `<iso time>|<log id>` from a cursor. */
export function positionOf(after: string | undefined): LogPosition | undefined {
  if (after === undefined) return undefined;
  const [timestamp, id] = after.split('|');
  if (!timestamp || !id || Number.isNaN(Date.parse(timestamp))) throw AppError.field('cursor', 'invalid or expired cursor');
  return { timestamp, id };
}

export const cursorAfter = (row: { timestamp: string; id: string }) => `${row.timestamp}|${row.id}`;

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

/** The time window and event filters shared by list and search (400 naming every faulty field). */
export function filtersOf(req: { environment: string; events?: string[]; from?: string; to?: string; actorId?: string; result?: string }): LogFilters {
  const environment = environmentOf(req.environment);
  const errors = filterErrors(req);
  if (errors.length) throw AppError.invalid(errors);
  return { environment, events: req.events, from: req.from, to: req.to, actorId: req.actorId || undefined, result: req.result || undefined };
}

export const listLogs =
  (ctx: AuditContext) =>
  async (req: audit.ListLogsRequest): Promise<audit.ListLogsResponse> => {
    const filters = filtersOf(req);
    const scope = { kind: 'logs', environment: filters.environment };
    const { limit, after } = pageRequest(req, scope, ctx.secret, MAX_PAGE);
    const rows = await ctx.store.list(filters, limit, positionOf(after));
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    return {
      entries: page.map((r) => toLogEntry(r)),
      hasMore,
      nextCursor: hasMore ? encodeCursor({ ...scope, after: cursorAfter(page.at(-1)!) }, ctx.secret) : '',
    };
  };
