import { Metadata, type ClientReadableStream } from '@grpc/grpc-js';
import { decodeRows, exportPages, type ClickHouseClient, type ExportSpec, type LogRow } from '@secsvc/audit-store';
import { fromGrpcError, withTraceparent } from '@secsvc/shared';
import type { audit } from '@secsvc/proto';

/**
 * Where a worker reads an export's rows from: newest first, in batches (memory: one batch), ending when the
 * export's window is exhausted. Two adapters: the audit service's StreamLogs RPC (local profile, where the
 * audit process owns the embedded ClickHouse, which allows one process per data directory) and ClickHouse
 * itself (distributed profile, CLICKHOUSE_URL set).
 */
export interface LogSource {
  readonly kind: 'audit-rpc' | 'clickhouse';
  /** Batches of rows, each decoded as it is iterated (take a row, use it, take the next). */
  rows: (spec: ExportSpec, signal: AbortSignal) => AsyncIterable<Iterable<LogRow>>;
}

/** Rows straight from ClickHouse (a server, or chdb in tests), in keyset pages through libs/audit-store. */
export function clickHouseLogSource(ch: ClickHouseClient, pageSize: number): LogSource {
  return {
    kind: 'clickhouse',
    async *rows(spec, signal) {
      for await (const page of exportPages(ch, spec, pageSize)) {
        signal.throwIfAborted();
        yield decodeRows(page.text);
      }
    },
  };
}

/**
 * Rows from the audit service's StreamLogs stream. The client reads a message only when the previous batch
 * was handled (async iteration of the call), so HTTP/2 flow control holds the service back: memory stays
 * flat on both sides. Aborting cancels the call.
 */
export function auditLogSource(client: Pick<audit.AuditServiceClient, 'streamLogs'>, pageSize: number): LogSource {
  return {
    kind: 'audit-rpc',
    async *rows(spec, signal) {
      const call: ClientReadableStream<audit.LogRowsChunk> = client.streamLogs({ ...spec, pageSize }, withTraceparent(new Metadata()));
      const cancel = () => call.cancel();
      signal.addEventListener('abort', cancel, { once: true });
      try {
        for await (const chunk of call as AsyncIterable<audit.LogRowsChunk>) yield decodeRows(chunk.rows);
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
