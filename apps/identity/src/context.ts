import type { identity, events } from '@secsvc/proto';
import { AppError, environmentSchema, type CallContext, type Environment, type Logger, type Pool } from '@secsvc/shared';
import type { IdentityConfig } from './config';
import type { Mailer } from './domain/mailer';
import type { UserRow } from './repositories/users';

export interface IdentityContext {
  pool: Pool;
  config: IdentityConfig;
  logger: Logger;
  /** Where password reset messages go (absent: dropped with a warning). */
  mailer?: Mailer;
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

export function toUserMessage(row: UserRow): identity.User {
  return {
    id: row.id,
    environment: row.environment,
    email: row.email,
    name: row.name,
    emailVerified: row.email_verified,
    roles: row.roles,
    metadataJson: row.metadata,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
