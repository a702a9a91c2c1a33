import { commonConfig, createPool, databaseConfig, env, loadConfig, pingDatabase, runProcess } from '@secsvc/shared';

const configShape = {
  ...commonConfig,
  ...databaseConfig,
  ADMIN_PORT: env.port(9104),
};

// The export job loop (claim, stream, write, complete) is the Export issue. Until then the worker is a
// process with its admin surface (health, readiness against Postgres, metrics) and graceful shutdown.
void runProcess('export-worker', () => loadConfig(configShape), async ({ config, logger }) => {
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger, 'audit');
  return {
    closers: [{ name: 'postgres', close: () => pool.end() }],
    ready: () => pingDatabase(pool),
  };
});
