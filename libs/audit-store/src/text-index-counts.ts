import type { ClickHouseClient } from './clickhouse';
import { LOG_TABLE } from './schema';
import type { Clause, LogFilters } from './store';

/**
 * Parts with at least this many rows are counted from the text index (the rest row by row, which for a part
 * of a few hundred thousand rows costs a millisecond or two). Big parts are merged rarely, so their token counts
 * stay useful for long; fresh parts come and go every few seconds while entries arrive.
 */
export const MIN_INDEXED_PART_ROWS = 1_000_000;
/** How many (part, token) counts are kept; the least recently used go first. */
export const MAX_CACHED_TOKEN_COUNTS = 50_000;

/** An active part as system.parts lists it. */
interface Part {
  name: string;
  /** The part's name and the hash of all its files: a part never changes, so this names its content. */
  key: string;
  rows: number;
  /** The part's first and last second (`timestamp` is the partition key's column), 'YYYY-MM-DD hh:mm:ss' UTC. */
  minTime: string;
  maxTime: string;
}

/** The environment of a part's first and last row ('' when the primary index has no final mark to tell). */
interface KeyRange {
  first: string;
  last: string;
}

// ClickHouse's text: 'YYYY-MM-DD hh:mm:ss' (UTC); the filters': ISO 8601.
const msOf = (chTime: string): number => Date.parse(`${chTime.replace(' ', 'T')}Z`);
const NO_TIME = Date.parse('1970-01-01T00:00:00Z');
/** A part's time span in ms, a second wider on each side (system.parts shows whole seconds). */
const spanOf = (p: Part): [number, number] => [msOf(p.minTime) - 1000, msOf(p.maxTime) + 1000];

/**
 * Exact counts of a one-term search from the per-part token counts of the text index (`mergeTreeTextIndex`: the
 * length of a token's posting list in a part), kept in memory by part content and token: parts never change,
 * merges replace them by new ones with new names.
 *
 * A count, at the moment the active parts are listed:
 * - a big part wholly inside the filter (environment and window) holds exactly its token count of matches;
 * - a big part mostly inside: its token count less its matches outside the filter (a prefix and a suffix of its
 *   key order (environment, timestamp), which the primary key finds);
 * - every other part (small or mostly outside): its matches inside the filter, counted row by row.
 * The row counts are one statement, and the parts counted from the index must still be active after it (parts
 * only ever go from active to outdated, so they were active while it read; a part a merge made from one of
 * them would otherwise be counted twice). Token counts read in the same call are checked the same way (a part
 * gone before the read would have shown no token rows), and kept only then.
 */
export class TextIndexCounts {
  private readonly tokens = new Map<string, number>();
  private readonly keys = new Map<string, KeyRange>();

  constructor(
    private readonly ch: ClickHouseClient,
    private readonly options: { minPartRows?: number; maxCachedCounts?: number } = {},
  ) {}

  /** The matches of `extra` (exactly `hasToken(search_text, token)`) under the filters; `undefined` when a merge got in the way (call again). */
  async count(filters: LogFilters, base: Clause, extra: Clause, token: string, signal?: AbortSignal): Promise<number | undefined> {
    const parts = await this.activeParts(signal);
    const minRows = this.options.minPartRows ?? MIN_INDEXED_PART_ROWS;
    const big = parts.filter((p) => p.rows >= minRows && this.overlaps(p, filters));
    await this.learnKeyRanges(big, signal);
    // Inside: every row is in the filter. Mostly inside: by the part's time span (entries spread about evenly).
    const inside = big.filter((p) => this.inside(p, filters));
    const partial = big.filter((p) => !inside.includes(p) && this.shareInside(p, filters) >= 0.5);
    const indexed = [...inside, ...partial];
    const { counts, fetched } = await this.tokenCounts(indexed, token, signal);
    let total = indexed.reduce((sum, p) => sum + counts.get(p.key)!, 0);
    const rest = parts.filter((p) => !indexed.includes(p));
    if (rest.length || partial.length) {
      // Rows inside the filter in the other parts; rows outside it in the parts mostly inside.
      const statements = [`SELECT toInt64(count()) AS n FROM ${LOG_TABLE} WHERE ${base.where} AND (${extra.where})${indexed.length ? ' AND _part NOT IN {indexParts:Array(String)}' : ''}`];
      if (partial.length) statements.push(`SELECT -toInt64(count()) AS n FROM ${LOG_TABLE} WHERE NOT (${base.where}) AND (${extra.where}) AND _part IN {partialParts:Array(String)}`);
      const counted = await this.ch.query({
        query: statements.join('\nUNION ALL\n'),
        query_params: { ...base.params, ...extra.params, ...(indexed.length && { indexParts: indexed.map((p) => p.name) }), ...(partial.length && { partialParts: partial.map((p) => p.name) }) },
        format: 'JSONEachRow',
        abort_signal: signal,
      });
      total += (await counted.json<{ n: string | number }>()).reduce((sum, r) => sum + Number(r.n), 0);
      if (!indexed.length) return total;
    } else if (!fetched.length) return total; // all from memory, as of the listing
    const after = new Set((await this.activeParts(signal)).map((p) => p.key));
    if (indexed.some((p) => !after.has(p.key))) {
      for (const p of fetched) this.tokens.delete(tokenKey(p, token));
      return undefined;
    }
    return total;
  }

  /** The table's active parts now (one statement without parameters: chdb runs it beside the parameterised ones). */
  private async activeParts(signal?: AbortSignal): Promise<Part[]> {
    const rs = await this.ch.query({
      query: `SELECT name, hash_of_all_files AS hash, rows, toString(min_time) AS min, toString(max_time) AS max
              FROM system.parts WHERE database = currentDatabase() AND table = '${LOG_TABLE}' AND active`,
      format: 'JSONEachRow',
      abort_signal: signal,
    });
    return (await rs.json<{ name: string; hash: string; rows: string | number; min: string; max: string }>()).map((r) => ({
      name: r.name,
      key: `${r.name}/${r.hash}`,
      rows: Number(r.rows),
      minTime: r.min,
      maxTime: r.max,
    }));
  }

  /** The environments of the parts' first and last rows, from the primary index (first and final marks). */
  private async learnKeyRanges(parts: Part[], signal?: AbortSignal): Promise<void> {
    const missing = parts.filter((p) => !this.keys.has(p.key));
    if (!missing.length) return;
    const rs = await this.ch.query({
      query: `SELECT part_name AS part, argMin(environment, mark_number) AS first, argMax(environment, mark_number) AS last, countIf(rows_in_granule = 0) AS final
              FROM mergeTreeIndex(currentDatabase(), ${LOG_TABLE}) WHERE part_name IN {parts:Array(String)} GROUP BY part_name`,
      query_params: { parts: missing.map((p) => p.name) },
      format: 'JSONEachRow',
      abort_signal: signal,
    });
    const found = new Map((await rs.json<{ part: string; first: string; last: string; final: string | number }>()).map((r) => [r.part, r]));
    for (const p of missing) {
      const r = found.get(p.name);
      // A part merged away meanwhile (no rows) or without a final mark: its rows' environments are not known.
      this.remember(this.keys, p.key, r && Number(r.final) > 0 ? { first: r.first, last: r.last } : { first: '', last: '' });
    }
  }

  /** The parts' token counts (by part key), and the parts whose counts were read now (the check after the count drops them if it fails). */
  private async tokenCounts(parts: Part[], token: string, signal?: AbortSignal): Promise<{ counts: Map<string, number>; fetched: Part[] }> {
    const counts = new Map<string, number>();
    const missing = parts.filter((p) => {
      const n = this.tokens.get(tokenKey(p, token));
      if (n === undefined) return true;
      counts.set(p.key, n);
      this.tokens.delete(tokenKey(p, token)); // least recently used last
      this.tokens.set(tokenKey(p, token), n);
      return false;
    });
    if (!missing.length) return { counts, fetched: [] };
    const rs = await this.ch.query({
      query: `SELECT part_name AS part, sum(cardinality) AS n FROM mergeTreeTextIndex(currentDatabase(), ${LOG_TABLE}, idx_search)
              WHERE token = {indexToken:String} AND part_name IN {parts:Array(String)} GROUP BY part_name`,
      query_params: { indexToken: token, parts: missing.map((p) => p.name) },
      format: 'JSONEachRow',
      abort_signal: signal,
    });
    const found = new Map((await rs.json<{ part: string; n: string | number }>()).map((r) => [r.part, Number(r.n)]));
    // No row: the part does not hold the token (or was merged away: the check after the count finds that out).
    for (const p of missing) {
      counts.set(p.key, found.get(p.name) ?? 0);
      this.remember(this.tokens, tokenKey(p, token), found.get(p.name) ?? 0);
    }
    return { counts, fetched: missing };
  }

  private remember<T>(map: Map<string, T>, key: string, value: T): void {
    map.set(key, value);
    const max = this.options.maxCachedCounts ?? MAX_CACHED_TOKEN_COUNTS;
    for (const oldest of map.keys()) {
      if (map.size <= max) break;
      map.delete(oldest);
    }
  }

  /** Whether the part's time span meets the window (its environments are checked with the key range). */
  private overlaps(p: Part, f: LogFilters): boolean {
    const [lo, hi] = spanOf(p);
    return !(f.from && hi <= Date.parse(f.from)) && !(f.to && lo >= Date.parse(f.to));
  }

  /** Whether every row of the part is inside the filter: one environment, and its whole time span in the window. */
  private inside(p: Part, f: LogFilters): boolean {
    const range = this.keys.get(p.key);
    if (!range || range.first !== f.environment || range.last !== f.environment) return false;
    const [lo, hi] = spanOf(p);
    if ((f.from || f.to) && lo + 1000 === NO_TIME) return false;
    return !(f.from && lo < Date.parse(f.from)) && !(f.to && hi > Date.parse(f.to));
  }

  /** About how much of the part is inside the filter (0 when its rows are of other environments). */
  private shareInside(p: Part, f: LogFilters): number {
    const range = this.keys.get(p.key);
    if (range?.first && range.first === range.last && range.first !== f.environment) return 0;
    const [lo, hi] = spanOf(p);
    if (lo + 1000 === NO_TIME) return f.from || f.to ? 0 : 1;
    const from = Math.max(lo, f.from ? Date.parse(f.from) : lo);
    const to = Math.min(hi, f.to ? Date.parse(f.to) : hi);
    return Math.max(0, to - from) / (hi - lo);
  }
}

const tokenKey = (p: Part, token: string) => `${p.key}\n${token}`;
