import type { audit } from '@secsvc/proto';
import type { BulkServerStream, CallContext } from '@secsvc/shared';
import { exportService, type ExportContext } from '../export-context';

/** Largest message (unless one row is larger): well under gRPC's default 4 MiB receive limit. */
const CHUNK_BYTES = 1024 * 1024;

/**
 * The rows of an export for a worker (local profile, where this process owns the embedded ClickHouse): keyset
 * pages with each entry rendered by ClickHouse in the export's format, sent as they are (RowBinary, cut at row
 * ends into messages of about 1 MiB), each awaiting HTTP/2 flow control, so a slow worker holds this process
 * to two pages in memory (the one being sent, the next being rendered). A client that goes away ends the stream.
 */
export const streamLogs = (ctx: ExportContext) => {
  const service = exportService(ctx);
  return (req: audit.StreamLogsRequest, _call: CallContext, stream: BulkServerStream<audit.LogRowsChunk>): void => {
    void (async () => {
      for await (const chunks of service.rowChunks(req, CHUNK_BYTES)) {
        if (stream.isClosed()) return;
        for (const chunk of chunks) await stream.send({ rows: chunk.bytes, count: chunk.count });
      }
      stream.end();
    })().catch((err: unknown) => stream.fail(err));
  };
};
