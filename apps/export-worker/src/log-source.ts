import { Metadata, type ClientReadableStream } from '@grpc/grpc-js';
import { exportPages, type ClickHouseClient, type ExportFormat, type ExportSpec, type RenderedPage } from '@secsvc/audit-store';
import { fromGrpcError, withTraceparent } from '@secsvc/shared';
import type { audit } from '@secsvc/proto';

/**
 * Where a worker reads an export's entries from: newest first, already rendered in the file's format by
 * ClickHouse (libs/audit-store export-render.ts), in runs of whole rows (memory: about two pages), ending
 * when the export's window is exhausted. Two adapters: the audit service's StreamLogs RPC (local profile,
 * where the audit process owns the embedded ClickHouse, which allows one process per data directory) and
 * ClickHouse itself (distributed profile, CLICKHOUSE_URL set).
 */
export interface LogSource {
  readonly kind: 'audit-rpc' | 'clickhouse';
  pages: (spec: ExportSpec, format: ExportFormat, signal: AbortSignal) => AsyncIterable<RenderedPage>;
}

/** Pages straight from ClickHouse (a server, or chdb in tests), through libs/audit-store. */
export function clickHouseLogSource(ch: ClickHouseClient, pageSize: number): LogSource {
  return {
    kind: 'clickhouse',
    async *pages(spec, format, signal) {
      for await (const page of exportPages(ch, spec, format, pageSize)) {
        signal.throwIfAborted();
        yield page;
      }
    },
  };
}

/**
 * Pages from the audit service's StreamLogs stream. The client reads a message only when the previous one
 * was handled (async iteration of the call), so HTTP/2 flow control holds the service back: memory stays
 * flat on both sides. Aborting cancels the call.
 */
export function auditLogSource(client: Pick<audit.AuditServiceClient, 'streamLogs'>, pageSize: number): LogSource {
  return {
    kind: 'audit-rpc',
    async *pages(spec, format, signal) {
      const call: ClientReadableStream<audit.LogRowsChunk> = client.streamLogs({ ...spec, format, pageSize }, withTraceparent(new Metadata()));
      const cancel = () => call.cancel();
      signal.addEventListener('abort', cancel, { once: true });
      try {
        for await (const chunk of call as AsyncIterable<audit.LogRowsChunk>) yield { bytes: chunk.rows, count: chunk.count };
      } catch (err) {
        signal.throwIfAborted();
        throw fromGrpcError(err);
      } finally {
        signal.removeEventListener('abort', cancel);
        call.cancel();
      }
    },
  };
}
