import { memoByText } from './csv';

// ignoreBOM: a byte order mark is kept (the decoder would drop it by default), so such a text is not an object.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** A JSON object's text, after any JSON whitespace. */
const OBJECT_START = /^[ \t\n\r]*\{/;
/** Longer metadata texts are rarely repeated: worked out each time rather than kept. */
const MEMO_MAX_BYTES = 512;

/**
 * A stored metadata text as the full form's `metadata` value: the text itself when it is a JSON object (what
 * JSON.parse makes an object of: JSON whitespace around it, an escaped lone surrogate as JSON.stringify writes
 * half an emoji), with its line breaks (which in a valid JSON text lie between tokens) made spaces, so an
 * NDJSON entry stays one line; `{}` for anything else, bytes that are not UTF-8 included.
 */
export function metadataJson(raw: Buffer): string {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return '{}';
  }
  if (!OBJECT_START.test(text)) return '{}';
  try {
    JSON.parse(text);
  } catch {
    return '{}';
  }
  return /[\n\r]/.test(text) ? text.replace(/[\n\r]/g, ' ') : text;
}

/**
 * The end of a JSON or NDJSON entry, after what ClickHouse wrote of it (up to `"metadata":`): the metadata
 * (metadataJson of the stored bytes `bytes[start, end)`), the closing brace and NDJSON's line break, as UTF-8.
 * Checked once per distinct short metadata text (a handful make up most logs): ClickHouse checking it row by
 * row was a third of its work per JSON entry.
 */
export function jsonEntryEnd(format: 'json' | 'ndjson'): (bytes: Buffer, start: number, end: number) => Buffer {
  const close = format === 'ndjson' ? '}\n' : '}';
  const make = (raw: Buffer) => Buffer.from(metadataJson(raw) + close);
  // Keyed by the bytes as latin1 (one character per byte): the key is the stored bytes, whatever they are.
  const memo = memoByText((key: string) => make(Buffer.from(key, 'latin1')));
  return (bytes, start, end) => (end - start > MEMO_MAX_BYTES ? make(bytes.subarray(start, end)) : memo(bytes.toString('latin1', start, end)));
}
