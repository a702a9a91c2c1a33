import { busConfig, clickHouseTlsConfig, commonConfig, databaseConfig, grpcTlsConfig, migrationConfig, objectStoreConfig } from '@secsvc/shared';
import path from 'node:path';

export const APP_NAMES = ['gateway', 'identity', 'policy', 'audit', 'export-worker'] as const;
export type AppName = (typeof APP_NAMES)[number];

const names = (shape: object) => Object.keys(shape);
const clickhouse = ['CLICKHOUSE_URL', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_DATABASE', ...names(clickHouseTlsConfig)];

/**
 * The variables each app's config shape reads (apps/<app>/src/config.ts): what a launcher may hand it.
 * The shared parts come from the shared shapes themselves; app-environment.spec.ts checks the whole lists
 * against the apps' shapes and docs/configuration.md's table.
 */
export const APP_VARIABLES: Readonly<Record<AppName, readonly string[]>> = {
  gateway: [
    ...names(commonConfig),
    ...['HOST', 'PORT', 'ADMIN_PORT', 'GATEWAY_WORKERS', 'IDENTITY_ADDR', 'POLICY_ADDR', 'AUDIT_ADDR', 'GRPC_DEADLINE_MS', 'TRUST_PROXY', 'TRACE_CONTINUE_INCOMING', 'AUTH_CACHE_TTL_MS'],
    ...names(grpcTlsConfig),
    ...['ISSUER', 'JWT_AUDIENCE', 'SAML_SP_KEY_FILE', 'SAML_SP_CERT_FILE', 'SAML_SP_ROLLOVER_KEY_FILE', 'SAML_SP_ROLLOVER_CERT_FILE'],
    ...['SAML_CLOCK_SKEW_SECONDS', 'SAML_REQUEST_TTL_SECONDS', 'ACCESS_TOKEN_TTL_SECONDS', 'DOWNLOAD_BASE_URL', 'CONSOLE_DIR', 'REDIS_URL', 'REDIS_TIMEOUT_MS'],
    ...['RATE_LIMIT_STORE', 'RATE_LIMIT_FAIL_MODE', 'RATE_LIMIT_ANONYMOUS_PER_MINUTE', 'RATE_LIMIT_USER_PER_MINUTE', 'RATE_LIMIT_ENTERPRISE_PER_MINUTE'],
  ],
  identity: [
    ...names(commonConfig),
    ...names(databaseConfig),
    ...names(busConfig),
    ...names(migrationConfig),
    ...['GRPC_HOST', 'GRPC_PORT', 'ADMIN_PORT', 'ISSUER', 'JWT_AUDIENCE', 'ACCESS_TOKEN_TTL_SECONDS', 'OAUTH_REFRESH_TOKEN_TTL_SECONDS'],
    ...names(grpcTlsConfig),
    ...['JWT_MASTER_KEY', 'IDENTITY_RETENTION_DAYS', 'RETENTION_SWEEP_INTERVAL_SECONDS', 'MAIL_DIR', 'SMTP_URL', 'SMTP_USERNAME', 'SMTP_PASSWORD'],
    ...['MAIL_FROM', 'SMTP_TIMEOUT_MS', 'SMTP_REQUIRE_TLS', 'BOOTSTRAP_API_KEY', 'WEBAUTHN_RP_ID', 'WEBAUTHN_RP_NAME', 'WEBAUTHN_ORIGINS'],
  ],
  policy: [...names(commonConfig), ...names(databaseConfig), ...names(busConfig), ...names(migrationConfig), 'GRPC_HOST', 'GRPC_PORT', 'ADMIN_PORT', ...names(grpcTlsConfig)],
  audit: [
    ...names(commonConfig),
    ...names(databaseConfig),
    ...names(busConfig),
    ...names(migrationConfig),
    ...['GRPC_HOST', 'GRPC_PORT', 'ADMIN_PORT', ...clickhouse, 'CLICKHOUSE_PATH'],
    ...names(grpcTlsConfig),
    ...['AUDIT_RETENTION_DAYS', 'AUDIT_BATCH_SIZE', 'AUDIT_BATCH_WAIT_MS', 'AUDIT_CONSUMER'],
    ...names(objectStoreConfig),
    ...['EXPORT_MAX_RANGE_DAYS', 'EXPORT_PAGE_SIZE'],
  ],
  'export-worker': [
    ...names(commonConfig),
    ...names(databaseConfig),
    ...names(objectStoreConfig),
    ...['ADMIN_PORT', 'AUDIT_ADDR', ...clickhouse, 'EXPORT_LINK_TTL_SECONDS', 'EXPORT_MAX_ATTEMPTS', 'EXPORT_LEASE_SECONDS'],
    ...names(grpcTlsConfig),
    ...['EXPORT_RETRY_DELAY_SECONDS', 'EXPORT_CONCURRENCY', 'EXPORT_PAGE_SIZE', 'EXPORT_POLL_MS', 'EXPORT_CLEANUP_INTERVAL_SECONDS', 'EXPORT_JOB_RETENTION_DAYS'],
  ],
};

/**
 * Variables of the Node.js runtime and its libraries (not of any config shape) that every app process gets from
 * the launcher's environment: NODE_EXTRA_CA_CERTS (a private CA, e.g. for KAFKA_SSL), and for the S3 store the AWS
 * SDK's default credential chain (AWS_*, HOME for ~/.aws).
 */
const RUNTIME_VARIABLES = ['PATH', 'HOME', 'TMPDIR', 'TZ', 'LANG', 'NODE_ENV', 'NODE_EXTRA_CA_CERTS'];
const RUNTIME_PREFIXES = ['AWS_'];

/** What a launcher sets for one app process. */
export interface LauncherEnvironment {
  /**
   * How the launcher wires the processes together (ports it chose, DATABASE_URL, service addresses, PROFILE...):
   * these win over the user's environment. An undefined value keeps the variable from the process altogether.
   */
  wired?: Record<string, string | undefined>;
  /** The launcher's defaults (a generated SERVER_SECRET, paths under the data directory...): the user's value wins. */
  defaults?: Record<string, string | undefined>;
}

/**
 * The environment of one app process: for every variable the app's config shape reads, the launcher's wired
 * value, else the user's (an explicit empty value counts: it unsets a launcher default), else the launcher's
 * default; plus the runtime variables (NODE_ENV defaults to production). Nothing else of the user's environment
 * reaches the process (launcher-only variables like DATA_DIR or PG_PORT, unrelated secrets). Pure.
 */
export function appEnvironment(app: AppName, userEnv: Record<string, string | undefined>, launcher: LauncherEnvironment = {}): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(userEnv)) {
    if (value !== undefined && (RUNTIME_VARIABLES.includes(name) || RUNTIME_PREFIXES.some((p) => name.startsWith(p)))) out[name] = value;
  }
  out.NODE_ENV ??= 'production';
  const wired = launcher.wired ?? {};
  const defaults = launcher.defaults ?? {};
  for (const name of APP_VARIABLES[app]) {
    const value = Object.hasOwn(wired, name) ? wired[name] : (userEnv[name] ?? defaults[name]);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** What a launcher chose for one app instance; launcherEnvironment turns it into wiring and defaults. */
export interface LauncherWiring {
  profile: 'local' | 'distributed';
  dataDir: string;
  databaseUrl: string;
  /** The data directory's generated secret (a default: the user's SERVER_SECRET wins). */
  serverSecret: string;
  /** The gateway's public origin (a default of ISSUER). */
  issuer: string;
  /** gRPC targets of the services, as the gateway and the export worker reach them. */
  addresses: { identity: string; policy: string; audit: string };
  /** This instance's ports: admin, gRPC (services), HTTP (gateway, which binds gatewayHost). */
  adminPort: number;
  grpcPort?: number;
  gatewayHost?: string;
  gatewayPort?: number;
  /** The generated SAML SP key pair's variables (defaults), when the launcher made one. */
  samlSp?: Record<string, string>;
  /** The distributed profile's own Kafka, Redis and S3 store (wired). */
  distributed?: { kafkaBrokers: string; redisUrl: string; s3: Record<string, string> };
}

/**
 * The launchers' wiring and defaults for one instance. Wired: PROFILE, DATABASE_URL, MIGRATE_ONLY=false (a
 * launcher serves), the hosts and ports it chose (HOST, PORT, GRPC_HOST, GRPC_PORT, ADMIN_HOST, ADMIN_PORT), the
 * service addresses with GRPC_TLS=off (plain gRPC on loopback), and in the distributed profile the event bus (EVENT_BUS, KAFKA_BROKERS), REDIS_URL and the S3
 * store. Defaults: SERVER_SECRET, ISSUER, DOWNLOAD_BASE_URL (the issuer's /downloads), MAIL_DIR, CLICKHOUSE_PATH, EXPORT_DIR, the SAML SP key pair, the
 * gateways' GATEWAY_WORKERS=1, and in the distributed profile RATE_LIMIT_STORE=redis and the gateways' SHUTDOWN_DELAY_MS=1000.
 */
export function launcherEnvironment(w: LauncherWiring): LauncherEnvironment {
  const str = (n: number | undefined) => (n === undefined ? undefined : String(n));
  return {
    wired: {
      PROFILE: w.profile,
      DATABASE_URL: w.databaseUrl,
      MIGRATE_ONLY: 'false',
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: String(w.adminPort),
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: str(w.grpcPort),
      HOST: w.gatewayHost,
      PORT: str(w.gatewayPort),
      IDENTITY_ADDR: w.addresses.identity,
      POLICY_ADDR: w.addresses.policy,
      AUDIT_ADDR: w.addresses.audit,
      // The launchers check health and wire the processes over plain gRPC on loopback.
      GRPC_TLS: 'off',
      ...(w.distributed && { EVENT_BUS: 'kafka', KAFKA_BROKERS: w.distributed.kafkaBrokers, REDIS_URL: w.distributed.redisUrl, ...w.distributed.s3 }),
    },
    defaults: {
      SERVER_SECRET: w.serverSecret,
      ISSUER: w.issuer,
      // Export links name the public origin (the distributed profile's load balancer), not one gateway's port.
      DOWNLOAD_BASE_URL: `${w.issuer}/downloads`,
      MAIL_DIR: path.join(w.dataDir, 'mail'),
      CLICKHOUSE_PATH: path.join(w.dataDir, 'clickhouse'),
      // Export files of the local store: the worker writes them, audit reads them for downloads.
      EXPORT_DIR: path.join(w.dataDir, 'exports'),
      ...w.samlSp,
      // A launcher runs every process on one machine already: its gateways are one process each unless the user says.
      ...(w.gatewayPort !== undefined && { GATEWAY_WORKERS: '1' }),
      ...(w.distributed && { RATE_LIMIT_STORE: 'redis' }),
      // A stopping gateway keeps serving a second after its readiness drops, answering `Connection: close`: the
      // load balancer stops sending it requests before it closes its connections (Kubernetes: the preStop sleep).
      ...(w.distributed && w.gatewayPort !== undefined && { SHUTDOWN_DELAY_MS: '1000' }),
    },
  };
}
