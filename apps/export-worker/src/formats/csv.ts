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

/** A stored metadata text as an object ({} when it is not a JSON object). */
export function metadataOf(text: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/**
 * A memo of what a function makes of a metadata text: most entries share a handful of metadata texts
 * ({"authMethod":"password","mfaUsed":false}, ...), so each is parsed once. Bounded: emptied when full.
 */
export function memoByText<T>(fn: (text: string) => T, max = 4096): (text: string) => T {
  const memo = new Map<string, T>();
  return (text) => {
    let v = memo.get(text);
    if (v === undefined) {
      if (memo.size >= max) memo.clear();
      v = fn(text);
      memo.set(text, v);
    }
    return v;
  };
}

/**
 * The end of a CSV record, after the cells ClickHouse wrote: metadata.authMethod, metadata.mfaUsed, and every
 * other key as one JSON object ('' when none), then CRLF, as UTF-8 bytes.
 */
export const csvMetadataCells = memoByText((text: string): Buffer => {
  const { authMethod, mfaUsed, ...other } = metadataOf(text);
  const rest = Object.keys(other).length ? JSON.stringify(other) : '';
  return Buffer.from(`${authMethod === undefined ? '' : csvCell(String(authMethod))},${mfaUsed === undefined ? '' : csvCell(String(mfaUsed))},${csvCell(rest)}\r\n`);
});
