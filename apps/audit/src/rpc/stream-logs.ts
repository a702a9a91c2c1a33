import type { audit } from '@secsvc/proto';
import { exportPages, splitLines } from '@secsvc/audit-store';
import type { BulkServerStream, CallContext } from '@secsvc/shared';
import type { ExportContext } from '../export-context';
import { exportSpecOf } from './create-export';

/** Largest message: well under gRPC's default 4 MiB receive limit. */
const CHUNK_CHARS = 1024 * 1024;

/**
 * The rows of an export for a worker (local profile, where this process owns the embedded ClickHouse): keyset
 * pages read one at a time and sent as they are (ClickHouse's TabSeparated text, cut at line ends into
 * messages of at most 1 MiB), each awaiting HTTP/2 flow control, so a slow worker holds this process to one
 * page in memory. A client that goes away ends the stream.
 */
export const streamLogs =
  (ctx: ExportContext) =>
  (req: audit.StreamLogsRequest, _call: CallContext, stream: BulkServerStream<audit.LogRowsChunk>): void => {
    void (async () => {
      const spec = exportSpecOf(req);
      const pageSize = req.pageSize > 0 ? Math.min(req.pageSize, 100_000) : ctx.exports.pageSize;
      for await (const page of exportPages(ctx.ch, spec, pageSize)) {
        if (stream.isClosed()) return;
        for (const piece of splitLines(page.text, CHUNK_CHARS)) {
          let count = 0;
          for (let i = piece.indexOf('\n'); i !== -1; i = piece.indexOf('\n', i + 1)) count++;
          await stream.send({ rows: Buffer.from(piece), count });
        }
      }
      stream.end();
    })().catch((err: unknown) => stream.fail(err));
  };
