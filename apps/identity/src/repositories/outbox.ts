import { events } from '@secsvc/proto';
import { newId, type CallContext, type Pool, type PoolClient } from '@secsvc/shared';
import { callerOf } from '../context';

export interface EventInput {
  environment: string;
  type: string;
  actor: events.Actor;
  target?: events.Target;
  context: events.Context;
  result: 'success' | 'failure';
  traceId: string;
  metadata?: Record<string, unknown>;
  /** How the caller authenticated (metadata.authMethod unless the metadata says otherwise). */
  authMethod?: string;
}

/**
 * Writes an event to the outbox inside the caller's transaction, so it exists exactly when the change
 * that caused it was committed. The relay to the event bus comes with the Audit issue.
 */
export async function appendEvent(client: PoolClient | Pool, input: EventInput): Promise<string> {
  const event: events.AuthEvent = {
    id: newId('log'),
    environment: input.environment,
    type: input.type,
    timestamp: new Date().toISOString(),
    actor: input.actor,
    target: input.target,
    context: input.context,
    result: input.result,
    traceId: input.traceId,
    metadataJson: JSON.stringify({ authMethod: input.authMethod ?? 'none', mfaUsed: false, ...input.metadata }),
  };
  await client.query(
    `INSERT INTO outbox (event_id, environment, event_type, event_key, payload) VALUES ($1, $2, $3, $4, $5)`,
    [event.id, event.environment, event.type, input.actor.id ?? 'anonymous', events.AuthEvent.toJSON(event)],
  );
  return event.id;
}

/** A successful user.* event about `userId`, by the caller of `call` (the API key, from gateway metadata). */
export function appendUserEvent(
  client: PoolClient,
  call: CallContext,
  environment: string,
  type: 'user.created' | 'user.updated' | 'user.deleted',
  userId: string,
  metadata?: Record<string, unknown>,
): Promise<string> {
  return appendEvent(client, {
    ...callerOf(call),
    environment,
    type,
    target: { id: userId, type: 'user' },
    result: 'success',
    traceId: call.requestId,
    metadata,
  });
}

/**
 * A refused credential (auth.failed), recorded outside any transaction. Only the credential's prefix is kept,
 * never the value.
 */
export async function recordAuthFailure(
  pool: Pool,
  call: CallContext,
  credential: 'api_key' | 'session' | 'jwt',
  prefix: string,
  reason: string,
  logger: { warn: (obj: object, msg: string) => void },
): Promise<void> {
  await appendEvent(pool, {
    actor: { type: 'anonymous' },
    context: callerOf(call).context,
    environment: 'live',
    type: 'auth.failed',
    result: 'failure',
    traceId: call.requestId,
    metadata: { credential, prefix, reason },
  }).catch((err: unknown) => logger.warn({ err: { message: (err as Error).message } }, 'could not record auth.failed'));
}
