import { descriptorSets, serviceNames } from '@secsvc/proto';
import { commonConfig, createPool, databaseConfig, env, loadConfig, pingDatabase, runProcess, startGrpcServer } from '@secsvc/shared';

const configShape = {
  ...commonConfig,
  ...databaseConfig,
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50053),
  ADMIN_PORT: env.port(9103),
};

// The audit RPCs are declared in libs/proto and listed by reflection; their implementation is its own issue,
// so until then the server answers them UNIMPLEMENTED while health, reflection and metrics are real.
void runProcess('audit', () => loadConfig(configShape), async ({ config, logger, metrics }) => {
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger, 'audit');
  const grpcServer = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    logger,
    metrics,
    descriptorSets,
    services: [],
    declaredOnly: [serviceNames.audit],
  });
  logger.info({ grpcPort: grpcServer.port }, 'audit gRPC listening');
  return {
    closers: [
      { name: 'grpc', close: () => grpcServer.close() },
      { name: 'postgres', close: () => pool.end() },
    ],
    ready: () => pingDatabase(pool),
  };
});
