import type { audit } from '@secsvc/proto';
import type { BulkServerStream, CallContext } from '@secsvc/shared';
import { exportService, type ExportContext } from '../export-context';

/** Largest message: well under gRPC's default 4 MiB receive limit. */
const CHUNK_CHARS = 1024 * 1024;

/**
 * The rows of an export for a worker (local profile, where this process owns the embedded ClickHouse): keyset
 * pages read one at a time and sent as they are (ClickHouse's TabSeparated text, cut at line ends into
 * messages of at most 1 MiB), each awaiting HTTP/2 flow control, so a slow worker holds this process to one
 * page in memory. A client that goes away ends the stream.
 */
export const streamLogs = (ctx: ExportContext) => {
  const service = exportService(ctx);
  return (req: audit.StreamLogsRequest, _call: CallContext, stream: BulkServerStream<audit.LogRowsChunk>): void => {
    void (async () => {
      for await (const chunks of service.rowChunks(req, CHUNK_CHARS)) {
        if (stream.isClosed()) return;
        for (const chunk of chunks) await stream.send({ rows: Buffer.from(chunk.text), count: chunk.count });
      }
      stream.end();
    })().catch((err: unknown) => stream.fail(err));
  };
};
