import type { policy } from '@secsvc/proto';
import type { Logger, Pool } from '@secsvc/shared';
import type { PolicyConfig } from './config';
import type { PolicyDecisions } from './domain/decisions';
import type { PolicyConditions } from './engine';
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
    conditions: toConditionsMessage(row.conditions),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

/**
 * Stored conditions as the message carries them: `ip` as is; `mfa` written `true` as `{required: true}`, an
 * object as `{options: {maxAgeSeconds?}}` (so a reader gets back the form that was written).
 */
export function toConditionsMessage(c: PolicyConditions): policy.Conditions {
  const mfa = c.mfa === true ? { required: true } : c.mfa ? { options: c.mfa.maxAgeSeconds === undefined ? {} : { maxAgeSeconds: c.mfa.maxAgeSeconds } } : undefined;
  return { ...(c.ip ? { ip: { allowlist: [...c.ip.allowlist] } } : {}), ...(mfa ? { mfa } : {}) };
}

/**
 * A request's conditions message in the JSON form the shared schema validates (`mfa: true | {maxAgeSeconds?}`),
 * so errors name the same paths as at the gateway. An mfa message with neither form set reads as `false`
 * (refused, naming conditions.mfa), like `required: false`.
 */
export function conditionsInput(c: policy.Conditions | undefined): unknown {
  if (!c) return c;
  const { mfa, ...rest } = c;
  if (mfa === undefined) return rest;
  const value = mfa.required !== undefined ? mfa.required : mfa.options ? { maxAgeSeconds: mfa.options.maxAgeSeconds } : false;
  return { ...rest, mfa: value };
}
