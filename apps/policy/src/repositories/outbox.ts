import { appendEvent, eventOfCall, type CallContext, type PoolClient } from '@secsvc/shared';

export type PolicyEventType = 'policy.created' | 'policy.updated' | 'policy.deleted';

/**
 * A successful policy.* event about `policyId`, written to the outbox inside the caller's transaction; the
 * actor and context come from the gateway's metadata.
 */
export function appendPolicyEvent(
  client: PoolClient,
  call: CallContext,
  environment: string,
  type: PolicyEventType,
  policyId: string,
  metadata?: Record<string, unknown>,
): Promise<string> {
  return appendEvent(client, eventOfCall(call, { environment, type, target: { id: policyId, type: 'policy' }, result: 'success', metadata }));
}
