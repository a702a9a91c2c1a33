import type { ByteRange } from './port';

/**
 * The one byte range an HTTP `Range` header asks of an object of `size` bytes (RFC 9110 14.1.2):
 * - undefined: no header, another unit, several ranges or a malformed value: send the whole object
 *   (a server may ignore a Range header it does not serve);
 * - 'unsatisfiable': a single range that starts at or beyond the end (416);
 * - else the range, clamped to the object.
 */
export function parseByteRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (!header) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    // Suffix: the last N bytes.
    const n = Number(m[2]);
    if (n === 0) return 'unsatisfiable';
    return size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - n), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? Infinity : Number(m[2]);
  if (end < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}
