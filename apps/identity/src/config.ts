import { assertBusConfig, busConfig, commonConfig, databaseConfig, env, loadConfig, migrationConfig } from '@secsvc/shared';
import { z } from 'zod';

export const identityConfigShape = {
  ...commonConfig,
  ...databaseConfig,
  // EVENT_BUS, KAFKA_BROKERS...: where the outbox relay publishes auth events
  ...busConfig,
  ...migrationConfig,
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50051),
  ADMIN_PORT: env.port(9101),
  /** Issuer (iss) of access tokens: the public origin of the gateway. */
  ISSUER: z.string().url('must be a URL').default('http://127.0.0.1:8080'),
  /** Audience (aud) of access tokens. */
  JWT_AUDIENCE: z.string().min(1).default('secsvc'),
  ACCESS_TOKEN_TTL_SECONDS: env.int(900, 60, 86_400),
  /** Lifetime of each OAuth refresh token (every refresh issues a new one with a fresh lifetime). */
  OAUTH_REFRESH_TOKEN_TTL_SECONDS: env.int(30 * 86_400, 3600, 365 * 86_400),
  /** Encrypts the JWT signing keys at rest (≥ 32 characters); derived from SERVER_SECRET when unset. */
  JWT_MASTER_KEY: env.secret().optional(),
  /** How long ended sessions, used or expired tokens, revoked OAuth grants are kept before the sweeper deletes them. */
  IDENTITY_RETENTION_DAYS: env.int(30, 1, 3650),
  /** How often the retention sweeper runs (one replica at a time). */
  RETENTION_SWEEP_INTERVAL_SECONDS: env.int(3600, 10, 86_400),
  /** Local mail port: password reset messages are written here as JSON files (and noted on the console). */
  MAIL_DIR: z.string().min(1).optional(),
  BOOTSTRAP_API_KEY: z
    .string()
    .regex(/^svc_sk_[A-Za-z0-9_-]{32,200}$/, 'must be svc_sk_ followed by at least 32 url-safe characters')
    .optional(),
};

export type IdentityConfig = ReturnType<typeof loadIdentityConfig>;

export function loadIdentityConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(identityConfigShape, source);
  assertBusConfig(config);
  return config;
}
