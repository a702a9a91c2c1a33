import { audit, descriptorSets, serviceNames } from '@secsvc/proto';
import { applyRetention, GeoIp, LogStore, migrateClickHouse, openClickHouse } from '@secsvc/audit-store';
import { createEventBus, createPool, migratedOnly, pingDatabase, runProcess, startGrpcServer } from '@secsvc/shared';
import { loadAuditConfig } from './config';
import { startConsumer } from './consumer';
import type { AuditContext } from './context';
import { getLog } from './rpc/get-log';
import { listLogs } from './rpc/list-logs';
import { searchLogs } from './rpc/search-logs';

void runProcess('audit', () => loadAuditConfig(), async ({ config, logger, metrics }) => {
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger, 'audit');
  const ch = await openClickHouse(
    config.CLICKHOUSE_URL
      ? { url: config.CLICKHOUSE_URL, username: config.CLICKHOUSE_USER, password: config.CLICKHOUSE_PASSWORD, database: config.CLICKHOUSE_DATABASE }
      : { path: config.CLICKHOUSE_PATH },
  );
  const applied = await migrateClickHouse(ch);
  if (applied > 0) logger.info({ applied }, 'ClickHouse migrations applied');
  await applyRetention(ch, config.AUDIT_RETENTION_DAYS);
  // Every migration of this process comes before this line: the migrations Job runs exactly these.
  if (config.MIGRATE_ONLY) {
    return migratedOnly({ name: 'clickhouse', close: () => ch.close() }, { name: 'postgres', close: () => pool.end() });
  }
  const store = new LogStore(ch);
  const bus = await createEventBus(config, logger, 'audit');
  const consumer = config.AUDIT_CONSUMER
    ? await startConsumer({ bus, store, geo: await GeoIp.open(), logger, metrics, maxBatchSize: config.AUDIT_BATCH_SIZE, maxWaitMs: config.AUDIT_BATCH_WAIT_MS })
    : undefined;
  const ctx: AuditContext = { store, secret: config.SERVER_SECRET, logger };
  const grpcServer = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    logger,
    metrics,
    descriptorSets,
    services: [
      {
        name: serviceNames.audit,
        definition: audit.AuditServiceService,
        implementation: { listLogs: listLogs(ctx), getLog: getLog(ctx), searchLogs: searchLogs(ctx) },
        // Exports are the Export issue's work.
        notYetImplemented: ['createExport', 'getExport'],
      },
    ],
  });
  logger.info({ grpcPort: grpcServer.port, eventBus: bus.kind, clickhouse: config.CLICKHOUSE_URL ? 'server' : 'embedded' }, 'audit gRPC listening');
  return {
    closers: [
      { name: 'grpc', close: () => grpcServer.close() },
      // The consumer finishes its batch (and moves its position) before the store closes.
      { name: 'consumer', close: async () => consumer?.stop() },
      { name: 'event bus', close: () => bus.close() },
      { name: 'clickhouse', close: () => ch.close() },
      { name: 'postgres', close: () => pool.end() },
    ],
    ready: async () => (await pingDatabase(pool)) && (await ch.ping()).success,
  };
});
