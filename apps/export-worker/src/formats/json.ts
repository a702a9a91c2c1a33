import { metadataObject } from './metadata';

/**
 * A stored metadata text as the full form's `metadata` value: the text itself when it is a JSON object
 * (metadataObject), with its line breaks (which in a valid JSON text lie between tokens) made spaces, so an
 * NDJSON entry stays one line; `{}` for anything else.
 */
export function metadataJson(raw: Uint8Array): string {
  const text = metadataObject(raw)?.text;
  if (text === undefined) return '{}';
  return /[\n\r]/.test(text) ? text.replace(/[\n\r]/g, ' ') : text;
}

/** The end of a JSON or NDJSON entry, after what ClickHouse wrote of it (up to `"metadata":`): the metadata, the closing brace and NDJSON's line break. */
export function jsonEntryTail(format: 'json' | 'ndjson'): (raw: Uint8Array) => Buffer {
  const close = format === 'ndjson' ? '}\n' : '}';
  return (raw) => Buffer.from(metadataJson(raw) + close);
}
