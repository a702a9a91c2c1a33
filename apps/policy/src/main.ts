import { descriptorSets, policy, serviceNames } from '@secsvc/proto';
import { createPool, migrate, migratedOnly, pingDatabase, readMigrations, runProcess, startGrpcServer, startServiceOutboxRelay } from '@secsvc/shared';
import { loadPolicyConfig } from './config';
import { startDecisionRuntime } from './decision-runtime';
import { migrationsDir } from './migrations';
import { policyService } from './rpc';

void runProcess('policy', () => loadPolicyConfig(), async ({ config, logger, metrics }) => {
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger, 'policy');
  await migrate(pool, 'policy', await readMigrations(migrationsDir), logger);
  if (config.MIGRATE_ONLY) return migratedOnly({ name: 'postgres', close: () => pool.end() });
  // LISTEN before the first load, so no change can fall between a load and the subscription.
  const { decisions, feed } = await startDecisionRuntime(pool, config.DATABASE_URL, logger);
  const relay = await startServiceOutboxRelay({ config, pool, schema: 'policy', logger, metrics });
  const grpcServer = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    logger,
    metrics,
    descriptorSets,
    services: [
      {
        name: serviceNames.policy,
        definition: policy.PolicyServiceService,
        implementation: policyService({ pool, config, logger, decisions }),
      },
    ],
  });
  logger.info({ grpcPort: grpcServer.port }, 'policy gRPC listening');
  return {
    closers: [
      { name: 'grpc', close: () => grpcServer.close() },
      { name: 'policy-change-feed', close: () => feed.stop() },
      { name: 'outbox-relay', close: () => relay.close() },
      { name: 'postgres', close: () => pool.end() },
    ],
    ready: async () => ({ postgres: await pingDatabase(pool) }),
  };
});
