import { events } from '@secsvc/proto';
import { newId, type CallContext, type PoolClient } from '@secsvc/shared';
import { callerOf } from '../context';

export type PolicyEventType = 'policy.created' | 'policy.updated' | 'policy.deleted';

/**
 * Writes a successful policy.* event about `policyId` to the outbox inside the caller's transaction, so it
 * exists exactly when the change was committed. The actor and context come from the gateway's metadata.
 */
export async function appendPolicyEvent(
  client: PoolClient,
  call: CallContext,
  environment: string,
  type: PolicyEventType,
  policyId: string,
  metadata?: Record<string, unknown>,
): Promise<string> {
  const { actor, context, authMethod } = callerOf(call);
  const event: events.AuthEvent = {
    id: newId('log'),
    environment,
    type,
    timestamp: new Date().toISOString(),
    actor,
    target: { id: policyId, type: 'policy' },
    context,
    result: 'success',
    traceId: call.requestId,
    metadataJson: JSON.stringify({ authMethod, mfaUsed: false, ...metadata }),
  };
  await client.query(
    `INSERT INTO outbox (event_id, environment, event_type, event_key, payload) VALUES ($1, $2, $3, $4, $5)`,
    [event.id, environment, type, actor.id ?? 'anonymous', events.AuthEvent.toJSON(event)],
  );
  return event.id;
}
