import { createHash } from 'node:crypto';
import type { ExportFormat, ExportSpec } from '@secsvc/audit-store';
import type { ObjectStore } from '@secsvc/shared';
import { FORMATS } from './formats';
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
 * Writes one export file: rows from the source, formatted, hashed (SHA-256) and written to the object store
 * under `key` in ~1 MiB pieces. Nothing appears under the key unless every row was written; on any error
 * or abort the partial object is dropped. `progress` hears the running row count after each batch.
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
  const format = FORMATS[o.format];
  const writer = await o.objects.create(o.key, format.contentType);
  const hash = createHash('sha256');
  let size = 0;
  // Entries are encoded straight into one output buffer, reused by every flush (the store has taken a chunk
  // when write() resolves): no joined strings and no allocation per flush, so nothing page-sized is left
  // for the garbage collector whatever the export's size.
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
  /** Makes room for `chars` UTF-16 units (UTF-8 takes at most 3 bytes for each). */
  const room = async (chars: number) => {
    await flush();
    if (3 * chars > out.length) out = Buffer.allocUnsafe(3 * chars);
  };
  const append = async (text: string) => {
    if (used + 3 * text.length > out.length) await room(text.length);
    used += out.write(text, used, 'utf8');
  };
  try {
    await append(format.head);
    let rows = 0;
    let firstPosition = 0;
    let lastPosition = 0;
    for await (const batch of o.source.rows(o.spec, o.signal)) {
      for (const row of batch) {
        const position = row.chain_seq;
        if (position !== undefined) {
          if (firstPosition === 0 || position < firstPosition) firstPosition = position;
          if (position > lastPosition) lastPosition = position;
        }
        const text = format.entry(row, rows === 0);
        if (used + 3 * text.length > out.length) await room(text.length); // awaits only when flushing
        used += out.write(text, used, 'utf8');
        rows++;
      }
      o.progress(rows);
      o.signal.throwIfAborted();
    }
    await append(format.tail);
    await flush();
    const { size: stored } = await writer.finish();
    if (stored !== size) throw new Error(`object store kept ${stored} of ${size} bytes`);
    return { totalRecords: rows, fileSizeBytes: size, sha256: hash.digest('hex'), firstPosition, lastPosition };
  } catch (err) {
    await writer.abort().catch(() => undefined);
    throw err;
  }
}
