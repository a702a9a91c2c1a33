import type { ClickHouseClient } from './clickhouse';
import type { ExportFormat, ExportSpec } from './export-jobs';
import { RENDER_SETTINGS, renderedSelectSql } from './export-render';
import { LOG_COLUMNS } from './rows';
import { LOG_TABLE } from './schema';
import { compileSearchQuery, parseSearchQuery } from './search';
import { filterClause, type Clause, type LogFilters, type LogPosition } from './store';

/** The filters and the compiled search clause of an export (a bad query throws the parser's 400). */
export function exportCriteria(spec: ExportSpec): { filters: LogFilters; clause?: Clause } {
  const filters: LogFilters = { environment: spec.environment, from: spec.from, to: spec.to, events: spec.events.length ? spec.events : undefined };
  return { filters, clause: spec.query ? compileSearchQuery(parseSearchQuery(spec.query)) : undefined };
}

/** One page of an export, or a run of its whole rows: `count` rows in ClickHouse RowBinary (RenderedRows reads them). */
export interface RenderedPage {
  bytes: Buffer;
  count: number;
}

/** What rendering reads of a row: the stored entry and its chain position. */
const PAGE_COLUMNS = [...LOG_COLUMNS, 'chain_seq'].join(', ');

/** A raw result's bytes (chdb hands over one Buffer; a ClickHouse server streams pieces). */
async function bytesOf(stream: AsyncIterable<Buffer | Uint8Array>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.isBuffer(part) ? part : Buffer.from(part));
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/**
 * The rows of an export, newest first, rendered by ClickHouse in the export's format (export-render.ts), in
 * keyset pages of `pageSize` (one query each, reading one key range of the table backwards). The next page's
 * query starts as soon as a page has arrived, so ClickHouse renders it while the page travels on: memory
 * stays at two pages whatever the export's size. The same SQL runs on chdb and on a ClickHouse server.
 */
export async function* exportPages(
  ch: ClickHouseClient,
  spec: ExportSpec,
  format: ExportFormat,
  pageSize: number,
  /** Also cut each page into runs of whole rows of about this size (`runs`), in the same walk over its rows. */
  maxRunBytes = Infinity,
): AsyncGenerator<RenderedPage & { runs: RenderedPage[] }> {
  const { filters, clause } = exportCriteria(spec);
  const select = renderedSelectSql(format);
  const abort = new AbortController();
  const read = (after?: LogPosition): Promise<Buffer> => {
    const base = filterClause(filters, after);
    const page = ch
      .exec({
        // The page's rows are picked first and rendered after (rendering in the same SELECT renders whole
        // blocks read before the LIMIT applies: about a fifth more CPU, measured on chdb).
        query: `${select} FROM (SELECT ${PAGE_COLUMNS} FROM ${LOG_TABLE} WHERE ${base.where}${clause ? ` AND (${clause.where})` : ''}
                ORDER BY timestamp DESC, id DESC LIMIT {lim:UInt32}) ORDER BY timestamp DESC, id DESC FORMAT RowBinary`,
        query_params: { ...base.params, ...clause?.params, lim: pageSize },
        clickhouse_settings: RENDER_SETTINGS,
        abort_signal: abort.signal,
      })
      .then((r) => bytesOf(r.stream));
    // A prefetched page may fail while the one before is still being taken: handled here, so the failure is
    // not an unhandled rejection (which ends the process); the await below still throws it.
    page.catch(() => undefined);
    return page;
  };
  let next: Promise<Buffer> | undefined = read();
  try {
    while (next) {
      const bytes = await next;
      next = undefined;
      const { count, runs, last } = scanRows(bytes, maxRunBytes);
      if (count === 0) return;
      if (count === pageSize) next = read({ timestamp: new Date(last.ms).toISOString(), id: bytes.toString('utf8', last.idStart, last.idEnd) });
      yield { bytes, count, runs };
    }
  } finally {
    // A taker that stops early (or a failure) leaves a prefetched page nobody reads: its query is called off.
    abort.abort();
  }
}

/**
 * Reads rendered rows in place (no allocation per row): each next() moves to the following row and sets its
 * chain position, time (ms), and where its id, entry and metadata lie in `bytes`. RowBinary: chain_seq UInt64,
 * the time Int64, then id, entry and metadata, each a LEB128 length and its bytes.
 */
export class RenderedRows {
  /** Where the next row starts. */
  pos = 0;
  /** Where the current row starts. */
  start = 0;
  seq = 0;
  ms = 0;
  idStart = 0;
  idEnd = 0;
  entryStart = 0;
  entryEnd = 0;
  metaStart = 0;
  metaEnd = 0;

  constructor(readonly bytes: Buffer) {}

  next(): boolean {
    const b = this.bytes;
    if (this.pos >= b.length) return false;
    this.start = this.pos;
    if (this.pos + 16 > b.length) throw new Error('export page: a row is cut short');
    this.seq = b.readUInt32LE(this.pos) + b.readUInt32LE(this.pos + 4) * 2 ** 32;
    this.ms = b.readUInt32LE(this.pos + 8) + b.readInt32LE(this.pos + 12) * 2 ** 32;
    this.pos += 16;
    this.idStart = this.string();
    this.idEnd = this.pos;
    this.entryStart = this.string();
    this.entryEnd = this.pos;
    this.metaStart = this.string();
    this.metaEnd = this.pos;
    return true;
  }

  /** Skips one string, returning where its bytes start. */
  private string(): number {
    const b = this.bytes;
    let len = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= b.length) throw new Error('export page: a row is cut short');
      const byte = b[this.pos++]!;
      len += (byte & 0x7f) * 2 ** shift;
      if (byte < 0x80) break;
      shift += 7;
    }
    const at = this.pos;
    this.pos += len;
    if (this.pos > b.length) throw new Error('export page: a row is cut short');
    return at;
  }
}

/**
 * One walk over a page's rows: how many, the last one (its reader, left on it), and the page cut at row ends
 * into runs of at most ~maxBytes (a row larger than that is a run of its own).
 */
export function scanRows(bytes: Buffer, maxBytes: number): { count: number; runs: RenderedPage[]; last: RenderedRows } {
  const rows = new RenderedRows(bytes);
  const runs: RenderedPage[] = [];
  let total = 0;
  let runStart = 0;
  let count = 0;
  while (rows.next()) {
    if (count > 0 && rows.pos - runStart > maxBytes) {
      runs.push({ bytes: bytes.subarray(runStart, rows.start), count });
      runStart = rows.start;
      count = 0;
    }
    count++;
    total++;
  }
  if (count > 0) runs.push({ bytes: runStart === 0 ? bytes : bytes.subarray(runStart), count });
  return { count: total, runs, last: rows };
}
