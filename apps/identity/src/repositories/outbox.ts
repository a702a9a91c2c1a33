import { appendEvent, callerOf, type CallContext, type Pool, type PoolClient } from '@secsvc/shared';

// The outbox writer is shared by every service.
export { appendEvent, type EventInput } from '@secsvc/shared';

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
