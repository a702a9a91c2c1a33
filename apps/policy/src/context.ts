import type { policy } from '@secsvc/proto';
import type { Logger, Pool } from '@secsvc/shared';
import type { PolicyConfig } from './config';
import type { PolicyDecisions } from './domain/decisions';
import type { PolicyRow } from './repositories/policies';

// The request scoping and caller helpers are shared by every service.
export { callerOf, environmentOf } from '@secsvc/shared';

export interface PolicyContext {
  pool: Pool;
  /** SERVER_SECRET signs list cursors. */
  config: Pick<PolicyConfig, 'SERVER_SECRET'>;
  logger: Logger;
  /** The per-environment decision engines, kept in step with the stored policies. */
  decisions: PolicyDecisions;
}

export function toPolicyMessage(row: PolicyRow): policy.Policy {
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    description: row.description,
    effect: row.effect,
    principals: row.principals,
    actions: row.actions,
    resources: row.resources,
    conditions: row.conditions.ip ? { ip: { allowlist: [...row.conditions.ip.allowlist] } } : {},
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
