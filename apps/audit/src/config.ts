import { clickHouseTlsProblems } from '@secsvc/audit-store';
import { busConfig, busConfigProblems, clickHouseTlsConfig, commonConfig, ConfigError, databaseConfig, env, grpcTlsConfig, grpcTlsProblems, loadConfig, migrationConfig, objectStoreConfig } from '@secsvc/shared';
import { z } from 'zod';

export const auditConfigShape = {
  ...commonConfig,
  ...databaseConfig,
  ...busConfig,
  ...migrationConfig,
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50053),
  ...grpcTlsConfig,
  ADMIN_PORT: env.port(9103),
  /** A ClickHouse server (distributed profile), e.g. http://clickhouse:8123. */
  CLICKHOUSE_URL: z.string().url('must be a URL').optional(),
  CLICKHOUSE_USER: z.string().optional(),
  CLICKHOUSE_PASSWORD: z.string().optional(),
  CLICKHOUSE_DATABASE: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a database name').optional(),
  /** With an https CLICKHOUSE_URL: the CA bundle, and a client certificate for mutual TLS. */
  ...clickHouseTlsConfig,
  /**
   * Embedded ClickHouse (chdb) data directory, used when CLICKHOUSE_URL is unset: the local profile's log store
   * (default .data/clickhouse); with PROFILE=distributed it must be set explicitly to choose chdb.
   */
  CLICKHOUSE_PATH: z.string().min(1).optional(),
  /** Days an entry is kept (a TTL on the log table). */
  AUDIT_RETENTION_DAYS: env.int(365, 1, 36_500),
  /** The consumer hands at most this many events to ClickHouse per insert... */
  AUDIT_BATCH_SIZE: env.int(20_000, 1, 100_000),
  /**
   * ...and inserts a partial batch at most this often: an event waits at most this long for others to join it,
   * not at all after a quiet spell. About one insert a second is what ClickHouse's parts and merges are made for.
   */
  AUDIT_BATCH_WAIT_MS: env.int(1000, 0, 10_000),
  /** Off: this replica only serves reads (the consumer runs elsewhere). */
  AUDIT_CONSUMER: env.bool(true),
  /** Where export files are (read for downloads; the export worker writes them). */
  ...objectStoreConfig,
  /** Longest time range (from..to) of one export. */
  EXPORT_MAX_RANGE_DAYS: env.int(366, 1, 36_500),
  /** Rows per ClickHouse page when streaming an export's rows to a worker (StreamLogs). */
  EXPORT_PAGE_SIZE: env.int(50_000, 100, 100_000),
};

export type AuditConfig = ReturnType<typeof loadAuditConfig>;

export function loadAuditConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(auditConfigShape, source);
  const problems = [...busConfigProblems(config), ...grpcTlsProblems(config, 'server'), ...clickHouseTlsProblems(config)];
  if (config.PROFILE === 'distributed' && !config.CLICKHOUSE_URL && !config.CLICKHOUSE_PATH) {
    problems.push('CLICKHOUSE_URL: required with PROFILE=distributed (or set CLICKHOUSE_PATH to use embedded chdb) (not set)');
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...config, CLICKHOUSE_PATH: config.CLICKHOUSE_PATH ?? '.data/clickhouse' };
}
