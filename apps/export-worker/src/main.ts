import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { AuditServiceBulkClient } from '@secsvc/proto';
import { clickHouseServer, EXPORT_JOBS_CHANNEL, ExportJobs, migrateAuditSchema, openClickHouse } from '@secsvc/audit-store';
import { createClient, createObjectStore, createPool, GrpcTls, observePool, PgChannelListener, pingDatabase, runProcess } from '@secsvc/shared';
import { loadWorkerConfig } from './config';
import { auditLogSource, clickHouseLogSource } from './log-source';
import { ExportWorker } from './worker';

/** Unfinished writes (partial files, multipart uploads) older than this are swept. */
const SWEEP_AFTER_MS = 6 * 3_600_000;

void runProcess('export-worker', () => loadWorkerConfig(), async ({ config, logger, metrics }) => {
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger, 'audit');
  observePool(metrics, pool);
  await migrateAuditSchema(pool, logger);
  const objects = createObjectStore(config);
  // Rows: ClickHouse directly when a server is configured, else the audit service (which owns embedded chdb).
  const ch = config.CLICKHOUSE_URL
    ? await openClickHouse(clickHouseServer({ ...config, CLICKHOUSE_URL: config.CLICKHOUSE_URL }, { logger, metrics }))
    : undefined;
  const grpcTls = ch ? GrpcTls.off : GrpcTls.fromConfig(config, { logger, metrics });
  // StreamLogs brings ~1 MiB messages: a 4 MiB HTTP/2 window lets audit send on without waiting for a window
  // update every 64 KiB (measured: a third less time per message between two processes here).
  const auditClient = ch ? undefined : createClient(AuditServiceBulkClient, config.AUDIT_ADDR, metrics, grpcTls, { 'grpc-node.flow_control_window': 4 << 20 });
  const source = ch ? clickHouseLogSource(ch, config.EXPORT_PAGE_SIZE) : auditLogSource(auditClient!, config.EXPORT_PAGE_SIZE);
  const leaseMs = config.EXPORT_LEASE_SECONDS * 1000;
  const worker = new ExportWorker(
    new ExportJobs(pool),
    source,
    objects,
    {
      workerId: `${os.hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
      leaseMs,
      heartbeatMs: Math.min(1000, Math.floor(leaseMs / 3)),
      maxAttempts: config.EXPORT_MAX_ATTEMPTS,
      retryDelayMs: config.EXPORT_RETRY_DELAY_SECONDS * 1000,
      linkTtlMs: config.EXPORT_LINK_TTL_SECONDS * 1000,
      concurrency: config.EXPORT_CONCURRENCY,
      pollMs: config.EXPORT_POLL_MS,
      cleanupIntervalMs: config.EXPORT_CLEANUP_INTERVAL_SECONDS * 1000,
      sweepAfterMs: SWEEP_AFTER_MS,
      jobRetentionDays: config.EXPORT_JOB_RETENTION_DAYS,
    },
    logger,
    metrics,
  );
  const listener = new PgChannelListener(config.DATABASE_URL, EXPORT_JOBS_CHANNEL, logger, { onNotify: () => worker.wake(), onLive: () => worker.wake() });
  await listener.start();
  worker.start();
  logger.info({ source: source.kind, store: objects.kind, concurrency: config.EXPORT_CONCURRENCY }, 'export worker running');
  return {
    closers: [
      { name: 'worker', close: () => worker.stop() },
      { name: 'listener', close: () => listener.stop() },
      { name: 'log source', close: async () => (auditClient?.close(), grpcTls.close(), await ch?.close()) },
      { name: 'object store', close: () => objects.close() },
      { name: 'postgres', close: () => pool.end() },
    ],
    ready: async () => ({ postgres: await pingDatabase(pool) }),
  };
});
