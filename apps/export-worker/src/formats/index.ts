import type { ExportFormat, LogRow } from '@secsvc/audit-store';
import { CSV_HEADER, csvRecord } from './csv';
import { fullForm } from './full-form';

/** How a file of one format is put together: what comes first, each entry (the first one knows it is), the end. */
export interface FileFormat {
  contentType: string;
  head: string;
  entry: (row: LogRow, first: boolean) => string;
  tail: string;
}

export const FORMATS: Record<ExportFormat, FileFormat> = {
  /** RFC 4180 with a header row and CRLF line ends. */
  csv: { contentType: 'text/csv; charset=utf-8', head: CSV_HEADER, entry: (r) => csvRecord(r), tail: '' },
  /** One JSON array of SPEC full-form entries, one entry per line. */
  json: { contentType: 'application/json; charset=utf-8', head: '[', entry: (r, first) => (first ? '\n' : ',\n') + JSON.stringify(fullForm(r)), tail: '\n]\n' },
  /** One full-form entry per line (JSON Lines). */
  ndjson: { contentType: 'application/x-ndjson; charset=utf-8', head: '', entry: (r) => JSON.stringify(fullForm(r)) + '\n', tail: '' },
};

export { csvCell, csvRecord, CSV_COLUMNS, CSV_HEADER } from './csv';
export { fullForm, type FullEntry } from './full-form';
