import type { ExportFormat } from '@secsvc/audit-store';
import { csvMetadataCells } from './csv';
import { jsonEntryTail } from './json';
import { memoByBytes } from './metadata';

export { csvCell, csvMetadataCells } from './csv';
export { jsonEntryTail, metadataJson } from './json';
export { memoByBytes, metadataObject } from './metadata';

/**
 * The end of an export entry, after what ClickHouse wrote of it, made from the entry's stored metadata bytes
 * `bytes[start, end)` through a memo (a log holds few distinct metadata texts; ClickHouse checking them row by
 * row was a third of its work per entry): a CSV record's three metadata cells and CRLF, or a JSON entry's
 * `metadata`, closing brace and NDJSON's line break.
 */
export function entryEnd(format: ExportFormat): (bytes: Buffer, start: number, end: number) => Buffer {
  return memoByBytes(format === 'csv' ? csvMetadataCells : jsonEntryTail(format));
}
