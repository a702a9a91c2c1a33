// ignoreBOM: a byte order mark is kept (the decoder would drop it by default), so such a text is not an object.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** A JSON object's text, after any JSON whitespace. */
const OBJECT_START = /^[ \t\n\r]*\{/;

/** A stored metadata text that is a JSON object: the text, and the object JSON.parse makes of it. */
export interface MetadataObject {
  text: string;
  value: Record<string, unknown>;
}

/**
 * The one rule both export formats apply to a stored metadata text: it is the entry's metadata when JSON.parse
 * makes an object of it (JSON whitespace around it allowed, an escaped lone surrogate as JSON.stringify writes
 * half an emoji); anything else (bytes that are not UTF-8, a byte order mark, an array, a scalar, trailing
 * text) makes none, and the entry's metadata is `{}`.
 */
export function metadataObject(raw: Uint8Array): MetadataObject | undefined {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    return undefined;
  }
  if (!OBJECT_START.test(text)) return undefined;
  try {
    return { text, value: JSON.parse(text) as Record<string, unknown> };
  } catch {
    return undefined;
  }
}

/**
 * A memo of what `make` turns a stored metadata text into (the end of an export entry), keyed by the stored
 * bytes `bytes[start, end)` themselves: most entries share a handful of metadata texts
 * ({"authMethod":"password","mfaUsed":false}, ...), so each is checked once. Texts longer than `maxBytes` are
 * rarely repeated and made each time; the memo empties itself when it holds `maxEntries`.
 */
export function memoByBytes(make: (raw: Buffer) => Buffer, maxEntries = 4096, maxBytes = 512): (bytes: Buffer, start: number, end: number) => Buffer {
  const memo = new Map<string, Buffer>();
  return (bytes, start, end) => {
    if (end - start > maxBytes) return make(bytes.subarray(start, end));
    // latin1: one character per byte, so the key is the stored bytes, whatever they are.
    const key = bytes.toString('latin1', start, end);
    let made = memo.get(key);
    if (made === undefined) {
      if (memo.size >= maxEntries) memo.clear();
      made = make(bytes.subarray(start, end));
      memo.set(key, made);
    }
    return made;
  };
}
