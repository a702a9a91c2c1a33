import type { ExportFormat } from './export-jobs';

/**
 * Export entries rendered by ClickHouse itself: each row of an export page carries its entry already in the
 * file's format (a CSV record, or the SPEC full form as JSON), so neither the audit service nor the worker
 * decodes or encodes a row; they copy bytes. These SQL expressions and FILE_FRAMES are the one definition of
 * the file formats; the worker adds the file's head, the separators between JSON entries, the tail, and each
 * entry's end from its stored metadata: a CSV record's three metadata cells (csvMetadataCells), a JSON entry's
 * metadata and closing brace (jsonEntryEnd). A handful of distinct metadata texts make up most of a log, so a
 * memo in the worker does them for less than ClickHouse's JSON functions would, row by row (checking JSON
 * metadata was a third of ClickHouse's work per JSON entry).
 *
 * Each entry has a plain form (the fields as they are) and an escaped form; the escaped one is computed only
 * for the rows that need it (a cheap byte test over the row's text fields picks them), which keeps ordinary rows at
 * the cost of one concatenation.
 *
 * CSV (RFC 4180, made inert for spreadsheets per OWASP): a cell starting with = + - @ tab or CR gets a leading
 * apostrophe; a cell holding a comma, quote or line break (or so guarded) is quoted with its quotes doubled.
 * JSON: strings through ClickHouse's JSON string writer (forward slashes left as they are).
 */

/** First characters a spreadsheet would run as a formula: = + - @ tab CR (their codes, for ascii()). */
const FORMULA_CODES = '(61, 43, 45, 64, 9, 13)';
const formulaStart = (x: string) => `ascii(${x}) IN ${FORMULA_CODES}`;

/** One CSV cell of a String expression, escaped (quoted when needed, formula-guarded). */
export function csvCellSql(x: string): string {
  const quoted = `concat('"', replaceAll(if(${formulaStart(x)}, concat('\\'', ${x}), ${x}), '"', '""'), '"')`;
  return `if(multiSearchAny(${x}, ['"', ',', '\\r', '\\n']) OR ${formulaStart(x)}, ${quoted}, ${x})`;
}

/** ISO 8601 with milliseconds and Z, as the API writes times (toString gives 'YYYY-MM-DD hh:mm:ss.sss'). */
const ISO_TIME = `concat(replaceOne(toString(timestamp), ' ', 'T'), 'Z')`;

const LOCATED = 'lat IS NOT NULL AND lng IS NOT NULL';
const num = (x: string) => `toString(assumeNotNull(${x}))`;

/** The CSV columns: the full form's nested fields as dotted names, then metadata's known keys and the rest. */
export const CSV_COLUMNS = [
  'id', 'timestamp', 'event', 'actor.id', 'actor.email', 'actor.type', 'actor.name', 'target.id', 'target.type',
  'context.ip', 'context.userAgent', 'context.location.city', 'context.location.country', 'context.location.region',
  'context.location.coordinates.lat', 'context.location.coordinates.lng', 'result', 'traceId', 'metadata.authMethod',
  'metadata.mfaUsed', 'metadata.other',
] as const;

/** A target's type shows only with a target. */
const TARGET_TYPE = `if(target_id != '', target_type, '')`;
/** The text cells of a record in order, `@` marking where the location's cells (or five empty ones) go. */
const CSV_TEXT = ['id', '@time', 'event', 'actor_id', 'actor_email', 'actor_type', 'actor_name', 'target_id', TARGET_TYPE, 'ip', 'user_agent', '@location', 'result', 'trace_id'];
const LOCATION_TEXT = ['city', 'country', 'region'];

/** A record up to its metadata cells (which follow its last comma), cells through `cell`. */
function csvRecordSql(cell: (x: string) => string): string {
  const parts = CSV_TEXT.map((x) => {
    if (x === '@time') return ISO_TIME;
    if (x === '@location') return `if(${LOCATED}, concat(${LOCATION_TEXT.map(cell).join(", ',', ")}, ',', ${num('lat')}, ',', ${num('lng')}), ',,,,')`;
    return cell(x);
  });
  return `concat(${parts.join(", ',', ")}, ',')`;
}

/**
 * The cells checked row by row: a user agent (commas are common there: "KHTML, like Gecko") is always escaped,
 * the rest are written as they are unless one of them holds a comma, quote or line break, or starts like a
 * formula, in which case the whole record takes the escaped form.
 */
const CSV_CHECKED = [...CSV_TEXT.filter((x) => !x.startsWith('@') && x !== 'user_agent'), ...LOCATION_TEXT];
const CSV_NEEDS_ESCAPE = `multiSearchAny(concat(${CSV_CHECKED.join(', ')}), ['"', ',', '\\r', '\\n']) OR ${CSV_CHECKED.map(formulaStart).join(' OR ')}`;
const CSV_ENTRY = `if(${CSV_NEEDS_ESCAPE}, ${csvRecordSql(csvCellSql)}, ${csvRecordSql((x) => (x === 'user_agent' ? csvCellSql(x) : x))})`;

/** JSON strings: a field with none of these bytes (quote, backslash, controls) is written between quotes as it is. */
const JSON_SPECIAL = [0x22, 0x5c, ...Array.from({ length: 32 }, (_, i) => i)];
const jsonSpecialSql = `[${JSON_SPECIAL.map((b) => `'\\x${b.toString(16).padStart(2, '0')}'`).join(', ')}]`;

/**
 * One entry in the SPEC full form (GET /logs/{id}) as compact JSON, fields in the SPEC's order, up to
 * `"metadata":` (the worker writes the metadata and the closing brace: entryEnd in apps/export-worker).
 */
function jsonEntrySql(str: (x: string) => string): string {
  const opt = (cond: string, text: string) => `if(${cond}, ${text}, '')`;
  return `concat('{"id":', ${str('id')}, ',"timestamp":"', ${ISO_TIME}, '","event":', ${str('event')},
    ',"actor":{', ${opt(`actor_id != ''`, `concat('"id":', ${str('actor_id')}, ',')`)}, ${opt(`actor_email != ''`, `concat('"email":', ${str('actor_email')}, ',')`)},
    '"type":', ${str('actor_type')}, ${opt(`actor_name != ''`, `concat(',"name":', ${str('actor_name')})`)}, '}',
    ${opt(`target_id != ''`, `concat(',"target":{"id":', ${str('target_id')}, ',"type":', ${str('target_type')}, '}')`)},
    ',"context":{"ip":', ${str('ip')}, ',"userAgent":', ${str('user_agent')},
    ${opt(LOCATED, `concat(',"location":{"city":', ${str('city')}, ',"country":', ${str('country')}, ',"region":', ${str('region')}, ',"coordinates":{"lat":', ${num('lat')}, ',"lng":', ${num('lng')}, '}}')`)},
    '},"result":', ${str('result')}, ',"traceId":', ${str('trace_id')}, ',"metadata":')`;
}
const JSON_TEXT = ['id', 'event', 'actor_id', 'actor_email', 'actor_type', 'actor_name', 'target_id', 'target_type', 'ip', 'user_agent', 'city', 'country', 'region', 'result', 'trace_id'];
const JSON_ENTRY = `if(multiSearchAny(concat(${JSON_TEXT.join(', ')}), ${jsonSpecialSql}), ${jsonEntrySql((x) => `toJSONString(${x})`)}, ${jsonEntrySql((x) => `concat('"', ${x}, '"')`)})`;

/**
 * The start of an export page's query up to FROM: its SELECT list, in this order (RowBinary): chain_seq UInt64,
 * the timestamp in ms (Int64), id, the entry up to its metadata, and the stored metadata text the worker ends
 * it with.
 */
export function renderedSelectSql(format: ExportFormat): string {
  return `SELECT chain_seq, toUnixTimestamp64Milli(timestamp), id, ${format === 'csv' ? CSV_ENTRY : JSON_ENTRY}, metadata`;
}

/** Settings every rendering query runs with: branches evaluated only for the rows that take them. */
export const RENDER_SETTINGS = { output_format_json_escape_forward_slashes: 0, short_circuit_function_evaluation: 'force_enable' } as const;

/** What a file has around its entries: the head, the separator before each entry after the first, the tail. */
export interface FileFrame {
  contentType: string;
  head: string;
  /** Written before the first entry. */
  first: string;
  /** Written before every later entry. */
  between: string;
  tail: string;
}

export const FILE_FRAMES: Record<ExportFormat, FileFrame> = {
  /** RFC 4180 with a header row and CRLF line ends. */
  csv: { contentType: 'text/csv; charset=utf-8', head: CSV_COLUMNS.join(',') + '\r\n', first: '', between: '', tail: '' },
  /** One JSON array of SPEC full-form entries, one entry per line. */
  json: { contentType: 'application/json; charset=utf-8', head: '[', first: '\n', between: ',\n', tail: '\n]\n' },
  /** One full-form entry per line (JSON Lines). */
  ndjson: { contentType: 'application/x-ndjson; charset=utf-8', head: '', first: '', between: '', tail: '' },
};
