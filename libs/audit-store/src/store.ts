import { Readable } from 'node:stream';
import { canonicalEntry, type AuditChain, type ChainedRow, type EntryOrigin, type IncomingEntry } from './chain';
import type { ClickHouseClient } from './clickhouse';
import { LOG_COLUMNS, type LogRow } from './rows';
import { LOG_TABLE } from './schema';
import { TextIndexCounts } from './text-index-counts';

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
const INSERT_CHAINED = `INSERT INTO ${LOG_TABLE} (${[...LOG_COLUMNS, 'chain_seq', 'chain_link'].join(', ')}) FORMAT JSONCompactEachRow`;
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

/** The filters a count from the text index handles: the environment and a time window (key columns only). */
const indexCountable = (f: LogFilters): boolean => !f.events?.length && !f.actorId && !f.result;

const toRow = (r: LogRow): LogRow => ({ ...r, timestamp: isoTime(r.timestamp), lat: r.lat === null ? null : Number(r.lat), lng: r.lng === null ? null : Number(r.lng) });

/**
 * The audit log in ClickHouse: idempotent inserts, newest-first pages, lookups and search. The same SQL runs
 * on embedded chdb and on a ClickHouse server.
 */
export class LogStore {
  /** With a chain, every inserted entry gets its position and hash (tamper evidence); without, none (tests, benchmarks). */
  /** Where inserts go: `options.writer`, else the client every read uses. */
  private readonly writer: ClickHouseClient;

  constructor(
    private readonly ch: ClickHouseClient,
    private readonly chain?: AuditChain,
    /**
     * `minIndexedPartRows`: see MIN_INDEXED_PART_ROWS (tests set 0 to count from the text index whenever it can).
     * `writer`: a second client on the same ClickHouse for inserts. Embedded chdb runs one statement at a time
     * per connection, so on one connection a search waits for the insert in flight (a batch of 20,000 takes
     * about 150 ms); on a connection of their own inserts run beside the reads.
     */
    options: { minIndexedPartRows?: number; writer?: ClickHouseClient } = {},
  ) {
    this.indexCounter = new TextIndexCounts(ch, { minPartRows: options.minIndexedPartRows });
    this.writer = options.writer ?? ch;
  }

  /** Counts of one-term searches from the text index, and the per-part token counts it keeps. */
  private readonly indexCounter: TextIndexCounts;

  /**
   * Inserts the rows whose ids are not stored yet (at-least-once delivery hands some events twice): returns
   * how many were new. Duplicates inside the batch are dropped too (the first is kept). `origins[i]`: where
   * rows[i] came from on the bus; with the chain, a row from a known position is looked up by id only when it
   * may have been stored before (see AuditChain.append), every other row always. Each environment's rows are
   * inserted as one block, so each is all-or-nothing.
   */
  async insert(rows: LogRow[], origins?: ReadonlyArray<EntryOrigin | undefined>): Promise<number> {
    return this.insertEntries(rows.map((row, i) => ({ row, origin: origins?.[i] })));
  }

  /** insert() of entries that may carry their canonical form already (EventRecords). */
  async insertEntries(all: IncomingEntry[]): Promise<number> {
    const seen = new Set<string>();
    const entries = all.filter((e) => !seen.has(e.row.id) && !!seen.add(e.row.id));
    if (entries.length === 0) return 0;
    if (!this.chain) {
      const found = await this.storedIds(entries.map((e) => e.row));
      const fresh = entries.filter((e) => !found.has(e.row.id));
      if (fresh.length > 0) await this.write(fresh.map(({ row, canonical }) => ({ row, canonical, position: 0, link: 0 })));
      return fresh.length;
    }
    // One chain per environment, in the order the bus delivered them.
    const byEnvironment = new Map<string, IncomingEntry[]>();
    for (const e of entries) {
      const list = byEnvironment.get(e.row.environment);
      if (list) list.push(e);
      else byEnvironment.set(e.row.environment, [e]);
    }
    let inserted = 0;
    for (const [environment, list] of byEnvironment) {
      inserted += await this.chain.append(environment, list, (chained) => this.write(chained), (doubtful) => this.storedIds(doubtful));
    }
    return inserted;
  }

  /** The ids of `rows` the log holds already (looked up within the rows' time span, which the key narrows). */
  private async storedIds(rows: LogRow[]): Promise<Set<string>> {
    let lo = Infinity;
    let hi = -Infinity;
    for (const r of rows) {
      const t = Date.parse(r.timestamp);
      if (t < lo) lo = t;
      if (t > hi) hi = t;
    }
    const rs = await this.ch.query({
      query: `SELECT id FROM ${LOG_TABLE}
              WHERE timestamp >= toDateTime64({lo:String}, 3, 'UTC') AND timestamp <= toDateTime64({hi:String}, 3, 'UTC')
                AND id IN {ids:Array(String)}`,
      query_params: { lo: chTime(new Date(lo).toISOString()), hi: chTime(new Date(hi).toISOString()), ids: rows.map((r) => r.id) },
      format: 'JSONEachRow',
    });
    return new Set((await rs.json<{ id: string }>()).map((r) => r.id));
  }

  /**
   * Writes rows with their chain positions (0 when unchained) as one block. A row's canonical form is already
   * its values as a JSON array in column order (JSONCompactEachRow), the timestamp in ISO 8601: the position and
   * link are appended to it, so each entry is serialised once, for its hash and its insert.
   */
  async write(rows: Array<Pick<ChainedRow, 'row' | 'position' | 'link'> & Partial<ChainedRow>>): Promise<void> {
    const body = rows.map(({ row, canonical = canonicalEntry(row), position, link }) => `${canonical.slice(0, -1)},${position},${link}]`).join('\n');
    const { stream } = await this.writer.exec({
      query: INSERT_CHAINED,
      values: Readable.from([body]),
      // The canonical timestamp is ISO 8601 with a Z ("2026-11-28T10:00:00.000Z").
      clickhouse_settings: { date_time_input_format: 'best_effort' },
    });
    for await (const _ of stream); // the (empty) answer, read so that the connection is free again
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
   * reading its posting lists. See {@link TextIndexCounts}. An aborted `signal` calls the count off (rejects).
   */
  async count(filters: LogFilters, extra?: Clause, signal?: AbortSignal): Promise<number> {
    if (extra?.indexToken !== undefined && this.indexCounts && indexCountable(filters)) {
      try {
        for (let attempt = 0; attempt < 2; attempt++) {
          const n = await this.indexCounter.count(filters, filterClause(filters), extra, extra.indexToken, signal);
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
