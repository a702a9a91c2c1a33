import { createHash } from 'node:crypto';
import type { ExportFormat, ExportSpec } from '@secsvc/audit-store';
import type { ObjectStore } from '@secsvc/shared';
import { FORMATS } from './formats';
import type { LogSource } from './log-source';

/** Output is handed to the object store in pieces of about this size. */
const FLUSH_CHARS = 1024 * 1024;

export interface WrittenFile {
  totalRecords: number;
  fileSizeBytes: number;
  sha256: string;
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
  let pending: string[] = [format.head];
  let pendingChars = format.head.length;
  // One output buffer for the whole file (UTF-8 needs at most 3 bytes per UTF-16 unit), reused by every
  // flush: the store has taken a chunk when write() resolves, so nothing is allocated per flush.
  let out = Buffer.allocUnsafe(3 * FLUSH_CHARS + 1024);
  const flush = async () => {
    if (pendingChars === 0) return;
    const text = pending.join('');
    pending = [];
    pendingChars = 0;
    if (3 * text.length > out.length) out = Buffer.allocUnsafe(3 * text.length);
    const n = out.write(text, 0, 'utf8');
    const chunk = out.subarray(0, n);
    hash.update(chunk);
    size += n;
    await writer.write(chunk);
  };
  try {
    let rows = 0;
    for await (const batch of o.source.rows(o.spec, o.signal)) {
      for (const row of batch) {
        const text = format.entry(row, rows === 0);
        pending.push(text);
        pendingChars += text.length;
        rows++;
        if (pendingChars >= FLUSH_CHARS) await flush();
      }
      o.progress(rows);
      o.signal.throwIfAborted();
    }
    pending.push(format.tail);
    pendingChars += format.tail.length;
    await flush();
    const { size: stored } = await writer.finish();
    if (stored !== size) throw new Error(`object store kept ${stored} of ${size} bytes`);
    return { totalRecords: rows, fileSizeBytes: size, sha256: hash.digest('hex') };
  } catch (err) {
    await writer.abort().catch(() => undefined);
    throw err;
  }
}
