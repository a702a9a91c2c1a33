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

/** One page of an export: `count` rows as JSONCompactEachRow lines (LOG_COLUMNS order), newest first. */
export interface RowPage {
  text: string;
  count: number;
}

/**
 * The rows of an export, newest first, in keyset pages of `pageSize` (one query each, reading one key range
 * of the table backwards): memory stays at one page whatever the export's size. The same SQL runs on chdb
 * and on a ClickHouse server. Rows travel as ClickHouse's JSONCompactEachRow text (decodeRowPage reads it),
 * so the audit service can pass pages to a worker without parsing them.
 */
export async function* exportPages(ch: ClickHouseClient, spec: ExportSpec, pageSize: number): AsyncGenerator<RowPage> {
  const { filters, clause } = exportCriteria(spec);
  let after: LogPosition | undefined;
  for (;;) {
    const base = filterClause(filters, after);
    const rs = await ch.query({
      query: `SELECT ${LOG_COLUMNS.join(', ')} FROM ${LOG_TABLE} WHERE ${base.where}${clause ? ` AND (${clause.where})` : ''}
              ORDER BY timestamp DESC, id DESC LIMIT {lim:UInt32}`,
      query_params: { ...base.params, ...clause?.params, lim: pageSize },
      format: 'JSONCompactEachRow',
      // Timestamps as ISO 8601 with Z straight from ClickHouse (the API's form): no rewriting per row.
      clickhouse_settings: { date_time_output_format: 'iso' },
    });
    const text = await rs.text();
    if (text.length === 0) return;
    const lastStart = text.lastIndexOf('\n', text.length - 2) + 1;
    const last = JSON.parse(text.slice(lastStart)) as unknown[];
    let count = 0;
    for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++;
    yield { text, count };
    if (count < pageSize) return;
    after = { timestamp: isoTime(String(last[2])), id: String(last[0]) };
  }
}

const TS = LOG_COLUMNS.indexOf('timestamp');

/** The rows of a page (or of any run of whole JSONCompactEachRow lines). */
export function decodeRowPage(text: string): LogRow[] {
  const body = text.endsWith('\n') ? text.slice(0, -1) : text;
  if (body.length === 0) return [];
  // One JSON.parse per page: lines are JSON arrays, and newlines inside strings are escaped.
  const rows = JSON.parse(`[${body.replaceAll('\n', ',')}]`) as unknown[][];
  const out = new Array<LogRow>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const r = rows[i]!;
    out[i] = {
      id: r[0] as string,
      environment: r[1] as string,
      timestamp: isoTime(r[TS] as string),
      event: r[3] as string,
      actor_id: r[4] as string,
      actor_email: r[5] as string,
      actor_type: r[6] as string,
      target_id: r[7] as string,
      target_type: r[8] as string,
      ip: r[9] as string,
      user_agent: r[10] as string,
      city: r[11] as string,
      country: r[12] as string,
      region: r[13] as string,
      lat: r[14] === null ? null : Number(r[14]),
      lng: r[15] === null ? null : Number(r[15]),
      result: r[16] as string,
      trace_id: r[17] as string,
      metadata: r[18] as string,
    };
  }
  return out;
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
