import type { audit } from '@secsvc/proto';
import { compileSearchQuery, highlight, parseSearchQuery, type HighlightSource, type LogRow } from '@secsvc/audit-store';
import { encodeCursor, pageRequest } from '@secsvc/shared';
import { toLogEntry, type AuditContext } from '../context';
import { cursorAfter, filtersOf, MAX_PAGE, positionOf } from './list-logs';

/** The displayable fields of an entry, under the names highlights use (the SPEC's field names). */
const highlightSource = (r: LogRow): HighlightSource => ({
  event: r.event,
  'actor.email': r.actor_email,
  'actor.id': r.actor_id,
  'target.id': r.target_id,
  result: r.result,
  ip: r.ip,
  country: r.country,
  city: r.city,
  userAgent: r.user_agent,
});

const definedOnly = (h: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(h).filter((e): e is [string, string] => e[1] !== undefined));

/**
 * Full-text search (the query language is in docs/api.md): newest first within the time window, with
 * highlights per matched field and the total number of hits.
 */
export const searchLogs =
  (ctx: AuditContext) =>
  async (req: audit.SearchLogsRequest): Promise<audit.SearchLogsResponse> => {
    const started = performance.now();
    const filters = filtersOf(req);
    const query = parseSearchQuery(req.query);
    const clause = compileSearchQuery(query);
    const scope = { kind: 'logs-search', environment: filters.environment };
    const { limit, after } = pageRequest(req, scope, ctx.secret, MAX_PAGE);
    const [rows, totalHits] = await Promise.all([ctx.store.list(filters, limit, positionOf(after), clause), ctx.store.count(filters, clause)]);
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    return {
      entries: page.map((r) => toLogEntry(r, definedOnly(highlight(highlightSource(r), query)))),
      totalHits,
      searchTimeMs: Math.round(performance.now() - started),
      hasMore,
      nextCursor: hasMore ? encodeCursor({ ...scope, after: cursorAfter(page.at(-1)!) }, ctx.secret) : '',
    };
  };
