import { metadataObject } from './metadata';

/** Cells a spreadsheet would run as a formula (OWASP CSV injection: = + - @, and tab / carriage return). */
const FORMULA = /^[=+\-@\t\r]/;
/** Either of the two: the one test most cells need. */
const SPECIAL = /[",\r\n]|^[=+\-@\t]/;

/**
 * One text cell per RFC 4180 (quoted when it holds a comma, quote or line break; quotes doubled), made inert
 * for spreadsheets: a cell starting with =, +, -, @, tab or CR gets a leading apostrophe (and then quotes).
 * The same rule as ClickHouse's csvCellSql (libs/audit-store export-render.ts), which writes every other cell.
 */
export function csvCell(value: string): string {
  if (!SPECIAL.test(value)) return value;
  const v = FORMULA.test(value) ? `'${value}` : value;
  return `"${v.replaceAll('"', '""')}"`;
}

/**
 * The end of a CSV record, after the cells ClickHouse wrote: metadata.authMethod, metadata.mfaUsed, and every
 * other key as one JSON object ('' when none), then CRLF, as UTF-8 bytes. A stored text that is not a JSON
 * object (metadataObject) makes three empty cells.
 */
export function csvMetadataCells(raw: Uint8Array): Buffer {
  const { authMethod, mfaUsed, ...other } = metadataObject(raw)?.value ?? {};
  const rest = Object.keys(other).length ? JSON.stringify(other) : '';
  return Buffer.from(`${authMethod === undefined ? '' : csvCell(String(authMethod))},${mfaUsed === undefined ? '' : csvCell(String(mfaUsed))},${csvCell(rest)}\r\n`);
}
