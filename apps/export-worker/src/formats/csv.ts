import type { LogRow } from '@secsvc/audit-store';
import { memoByText, metadataOf } from './full-form';

/** The CSV columns: the full form's nested fields as dotted names, then metadata's known keys and the rest. */
export const CSV_COLUMNS = [
  'id',
  'timestamp',
  'event',
  'actor.id',
  'actor.email',
  'actor.type',
  'actor.name',
  'target.id',
  'target.type',
  'context.ip',
  'context.userAgent',
  'context.location.city',
  'context.location.country',
  'context.location.region',
  'context.location.coordinates.lat',
  'context.location.coordinates.lng',
  'result',
  'traceId',
  'metadata.authMethod',
  'metadata.mfaUsed',
  'metadata.other',
] as const;

/** Cells a spreadsheet would run as a formula (OWASP CSV injection: = + - @, and tab / carriage return). */
const FORMULA = /^[=+\-@\t\r]/;
/** Either of the two: the one test most cells (plain ids, times, names) need. */
const SPECIAL = /[",\r\n]|^[=+\-@\t]/;

/**
 * One text cell per RFC 4180 (quoted when it holds a comma, quote or line break; quotes doubled), made inert
 * for spreadsheets: a cell starting with =, +, -, @, tab or CR gets a leading apostrophe (and then quotes).
 */
export function csvCell(value: string): string {
  if (!SPECIAL.test(value)) return value;
  const v = FORMULA.test(value) ? `'${value}` : value;
  return `"${v.replaceAll('"', '""')}"`;
}

const num = (n: number | null) => (n === null ? '' : String(n));

/** The metadata columns: authMethod, mfaUsed, and every other key as one JSON object ('' when none). */
const metadataCells = memoByText((text: string): string => {
  const { authMethod, mfaUsed, ...other } = metadataOf(text);
  const rest = Object.keys(other).length ? JSON.stringify(other) : '';
  return `${authMethod === undefined ? '' : csvCell(String(authMethod))},${mfaUsed === undefined ? '' : csvCell(String(mfaUsed))},${csvCell(rest)}`;
});

export const CSV_HEADER = CSV_COLUMNS.join(',') + '\r\n';

/** One entry as a CSV record (CRLF-terminated). Numbers are written as numbers, never escaped. */
export function csvRecord(r: LogRow): string {
  const located = r.lat !== null && r.lng !== null;
  return (
    `${csvCell(r.id)},${csvCell(r.timestamp)},${csvCell(r.event)},${csvCell(r.actor_id)},${csvCell(r.actor_email)},${csvCell(r.actor_type)},${csvCell(r.actor_name)},` +
    `${csvCell(r.target_id)},${r.target_id ? csvCell(r.target_type) : ''},${csvCell(r.ip)},${csvCell(r.user_agent)},` +
    (located ? `${csvCell(r.city)},${csvCell(r.country)},${csvCell(r.region)},${num(r.lat)},${num(r.lng)},` : ',,,,,') +
    `${csvCell(r.result)},${csvCell(r.trace_id)},${metadataCells(r.metadata)}\r\n`
  );
}
