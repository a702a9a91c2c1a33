import { AppError, encodeCursor, environmentOf, isId, pageRequest, type FieldError } from '@secsvc/shared';
import type { LogRow } from '../rows';
import { compileSearchQuery, highlight, parseSearchQuery, type HighlightSource } from '../search';
import type { CountInterval, LogCount, LogPosition, LogStore } from '../store';
import { filtersOf, windowErrors, type FilterRequest } from './requests';

export const MAX_PAGE = 100;

/** What the log reads need of the store: LogStore, or a fake in unit tests. */
export type LogReader = Pick<LogStore, 'list' | 'count' | 'get' | 'counts'>;

/** The longest window a count may cover, per bucket width (at most 744 hours, or 366 days). */
export const MAX_COUNT_WINDOW_DAYS: Record<CountInterval, number> = { hour: 31, day: 366 };

/** A page request: how many entries, and the cursor of the previous page ('' for the first). */
export interface PageRequest {
  limit: number;
  cursor: string;
}

export interface LogPage {
  rows: LogRow[];
  hasMore: boolean;
  /** '' when there is no more. */
  nextCursor: string;
}

export interface SearchHit {
  row: LogRow;
  /** The matched fields' text with the matches marked, by the SPEC's field names. */
  highlights: Record<string, string>;
}

export interface SearchResult {
  hits: SearchHit[];
  totalHits: number;
  searchTimeMs: number;
  hasMore: boolean;
  nextCursor: string;
}

/** A list position `<iso time>|<log id>` from a cursor. */
export function positionOf(after: string | undefined): LogPosition | undefined {
  if (after === undefined) return undefined;
  const [timestamp, id] = after.split('|');
  if (!timestamp || !id || Number.isNaN(Date.parse(timestamp))) throw AppError.field('cursor', 'invalid or expired cursor');
  return { timestamp, id };
}

export const cursorAfter = (row: { timestamp: string; id: string }) => `${row.timestamp}|${row.id}`;

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
 * The reads of the audit log: newest-first pages (list and full-text search, with signed cursors scoped to
 * the list and environment) and single entries. Requests are checked here (400 naming every faulty field).
 */
export class LogQueries {
  constructor(
    private readonly store: LogReader,
    /** SERVER_SECRET: signs the cursors. */
    private readonly secret: string,
  ) {}

  /** A newest-first page of the entries the filters select. */
  async list(req: FilterRequest & PageRequest): Promise<LogPage> {
    const filters = filtersOf(req);
    const scope = { kind: 'logs', environment: filters.environment };
    const { limit, after } = pageRequest(req, scope, this.secret, MAX_PAGE);
    const rows = await this.store.list(filters, limit, positionOf(after));
    return this.page(rows, limit, scope);
  }

  /**
   * Full-text search (the query language is in docs/api/search.md): newest first within the time window, with
   * highlights per matched field and the total number of hits.
   */
  async search(req: FilterRequest & PageRequest & { query: string }): Promise<SearchResult> {
    const started = performance.now();
    const filters = filtersOf(req);
    const query = parseSearchQuery(req.query);
    const clause = compileSearchQuery(query);
    const scope = { kind: 'logs-search', environment: filters.environment };
    const { limit, after } = pageRequest(req, scope, this.secret, MAX_PAGE);
    // The page and the total at once (a ClickHouse server runs them side by side; chdb runs one query at a time,
    // the page first). A first page that holds every match is the total: the count is then called off (on chdb
    // before it starts).
    const counting = new AbortController();
    const listing = this.store.list(filters, limit, positionOf(after), clause);
    const total = this.store.count(filters, clause, counting.signal);
    total.catch(() => undefined); // awaited below unless called off
    let rows: LogRow[];
    try {
      rows = await listing;
    } catch (err) {
      counting.abort();
      throw err;
    }
    let totalHits: number;
    if (!after && rows.length <= limit) {
      counting.abort();
      totalHits = rows.length;
    } else totalHits = await total;
    const { rows: page, hasMore, nextCursor } = this.page(rows, limit, scope);
    const hits = page.map((row) => ({ row, highlights: definedOnly(highlight(highlightSource(row), query)) }));
    return { hits, totalHits, searchTimeMs: Math.round(performance.now() - started), hasMore, nextCursor };
  }

  /**
   * The entries per hour (or day), event kind and result that the filters and the search query (optional)
   * select, over a window of at most 31 days of hours (366 of days): a chart's data, counted where the entries are.
   */
  async counts(req: FilterRequest & { query?: string; interval?: string }): Promise<{ counts: LogCount[]; total: number }> {
    const interval = (req.interval || 'hour') as CountInterval;
    const errors: FieldError[] = [];
    const known = interval === 'hour' || interval === 'day';
    if (!known) errors.push({ field: 'interval', message: 'must be hour or day' });
    errors.push(...windowErrors(req, known ? MAX_COUNT_WINDOW_DAYS[interval] : undefined, ` with interval ${interval}`));
    let clause;
    try {
      clause = req.query ? compileSearchQuery(parseSearchQuery(req.query)) : undefined;
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
      errors.push(...err.details);
    }
    let filters;
    try {
      filters = filtersOf(req);
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
      errors.push(...err.details);
    }
    if (errors.length || !filters) throw AppError.invalid(errors);
    const counts = await this.store.counts(filters, interval, clause);
    return { counts, total: counts.reduce((n, c) => n + c.count, 0) };
  }

  /** One entry of the environment; a malformed id names no entry: the same 404 as an unknown one. */
  async get(req: { environment: string; id: string }): Promise<LogRow> {
    const environment = environmentOf(req.environment);
    const row = isId('log', req.id) ? await this.store.get(environment, req.id) : undefined;
    if (!row) throw AppError.notFound('Log entry');
    return row;
  }

  /** The page of `limit + 1` rows fetched: the rows to show, whether there is more, and the next cursor. */
  private page(rows: LogRow[], limit: number, scope: { kind: string; environment: string }): LogPage {
    const page = rows.slice(0, limit);
    const hasMore = rows.length > limit;
    return { rows: page, hasMore, nextCursor: hasMore ? encodeCursor({ ...scope, after: cursorAfter(page.at(-1)!) }, this.secret) : '' };
  }
}
