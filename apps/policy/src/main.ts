import { batchMethods, policy, serviceNames } from '@secsvc/proto';
import { runGrpcService } from '@secsvc/shared';
import { loadPolicyConfig } from './config';
import { startDecisionRuntime } from './decision-runtime';
import { migrationsDir } from './migrations';
import { policyService } from './rpc';

void runGrpcService({
  name: 'policy',
  loadConfig: loadPolicyConfig,
  migrations: migrationsDir,
  async start({ config, logger, pool }) {
    // LISTEN before the first load, so no change can fall between a load and the subscription.
    const { decisions, feed } = await startDecisionRuntime(pool, config.DATABASE_URL, logger);
    return {
      services: [{ name: serviceNames.policy, definition: policy.PolicyServiceService, implementation: policyService({ pool, config, logger, decisions }), batches: batchMethods.policy }],
      closers: [{ name: 'policy-change-feed', close: () => feed.stop() }],
    };
  },
});
