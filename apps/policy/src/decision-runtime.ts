import type { Logger, Pool } from '@secsvc/shared';
import { PolicyDecisions } from './domain/decisions';
import { PolicyChangeFeed } from './domain/policy-change-feed';
import { loadEngine, type EngineOptions } from './engine';
import { policiesRepository } from './repositories/policies';

export interface DecisionRuntime {
  decisions: PolicyDecisions;
  feed: PolicyChangeFeed;
}

/**
 * The decision engines wired to Postgres: policies load through `pool`, and a dedicated LISTEN connection to
 * `databaseUrl` announces changes. Stop the feed on shutdown.
 */
export async function startDecisionRuntime(pool: Pool, databaseUrl: string, logger: Logger, engine: EngineOptions = {}): Promise<DecisionRuntime> {
  const state: { feed?: PolicyChangeFeed } = {};
  const decisions = new PolicyDecisions(
    {
      loadPolicies: (environment) => policiesRepository.loadForEngine(pool, environment),
      createEngine: () => loadEngine(engine),
      isLive: () => state.feed?.live ?? false,
    },
    logger,
  );
  const feed = new PolicyChangeFeed(databaseUrl, logger, {
    onChange: (environment) => decisions.changed(environment),
    onLive: () => decisions.resync(),
  });
  state.feed = feed;
  await feed.start();
  return { decisions, feed };
}
