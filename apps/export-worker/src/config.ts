import { clickHouseTlsProblems } from '@secsvc/audit-store';
import { clickHouseTlsConfig, commonConfig, ConfigError, databaseConfig, env, grpcTlsConfig, grpcTlsProblems, loadConfig, objectStoreConfig } from '@secsvc/shared';
import { z } from 'zod';

export const workerConfigShape = {
  ...commonConfig,
  ...databaseConfig,
  ...objectStoreConfig,
  ADMIN_PORT: env.port(9104),
  /** The audit service, whose StreamLogs feeds the worker when it does not read ClickHouse itself. */
  AUDIT_ADDR: env.address('127.0.0.1:50053'),
  /** TLS (or mutual TLS) to the audit service: GRPC_TLS, GRPC_TLS_CERT_FILE, _KEY_FILE, _CA_FILE, _SERVER_NAME. */
  ...grpcTlsConfig,
  /** A ClickHouse server: when set the worker reads rows from it directly (distributed profile). */
  CLICKHOUSE_URL: z.string().url('must be a URL').optional(),
  CLICKHOUSE_USER: z.string().optional(),
  CLICKHOUSE_PASSWORD: z.string().optional(),
  CLICKHOUSE_DATABASE: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a database name').optional(),
  /** With an https CLICKHOUSE_URL: the CA bundle, and a client certificate for mutual TLS. */
  ...clickHouseTlsConfig,
  /** How long a finished export stays downloadable (the link's expiresAt); the file is deleted after. */
  EXPORT_LINK_TTL_SECONDS: env.int(3600, 60, 30 * 86_400),
  /** Attempts before a job ends as failed. */
  EXPORT_MAX_ATTEMPTS: env.int(5, 1, 100),
  /** A claim's lease; renewed every third of it (at most every second). A killed worker's job is retried after it. */
  EXPORT_LEASE_SECONDS: env.int(30, 2, 3600),
  /** Wait before a failed attempt is retried. */
  EXPORT_RETRY_DELAY_SECONDS: env.int(5, 0, 3600),
  /** Jobs this worker runs at once. */
  EXPORT_CONCURRENCY: env.int(1, 1, 32),
  /** Rows per page read from ClickHouse / asked of StreamLogs. */
  EXPORT_PAGE_SIZE: env.int(50_000, 100, 100_000),
  /** Poll interval for new jobs when no notification arrives. */
  EXPORT_POLL_MS: env.int(2000, 50, 60_000),
  /** How often expired files are deleted and leftovers swept. */
  EXPORT_CLEANUP_INTERVAL_SECONDS: env.int(60, 1, 86_400),
  /** Expired and failed export jobs are deleted this many days after they ended (their events stay in the log). */
  EXPORT_JOB_RETENTION_DAYS: env.int(30, 1, 3650),
};

export type WorkerConfig = ReturnType<typeof loadWorkerConfig>;

export function loadWorkerConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(workerConfigShape, source);
  // The audit service is dialled only without a ClickHouse server of its own.
  const problems = [...(config.CLICKHOUSE_URL ? [] : grpcTlsProblems(config, 'client')), ...clickHouseTlsProblems(config)];
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
