import type { AuditChain, ChainedRow } from './chain';
import type { ClickHouseClient } from './clickhouse';
import { LOG_COLUMNS, type LogRow } from './rows';
import { LOG_TABLE } from './schema';

/** A keyset position in newest-first order: the last shown entry's time and id. */
export interface LogPosition {
  timestamp: string;
  id: string;
}

export interface LogFilters {
  environment: string;
  events?: string[];
  from?: string;
  to?: string;
  actorId?: string;
  result?: string;
}

/** The width of a count's bucket. */
export type CountInterval = 'hour' | 'day';

/** The entries of one event kind and result in one bucket. */
export interface LogCount {
  /** ISO 8601, the bucket's first instant (UTC). */
  start: string;
  event: string;
  result: string;
  count: number;
}

/** An extra WHERE clause with its ClickHouse parameters (from the search compiler). */
export interface Clause {
  where: string;
  params: Record<string, unknown>;
  /** The clause is exactly `hasToken(search_text, <indexToken>)` (CompiledSearch.indexToken): see LogStore.count. */
  indexToken?: string;
}

const SELECT = LOG_COLUMNS.join(', ');
// ClickHouse renders DateTime64 as "YYYY-MM-DD hh:mm:ss.sss" (UTC here); the API speaks ISO 8601.
export const isoTime = (ch: string): string => (ch.includes('T') ? ch : ch.replace(' ', 'T') + 'Z');
/** ISO 8601 → the text ClickHouse parses as DateTime64(3) in UTC. */
export const chTime = (isoText: string): string => new Date(isoText).toISOString().replace('T', ' ').replace('Z', '');

export function filterClause(f: LogFilters, after?: LogPosition): Clause {
  const parts = ['environment = {env:String}'];
  const params: Record<string, unknown> = { env: f.environment };
  if (f.events?.length) {
    parts.push('event IN {events:Array(String)}');
    params.events = f.events;
  }
  if (f.from) {
    parts.push(`timestamp >= toDateTime64({from:String}, 3, 'UTC')`);
    params.from = chTime(f.from);
  }
  if (f.to) {
    parts.push(`timestamp < toDateTime64({to:String}, 3, 'UTC')`);
    params.to = chTime(f.to);
  }
  if (f.actorId) {
    parts.push('actor_id = {actor:String}');
    params.actor = f.actorId;
  }
  if (f.result) {
    parts.push('result = {result:String}');
    params.result = f.result;
  }
  if (after) {
    // The tuple comparison alone is not a primary key condition: a page far back would read every newer granule
    // (5,000,000 entries back: 238 ms instead of 11). `timestamp <=` is implied by it and narrows the key range.
    parts.push(`timestamp <= toDateTime64({afterTs:String}, 3, 'UTC') AND (timestamp, id) < (toDateTime64({afterTs:String}, 3, 'UTC'), {afterId:String})`);
    params.afterTs = chTime(after.timestamp);
    params.afterId = after.id;
  }
  return { where: parts.join(' AND '), params };
}

/**
 * Counting matches row by row reads about the rows of the granules holding the term (index_granularity 1,024
 * rows each): ~35 ms for 10,000,000 rows here, ~5 ms for a rare term's few granules. A count from the text index
 * costs two more statements (~8 ms), so it is used when it spares reading at least this many rows.
 */
const MIN_SPARED_ROWS = 2_000_000;
const GRANULE_ROWS = 1024;

/** The filters a count from the text index handles: the environment and a time window (key columns only). */
const indexCountable = (f: LogFilters): boolean => !f.events?.length && !f.actorId && !f.result;

const toRow = (r: LogRow): LogRow => ({ ...r, timestamp: isoTime(r.timestamp), lat: r.lat === null ? null : Number(r.lat), lng: r.lng === null ? null : Number(r.lng) });

/**
 * The audit log in ClickHouse: idempotent inserts, newest-first pages, lookups and search. The same SQL runs
 * on embedded chdb and on a ClickHouse server.
 */
export class LogStore {
  /** With a chain, every inserted entry gets its position and hash (tamper evidence); without, none (tests, benchmarks). */
  constructor(
    private readonly ch: ClickHouseClient,
    private readonly chain?: AuditChain,
    /** `minSparedRows`: see MIN_SPARED_ROWS (tests set 0 to count from the text index whenever it can). */
    private readonly options: { minSparedRows?: number } = {},
  ) {}

  /**
   * Inserts the rows whose ids are not stored yet (at-least-once delivery hands some events twice): returns
   * how many were new. Duplicates inside the batch are dropped too. The insert is one block, so it is
   * all-or-nothing.
   */
  async insert(rows: LogRow[]): Promise<number> {
    const unique = [...new Map(rows.map((r) => [r.id, r])).values()];
    if (unique.length === 0) return 0;
    const times = unique.map((r) => Date.parse(r.timestamp));
    const existing = await this.ch.query({
      query: `SELECT id FROM ${LOG_TABLE}
              WHERE timestamp >= toDateTime64({lo:String}, 3, 'UTC') AND timestamp <= toDateTime64({hi:String}, 3, 'UTC')
                AND id IN {ids:Array(String)}`,
      query_params: {
        lo: chTime(new Date(Math.min(...times)).toISOString()),
        hi: chTime(new Date(Math.max(...times)).toISOString()),
        ids: unique.map((r) => r.id),
      },
      format: 'JSONEachRow',
    });
    const stored = new Set((await existing.json<{ id: string }>()).map((r) => r.id));
    const fresh = unique.filter((r) => !stored.has(r.id));
    if (fresh.length === 0) return 0;
    if (!this.chain) {
      await this.write(fresh.map((row) => ({ row, position: 0, hash: '', link: 0 })));
      return fresh.length;
    }
    // One chain per environment, in the order the bus delivered them.
    const byEnvironment = new Map<string, LogRow[]>();
    for (const r of fresh) {
      const rows = byEnvironment.get(r.environment);
      if (rows) rows.push(r);
      else byEnvironment.set(r.environment, [r]);
    }
    for (const [environment, rows] of byEnvironment) await this.chain.append(environment, rows, (chained) => this.write(chained));
    return fresh.length;
  }

  /** Writes rows with their chain positions (0 and empty when unchained) as one block. */
  async write(rows: ChainedRow[]): Promise<void> {
    // Arrays in column order (JSONCompactEachRow): a third less to encode and parse than keyed objects.
    await this.ch.insert({
      table: LOG_TABLE,
      values: rows.map(({ row, position, link }) => {
        const values: unknown[] = LOG_COLUMNS.map((c) => (c === 'timestamp' ? chTime(row.timestamp) : row[c]));
        values.push(position, link);
        return values;
      }),
      format: 'JSONCompactEachRow',
      columns: [...LOG_COLUMNS, 'chain_seq', 'chain_link'] as [string, ...string[]],
    });
  }

  /** A newest-first page (limit + 1 rows fetched, so the caller knows whether there is more). */
  async list(filters: LogFilters, limit: number, after?: LogPosition, extra?: Clause): Promise<LogRow[]> {
    const base = filterClause(filters, after);
    const where = extra ? `${base.where} AND (${extra.where})` : base.where;
    const rs = await this.ch.query({
      query: `SELECT ${SELECT} FROM ${LOG_TABLE} WHERE ${where} ORDER BY timestamp DESC, id DESC LIMIT {lim:UInt32}`,
      query_params: { ...base.params, ...extra?.params, lim: limit + 1 },
      format: 'JSONEachRow',
    });
    return (await rs.json<LogRow>()).map(toRow);
  }

  /**
   * How many entries match (search totals), exactly.
   *
   * A one-term search (`extra.indexToken`) over the environment and a time window counts from the text index
   * where that is cheaper than counting rows: the index keeps, per part, how many rows hold each token (the
   * length of its posting list), so a part's matches are that number less the matches outside the filter,
   * and the rows outside the filter are a prefix and a suffix of the part's key order (environment, timestamp)
   * that the primary key finds. A term found in most entries (`success`: 12 in 13) is then counted without
   * reading its posting lists. See {@link countFromTextIndex}. An aborted `signal` calls the count off (rejects).
   */
  async count(filters: LogFilters, extra?: Clause, signal?: AbortSignal): Promise<number> {
    if (extra?.indexToken !== undefined && this.indexCounts && indexCountable(filters)) {
      try {
        for (let attempt = 0; attempt < 2; attempt++) {
          const n = await this.countFromTextIndex(filters, extra, extra.indexToken, signal);
          if (n !== undefined) return n;
        }
      } catch (err) {
        // A server without the mergeTree* table functions (or the grants for them): count rows from now on.
        if (signal?.aborted || !(err instanceof Error && /UNKNOWN_FUNCTION|ACCESS_DENIED|NOT_IMPLEMENTED|Unknown table function|Not enough privileges/i.test(`${(err as { type?: string }).type ?? ''} ${err.message}`))) throw err;
        this.indexCounts = false;
      }
    }
    return this.countRows(filters, extra, signal);
  }

  /** Whether count() may use the text index's per-part token counts (off once the server refused them). */
  private indexCounts = true;

  private async countRows(filters: LogFilters, extra?: Clause, signal?: AbortSignal): Promise<number> {
    const base = filterClause(filters);
    const condition = extra ? `${base.where} AND (${extra.where})` : base.where;
    const rs = await this.ch.query({ query: `SELECT count() AS n FROM ${LOG_TABLE} WHERE ${condition}`, query_params: { ...base.params, ...extra?.params }, format: 'JSONEachRow', abort_signal: signal });
    const [row] = await rs.json<{ n: string | number }>();
    return Number(row?.n ?? 0);
  }

  /**
   * The matches of a one-term search, `undefined` when a merge replaced a part in between (the caller retries).
   *
   * 1. Per part: the share of its granules whose first key is inside the filter (primary index,
   *    `mergeTreeIndex`) and the number of rows holding the token (text index, `mergeTreeTextIndex`; no row
   *    there: the part does not hold the token). S: the parts mostly inside the filter. When S's token counts
   *    spare little row-by-row work (a rare term, or a window that cuts the big parts in half), rows are counted
   *    instead.
   * 2. One statement: matches inside the filter in parts not in S, and matches outside the filter in parts of S.
   * 3. All parts of S still active: parts only ever go from active to outdated, so they were active when 1 and 2
   *    read (a part a merge made from some of them would have been counted twice otherwise).
   * total = Σ_S token rows − matches outside the filter in S + matches inside the filter elsewhere.
   */
  private async countFromTextIndex(filters: LogFilters, extra: Clause, token: string, signal?: AbortSignal): Promise<number | undefined> {
    const base = filterClause(filters);
    // The parts active before statement 1: its two table functions may see the parts at different moments (a
    // part a merge made between them would show up with no token rows), so S must be parts active before both.
    const before = new Set(await this.activeParts(signal));
    const rs = await this.ch.query({
      query: `SELECT k.part_name AS part, k.rows AS rows, k.inside / k.marks AS share, ifNull(t.n, 0) AS n
              FROM (SELECT part_name, sum(rows_in_granule) AS rows, countIf(${base.where}) AS inside, count() AS marks FROM mergeTreeIndex(currentDatabase(), ${LOG_TABLE}) GROUP BY part_name) AS k
              LEFT JOIN (SELECT part_name, sum(cardinality) AS n FROM mergeTreeTextIndex(currentDatabase(), ${LOG_TABLE}, idx_search) WHERE token = {indexToken:String} GROUP BY part_name) AS t
              ON t.part_name = k.part_name`,
      query_params: { ...base.params, indexToken: token },
      format: 'JSONEachRow',
      abort_signal: signal,
    });
    const parts = (await rs.json<{ part: string; rows: string | number; share: number; n: string | number }>()).map((r) => ({ part: r.part, rows: Number(r.rows), share: Number(r.share), n: Number(r.n) }));
    const indexed = parts.filter((p) => p.share >= 0.5);
    if (indexed.some((p) => !before.has(p.part))) return undefined;
    // The rows a count reads in a share of a part: those of the granules that may hold the term.
    const read = (p: (typeof parts)[number], share: number) => Math.min(p.rows, p.n * GRANULE_ROWS) * share;
    const spared = indexed.reduce((sum, p) => sum + read(p, p.share) - read(p, 1 - p.share), 0);
    if (spared < (this.options.minSparedRows ?? MIN_SPARED_ROWS) || indexed.length === 0) return this.countRows(filters, extra, signal);
    const names = indexed.map((p) => p.part);
    const counted = await this.ch.query({
      query: `SELECT toInt64(count()) AS n FROM ${LOG_TABLE} WHERE ${base.where} AND (${extra.where}) AND _part NOT IN {indexParts:Array(String)}
              UNION ALL
              SELECT -toInt64(count()) AS n FROM ${LOG_TABLE} WHERE NOT (${base.where}) AND (${extra.where}) AND _part IN {indexParts:Array(String)}`,
      query_params: { ...base.params, ...extra.params, indexParts: names },
      format: 'JSONEachRow',
      abort_signal: signal,
    });
    const rest = (await counted.json<{ n: string | number }>()).reduce((sum, r) => sum + Number(r.n), 0);
    const after = new Set(await this.activeParts(signal));
    if (names.some((n) => !after.has(n))) return undefined;
    return indexed.reduce((sum, p) => sum + p.n, rest);
  }

  /** The names of the table's active parts now. */
  private async activeParts(signal?: AbortSignal): Promise<string[]> {
    const rs = await this.ch.query({
      query: `SELECT name FROM system.parts WHERE database = currentDatabase() AND table = {table:String} AND active`,
      query_params: { table: LOG_TABLE },
      format: 'JSONEachRow',
      abort_signal: signal,
    });
    return (await rs.json<{ name: string }>()).map((r) => r.name);
  }

  /**
   * How many entries per interval (hour or day, UTC), event kind and result: buckets with entries only, by
   * start, event and result.
   */
  async counts(filters: LogFilters, interval: CountInterval, extra?: Clause): Promise<LogCount[]> {
    const base = filterClause(filters);
    const where = extra ? `${base.where} AND (${extra.where})` : base.where;
    const start = interval === 'day' ? `toStartOfDay(timestamp, 'UTC')` : `toStartOfHour(timestamp, 'UTC')`;
    const rs = await this.ch.query({
      query: `SELECT ${start} AS start, event, result, count() AS n FROM ${LOG_TABLE} WHERE ${where}
              GROUP BY start, event, result ORDER BY start, event, result`,
      query_params: { ...base.params, ...extra?.params },
      format: 'JSONEachRow',
    });
    return (await rs.json<{ start: string; event: string; result: string; n: string | number }>()).map((r) => ({
      start: isoTime(r.start),
      event: r.event,
      result: r.result,
      count: Number(r.n),
    }));
  }

  async get(environment: string, id: string): Promise<LogRow | undefined> {
    const rs = await this.ch.query({
      query: `SELECT ${SELECT} FROM ${LOG_TABLE} WHERE environment = {env:String} AND id = {id:String} LIMIT 1`,
      query_params: { env: environment, id },
      format: 'JSONEachRow',
    });
    const [row] = await rs.json<LogRow>();
    return row ? toRow(row) : undefined;
  }
}
