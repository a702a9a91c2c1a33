import type { events, policy } from '@secsvc/proto';
import { AppError, environmentSchema, type CallContext, type Environment, type Logger, type Pool } from '@secsvc/shared';
import type { PolicyConfig } from './config';
import type { PolicyDecisions } from './domain/decisions';
import type { PolicyRow } from './repositories/policies';

export interface PolicyContext {
  pool: Pool;
  /** SERVER_SECRET signs list cursors. */
  config: Pick<PolicyConfig, 'SERVER_SECRET'>;
  logger: Logger;
  /** The per-environment decision engines, kept in step with the stored policies. */
  decisions: PolicyDecisions;
}

export function environmentOf(value: string): Environment {
  const parsed = environmentSchema.safeParse(value);
  if (!parsed.success) throw AppError.field('environment', 'must be live or test');
  return parsed.data;
}

const meta = (call: CallContext, key: string) => call.metadata.get(key)[0]?.toString();

/** Who made the call and from where, as the gateway passes it in metadata (for audit events). */
export function callerOf(call: CallContext): { actor: events.Actor; context: events.Context; authMethod: string } {
  const id = meta(call, 'x-actor-id');
  return {
    actor: { id: id || undefined, email: undefined, type: meta(call, 'x-actor-type') ?? (id ? 'api_key' : 'anonymous') },
    context: { ip: meta(call, 'x-client-ip') ?? '', userAgent: meta(call, 'x-user-agent') ?? '' },
    // How the caller authenticated: api_key, session, jwt, or none.
    authMethod: meta(call, 'x-auth-method') ?? 'none',
  };
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
