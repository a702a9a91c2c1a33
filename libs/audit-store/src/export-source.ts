import type { ClickHouseClient } from './clickhouse';
import type { ExportSpec } from './export-jobs';
import { LOG_COLUMNS, type LogRow } from './rows';
import { LOG_TABLE } from './schema';
import { compileSearchQuery, parseSearchQuery } from './search';
import { filterClause, isoTime, type Clause, type LogFilters, type LogPosition } from './store';

/** The filters and the compiled search clause of an export (a bad query throws the parser's 400). */
export function exportCriteria(spec: ExportSpec): { filters: LogFilters; clause?: Clause } {
  const filters: LogFilters = { environment: spec.environment, from: spec.from, to: spec.to, events: spec.events.length ? spec.events : undefined };
  return { filters, clause: spec.query ? compileSearchQuery(parseSearchQuery(spec.query)) : undefined };
}

/** One page of an export: `count` rows as ClickHouse TabSeparated lines (LOG_COLUMNS order, then chain_seq), newest first. */
export interface RowPage {
  text: string;
  count: number;
}

/**
 * The rows of an export, newest first, in keyset pages of `pageSize` (one query each, reading one key range
 * of the table backwards): memory stays at one page whatever the export's size. The same SQL runs on chdb
 * and on a ClickHouse server. Rows travel as ClickHouse's TabSeparated text (decodeRowPage reads it), so the
 * audit service can pass pages to a worker without parsing them. TabSeparated, not JSON: ClickHouse writes it
 * in about 40 % less CPU per row, it is 20 % smaller, and reading it costs the same (measured on chdb).
 */
/** The columns of an export page: the stored entry, then its chain position (for the manifest's range). */
const EXPORT_COLUMNS = [...LOG_COLUMNS, 'chain_seq'].join(', ');
const EXPORT_FIELDS = LOG_COLUMNS.length + 1;

export async function* exportPages(ch: ClickHouseClient, spec: ExportSpec, pageSize: number): AsyncGenerator<RowPage> {
  const { filters, clause } = exportCriteria(spec);
  let after: LogPosition | undefined;
  for (;;) {
    const base = filterClause(filters, after);
    const rs = await ch.query({
      query: `SELECT ${EXPORT_COLUMNS} FROM ${LOG_TABLE} WHERE ${base.where}${clause ? ` AND (${clause.where})` : ''}
              ORDER BY timestamp DESC, id DESC LIMIT {lim:UInt32}`,
      query_params: { ...base.params, ...clause?.params, lim: pageSize },
      format: 'TabSeparated',
      // Timestamps as ISO 8601 with Z straight from ClickHouse (the API's form): no rewriting per row.
      clickhouse_settings: { date_time_output_format: 'iso' },
    });
    const text = await rs.text();
    if (text.length === 0) return;
    const lastStart = text.lastIndexOf('\n', text.length - 2) + 1;
    const last = text.slice(lastStart, text.length - 1).split('\t');
    const count = countLines(text);
    yield { text, count };
    if (count < pageSize) return;
    after = { timestamp: isoTime(unescapeTsv(last[2]!)), id: unescapeTsv(last[0]!) };
  }
}

const ESCAPES: Record<string, string> = { b: '\b', f: '\f', n: '\n', r: '\r', t: '\t', '0': '\0', '\\': '\\', "'": "'" };

/** A TabSeparated field's text: ClickHouse writes \b \f \n \r \t \0 \' and \\ for those characters. */
export function unescapeTsv(field: string): string {
  return field.includes('\\') ? field.replace(/\\(.)/gs, (_, c: string) => ESCAPES[c] ?? c) : field;
}

const float = (field: string) => (field === '\\N' ? null : Number(field));

/** The rows of a page (or of any run of whole TabSeparated lines in LOG_COLUMNS order). */
export function decodeRowPage(text: string): LogRow[] {
  return [...decodeRows(text)];
}

/**
 * The same rows one at a time, decoded as they are taken: a consumer that formats each before taking the next
 * keeps every row short-lived (collected young), instead of a page of rows that outlives the young generation
 * and makes the heap grow with the export's speed.
 */
export function* decodeRows(text: string | Buffer): Generator<LogRow> {
  let pos = 0;
  while (pos < text.length) {
    let end = typeof text === 'string' ? text.indexOf('\n', pos) : text.indexOf(10, pos);
    if (end === -1) end = text.length;
    // From a Buffer, line by line: no page-sized string (which V8 would place among long-lived objects).
    const line = typeof text === 'string' ? text.slice(pos, end) : text.toString('utf8', pos, end);
    const f = line.split('\t');
    pos = end + 1;
    if (f.length !== EXPORT_FIELDS) throw new Error(`export page: a row has ${f.length} fields, expected ${EXPORT_FIELDS}`);
    const row: LogRow = {
      id: unescapeTsv(f[0]!),
      environment: unescapeTsv(f[1]!),
      timestamp: isoTime(f[2]!),
      event: unescapeTsv(f[3]!),
      actor_id: unescapeTsv(f[4]!),
      actor_email: unescapeTsv(f[5]!),
      actor_type: unescapeTsv(f[6]!),
      target_id: unescapeTsv(f[7]!),
      target_type: unescapeTsv(f[8]!),
      ip: unescapeTsv(f[9]!),
      user_agent: unescapeTsv(f[10]!),
      city: unescapeTsv(f[11]!),
      country: unescapeTsv(f[12]!),
      region: unescapeTsv(f[13]!),
      lat: float(f[14]!),
      lng: float(f[15]!),
      result: unescapeTsv(f[16]!),
      trace_id: unescapeTsv(f[17]!),
      metadata: unescapeTsv(f[18]!),
      actor_name: unescapeTsv(f[19]!),
    };
    const position = Number(f[20]);
    if (position > 0) row.chain_seq = position;
    yield row;
  }
}

/** How many lines (rows) a run of whole TabSeparated lines holds: its line ends. */
export function countLines(text: string): number {
  let count = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

/** Splits page text into pieces of at most ~maxBytes at line ends (for messages of bounded size). */
export function splitLines(text: string, maxChars: number): string[] {
  const out: string[] = [];
  let start = 0;
  while (start < text.length) {
    if (text.length - start <= maxChars) {
      out.push(text.slice(start));
      break;
    }
    let cut = text.lastIndexOf('\n', start + maxChars - 1);
    if (cut < start) cut = text.indexOf('\n', start + maxChars);
    if (cut === -1) cut = text.length - 1;
    out.push(text.slice(start, cut + 1));
    start = cut + 1;
  }
  return out;
}
