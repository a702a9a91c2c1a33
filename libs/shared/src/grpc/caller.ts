import type { events } from '@secsvc/proto';
import { AppError } from '../errors';
import { environmentSchema, type Environment } from '../validation';
import type { CallContext } from './server';

/** The environment a request is scoped to: live or test; anything else is a 400 naming `environment`. */
export function environmentOf(value: string): Environment {
  const parsed = environmentSchema.safeParse(value);
  if (!parsed.success) throw AppError.field('environment', 'must be live or test');
  return parsed.data;
}

const meta = (call: CallContext, key: string) => call.metadata.get(key)[0]?.toString();

/**
 * Who made the call, from where and how they authenticated, as the gateway passes it in metadata
 * (x-actor-id, x-actor-type, x-actor-email for users, x-actor-name for API keys, x-client-ip, x-user-agent, x-auth-method): the actor
 * and context of events.
 */
export function callerOf(call: CallContext): { actor: events.Actor; context: events.Context; authMethod: string } {
  const id = meta(call, 'x-actor-id');
  return {
    actor: {
      id: id || undefined,
      email: meta(call, 'x-actor-email') || undefined,
      type: meta(call, 'x-actor-type') ?? (id ? 'api_key' : 'anonymous'),
      name: meta(call, 'x-actor-name') || undefined,
    },
    context: { ip: meta(call, 'x-client-ip') ?? '', userAgent: meta(call, 'x-user-agent') ?? '' },
    authMethod: meta(call, 'x-auth-method') ?? 'none',
  };
}
