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

/**
 * A caller over its rate limit (rate_limit.exceeded), reported by a gateway once per subject and window and
 * recorded outside any transaction. The actor is the caller (an API key, a user, or anonymous for an ip).
 */
export async function recordRateLimitExceeded(
  pool: Pool,
  call: CallContext,
  environment: string,
  subject: { type: 'api_key' | 'user' | 'ip'; id: string },
  limit: number,
  windowSeconds: number,
): Promise<void> {
  const caller = callerOf(call);
  await appendEvent(pool, {
    ...caller,
    environment,
    type: 'rate_limit.exceeded',
    target: subject.type === 'ip' ? { id: caller.context.ip, type: 'ip' } : { id: subject.id, type: subject.type },
    result: 'failure',
    traceId: call.requestId,
    metadata: { limit, windowSeconds, subject: subject.type },
  });
}

