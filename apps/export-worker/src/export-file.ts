import { createHash } from 'node:crypto';
import { FILE_FRAMES, RenderedRows, type ExportFormat, type ExportSpec } from '@secsvc/audit-store';
import type { ObjectStore } from '@secsvc/shared';
import { entryEnd } from './formats';
import type { LogSource } from './log-source';

/** Output is handed to the object store in pieces of about this size. */
const FLUSH_BYTES = 1024 * 1024;

export interface WrittenFile {
  totalRecords: number;
  fileSizeBytes: number;
  sha256: string;
  /** The lowest and highest chain positions of the entries written (0 when none was chained). */
  firstPosition: number;
  lastPosition: number;
}

/**
 * Writes one export file: entries from the source (rendered by ClickHouse in the file's format) copied into
 * the file between its head, separators and tail (FILE_FRAMES), hashed (SHA-256) and written to the object
 * store under `key` in ~1 MiB pieces. Nothing appears under the key unless every row was written; on any
 * error or abort the partial object is dropped. `progress` hears the running row count after each batch.
 */
export async function writeExportFile(o: {
  source: LogSource;
  objects: ObjectStore;
  spec: ExportSpec;
  format: ExportFormat;
  key: string;
  signal: AbortSignal;
  progress: (rows: number) => void;
}): Promise<WrittenFile> {
  const frame = FILE_FRAMES[o.format];
  const tailOf = entryEnd(o.format);
  const first = Buffer.from(frame.first);
  const between = Buffer.from(frame.between);
  const writer = await o.objects.create(o.key, frame.contentType);
  const hash = createHash('sha256');
  let size = 0;
  // Entries are copied straight into one output buffer, reused by every flush (the store has taken a chunk
  // when write() resolves): no strings and no allocation per row or per flush, whatever the export's size.
  let out = Buffer.allocUnsafe(FLUSH_BYTES + 64 * 1024);
  let used = 0;
  const flush = async () => {
    if (used === 0) return;
    const chunk = out.subarray(0, used);
    hash.update(chunk);
    size += used;
    used = 0;
    await writer.write(chunk);
  };
  /** Flushes, and grows the buffer if `bytes` would not fit even then. */
  const room = async (bytes: number) => {
    await flush();
    if (bytes > out.length) out = Buffer.allocUnsafe(bytes);
  };
  const append = async (bytes: Buffer) => {
    if (used + bytes.length > out.length) await room(bytes.length);
    used += bytes.copy(out, used);
  };
  try {
    await append(Buffer.from(frame.head));
    let rows = 0;
    let firstPosition = 0;
    let lastPosition = 0;
    for await (const page of o.source.pages(o.spec, o.format, o.signal)) {
      const r = new RenderedRows(page.bytes);
      const bytes = page.bytes;
      let count = 0;
      while (r.next()) {
        const position = r.seq;
        if (position > 0) {
          if (firstPosition === 0 || position < firstPosition) firstPosition = position;
          if (position > lastPosition) lastPosition = position;
        }
        const sep = rows === 0 ? first : between;
        // The entry's end, from a memo (few distinct metadata texts): a CSV record's metadata cells with its
        // CRLF, a JSON entry's metadata and closing brace.
        const tail = tailOf(bytes, r.metaStart, r.metaEnd);
        const need = sep.length + (r.entryEnd - r.entryStart) + tail.length;
        if (used + need > out.length) await room(need); // awaits only when flushing
        if (sep.length) used += sep.copy(out, used);
        used += bytes.copy(out, used, r.entryStart, r.entryEnd);
        used += tail.copy(out, used);
        rows++;
        count++;
      }
      if (count !== page.count) throw new Error(`export source: a batch said ${page.count} rows and held ${count}`);
      o.progress(rows);
      o.signal.throwIfAborted();
    }
    await append(Buffer.from(frame.tail));
    await flush();
    const { size: stored } = await writer.finish();
    if (stored !== size) throw new Error(`object store kept ${stored} of ${size} bytes`);
    return { totalRecords: rows, fileSizeBytes: size, sha256: hash.digest('hex'), firstPosition, lastPosition };
  } catch (err) {
    await writer.abort().catch(() => undefined);
    throw err;
  }
}
