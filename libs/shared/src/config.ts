import { z } from 'zod';
import { tracingConfig } from './tracing/config';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads the environment once into a typed object. Keys of `shape` are the variable names; a bad value throws
 * a ConfigError naming every faulty variable. Tests pass their own `env` object instead of touching process.env.
 */
export function loadConfig<S extends z.ZodRawShape>(
  shape: S,
  env: Record<string, string | undefined> = process.env,
): z.infer<z.ZodObject<S>> {
  const input: Record<string, string> = {};
  for (const key of Object.keys(shape)) {
    const value = env[key];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const result = z.object(shape).safeParse(input);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '?');
      const got = input[name];
      const shown = got === undefined ? 'not set' : /SECRET|PASSWORD|KEY|TOKEN|CREDENTIAL|_URL$|ENDPOINT|HEADERS/.test(name) ? 'value hidden' : `got "${got}"`;
      return `${name}: ${issue.message} (${shown})`;
    }),
  );
}

/** A decimal integer in [min, max] (no blanks, hex, exponents or fractions). */
const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^-?\d{1,15}$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be an integer from ${min} to ${max}`).max(max, `must be an integer from ${min} to ${max}`));

/** Reusable variable types. */
export const env = {
  port: (def: number) => integer(0, 65535).default(def),
  int: (def: number, min: number, max: number) => integer(min, max).default(def),
  host: (def: string) => z.string().min(1).default(def),
  /** A gRPC target: host:port, dns:///host:port (every address of the name), or ipv4:a:port,b:port. */
  address: (def: string) =>
    z
      .string()
      .regex(
        /^(?:dns:\/\/\/)?[^\s:/,]+:\d{1,5}$|^ipv4:\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}(?:,\d{1,3}(?:\.\d{1,3}){3}:\d{1,5})*$/,
        'must be host:port, dns:///host:port or ipv4:a.b.c.d:port[,...]',
      )
      .default(def),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  postgresUrl: () => z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL'),
  secret: () => z.string().min(32, 'must be at least 32 characters'),
  bool: (def: boolean) =>
    z
      .enum(['true', 'false', '1', '0'])
      .default(def ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1'),
  profile: () => z.enum(['local', 'distributed']).default('local'),
};

/** Variables every service process reads. */
export const commonConfig = {
  LOG_LEVEL: env.logLevel(),
  PROFILE: env.profile(),
  ADMIN_HOST: env.host('127.0.0.1'),
  /**
   * On SIGTERM: readiness answers 503 at once, then the process keeps serving this long before it stops accepting
   * (for a load balancer that learns from readiness; Kubernetes' preStop sleep does this job there, so 0).
   */
  SHUTDOWN_DELAY_MS: env.int(0, 0, 10_000),
  /** OpenTelemetry tracing: the standard OTEL_* variables (tracing/config.ts). */
  ...tracingConfig,
};

/**
 * gRPC between the processes: plain, TLS, or mutual TLS, with PEM files reloaded on change (grpc/tls.ts). Every
 * process reads them (servers: identity, policy, audit; clients: gateway, export-worker); grpcTlsProblems checks
 * the combination and the files for the process's role.
 */
export const grpcTlsConfig = {
  GRPC_TLS: z.enum(['off', 'tls', 'mtls']).default('off'),
  /** This process's certificate chain and key: served by servers, presented by clients with mtls. */
  GRPC_TLS_CERT_FILE: z.string().min(1).optional(),
  GRPC_TLS_KEY_FILE: z.string().min(1).optional(),
  /** The CA bundle clients verify servers with (and, with mtls, servers verify clients with). */
  GRPC_TLS_CA_FILE: z.string().min(1).optional(),
  /** The name clients check in the server's certificate (default: the host of the target address). */
  GRPC_TLS_SERVER_NAME: z
    .string()
    .regex(/^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$/, 'must be a DNS name')
    .optional(),
};

/** TLS to a ClickHouse server at an https CLICKHOUSE_URL (audit, export-worker): see audit-store's clickhouse-tls.ts. */
export const clickHouseTlsConfig = {
  /** The CA bundle the server's certificate is verified with (default: the system CAs). */
  CLICKHOUSE_CA_FILE: z.string().min(1).optional(),
  /** A client certificate chain and key presented to the server (mutual TLS; both or neither). */
  CLICKHOUSE_CERT_FILE: z.string().min(1).optional(),
  CLICKHOUSE_KEY_FILE: z.string().min(1).optional(),
};

/** Variables of a service that applies migrations at start (identity, policy, audit). */
export const migrationConfig = {
  /** true: apply the migrations, then exit 0 without serving (the Kubernetes migrations Job). */
  MIGRATE_ONLY: env.bool(false),
};

/** Variables of a service that owns a Postgres schema. */
export const databaseConfig = {
  DATABASE_URL: env.postgresUrl(),
  DATABASE_POOL_MAX: env.int(10, 1, 200),
  SERVER_SECRET: env.secret(),
};
