import { AuditServiceBulk, serviceNames } from '@secsvc/proto';
import { applyRetention, AuditChain, ChainKey, clickHouseServer, ExportJobs, GeoIp, LogStore, migrateAuditSchema, migrateClickHouse, openClickHouse } from '@secsvc/audit-store';
import { createEventBus, createObjectStore, runGrpcService } from '@secsvc/shared';
import { loadAuditConfig } from './config';
import { startConsumer } from './consumer';
import type { AuditContext } from './context';
import { getLog } from './rpc/get-log';
import { getChainKeys, verifyLogs } from './rpc/verify-logs';
import { listLogs } from './rpc/list-logs';
import { searchLogs } from './rpc/search-logs';
import { countLogs } from './rpc/count-logs';
import type { ExportContext } from './export-context';
import { createExport } from './rpc/create-export';
import { downloadExport } from './rpc/download-export';
import { getExport } from './rpc/get-export';
import { streamLogs } from './rpc/stream-logs';

/** ClickHouse, opened (and migrated) before MIGRATE_ONLY stops, then used by the service. */
let ch: Awaited<ReturnType<typeof openClickHouse>>;

void runGrpcService({
  name: 'audit',
  loadConfig: loadAuditConfig,
  migrations: (pool, { logger }) => migrateAuditSchema(pool, logger).then(() => undefined),
  async migrateMore({ config, logger, metrics }) {
    ch = await openClickHouse(
      config.CLICKHOUSE_URL ? clickHouseServer({ ...config, CLICKHOUSE_URL: config.CLICKHOUSE_URL }, { logger, metrics }) : { path: config.CLICKHOUSE_PATH },
    );
    const applied = await migrateClickHouse(ch);
    if (applied > 0) logger.info({ applied }, 'ClickHouse migrations applied');
    await applyRetention(ch, config.AUDIT_RETENTION_DAYS);
    // Every migration of this process comes before this point: the migrations Job runs exactly these.
    return [{ name: 'clickhouse', close: () => ch.close() }];
  },
  async start({ config, logger, metrics, pool }) {
    // Every stored entry is chained (tamper evidence); the checkpoint key derives from SERVER_SECRET.
    const chain = new AuditChain(pool, ch, ChainKey.fromSecret(config.SERVER_SECRET));
    chain.onMismatch = (environment, position) =>
      logger.error({ environment, position }, 'audit chain: rows a dead writer left past the head do not hash as stored (GET /v1/logs/verify reports it)');
    // Embedded chdb runs one statement at a time per connection: the consumer's inserts get a connection of
    // their own, so a search or an export page never waits for an insert in flight. A server takes both on one
    // client (its HTTP connections run side by side).
    const writer = config.CLICKHOUSE_URL ? ch : await openClickHouse({ path: config.CLICKHOUSE_PATH });
    const store = new LogStore(ch, chain, { writer });
    const bus = await createEventBus(config, logger, 'audit', { metrics, pool: 'bus_consume' });
    const consumer = config.AUDIT_CONSUMER
      ? await startConsumer({ bus, store, geo: await GeoIp.open(), logger, metrics, maxBatchSize: config.AUDIT_BATCH_SIZE, maxWaitMs: config.AUDIT_BATCH_WAIT_MS })
      : undefined;
    const ctx: AuditContext = { store, chain, secret: config.SERVER_SECRET, logger };
    const objects = createObjectStore(config);
    const exportCtx: ExportContext = {
      ...ctx,
      ch,
      exports: { jobs: new ExportJobs(pool), objects, maxRangeDays: config.EXPORT_MAX_RANGE_DAYS, pageSize: config.EXPORT_PAGE_SIZE },
    };
    // log.export.* events go out through the audit schema's own outbox (runGrpcService relays it).
    return {
      services: [
        {
          name: serviceNames.audit,
          definition: AuditServiceBulk,
          implementation: {
            listLogs: listLogs(ctx),
            getLog: getLog(ctx),
            searchLogs: searchLogs(ctx),
            countLogs: countLogs(ctx),
            createExport: createExport(exportCtx),
            getExport: getExport(exportCtx),
            streamLogs: streamLogs(exportCtx),
            downloadExport: downloadExport(exportCtx),
            verifyLogs: verifyLogs(ctx),
            getChainKeys: getChainKeys(ctx),
          },
        },
      ],
      closers: [
        // The consumer finishes its batch (and moves its position) before the store closes.
        { name: 'consumer', close: async () => consumer?.stop() },
        { name: 'object store', close: () => objects.close() },
        { name: 'event bus', close: () => bus.close() },
        ...(writer === ch ? [] : [{ name: 'clickhouse writer', close: () => writer.close() }]),
        { name: 'clickhouse', close: () => ch.close() },
      ],
      ready: async () => ({ clickhouse: await ch.ping().then((p) => p.success, () => false) }),
      describe: { eventBus: bus.kind, clickhouse: config.CLICKHOUSE_URL ? 'server' : 'embedded' },
    };
  },
});
