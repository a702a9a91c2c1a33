import { busConfig, busConfigProblems, commonConfig, ConfigError, databaseConfig, env, grpcTlsConfig, grpcTlsProblems, loadConfig, migrationConfig } from '@secsvc/shared';

export const policyConfigShape = {
  ...commonConfig,
  // DATABASE_URL, DATABASE_POOL_MAX, and SERVER_SECRET (signs list cursors)
  ...databaseConfig,
  // EVENT_BUS, KAFKA_BROKERS...: where the outbox relay publishes policy events
  ...busConfig,
  ...migrationConfig,
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50052),
  ...grpcTlsConfig,
  ADMIN_PORT: env.port(9102),
};

export type PolicyConfig = ReturnType<typeof loadPolicyConfig>;

export function loadPolicyConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(policyConfigShape, source);
  const problems = [...busConfigProblems(config), ...grpcTlsProblems(config, 'server')];
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
