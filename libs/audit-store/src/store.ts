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
    parts.push(`(timestamp, id) < (toDateTime64({afterTs:String}, 3, 'UTC'), {afterId:String})`);
    params.afterTs = chTime(after.timestamp);
    params.afterId = after.id;
  }
  return { where: parts.join(' AND '), params };
}

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

  /** How many entries match (search totals). */
  async count(filters: LogFilters, extra?: Clause): Promise<number> {
    const base = filterClause(filters);
    const where = extra ? `${base.where} AND (${extra.where})` : base.where;
    const rs = await this.ch.query({ query: `SELECT count() AS n FROM ${LOG_TABLE} WHERE ${where}`, query_params: { ...base.params, ...extra?.params }, format: 'JSONEachRow' });
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
