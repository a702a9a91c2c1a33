import { appendEvent as appendToOutbox, callerOf, type CallContext, type EventInput, type Pool, type PoolClient } from '@secsvc/shared';

export type { EventInput } from '@secsvc/shared';

/**
 * Writes an event to identity's outbox (the writer is shared by every service). A user actor always carries
 * the email the user has at that moment: read in the event's own transaction when the caller did not say it.
 */
export async function appendEvent(db: PoolClient | Pool, input: EventInput): Promise<string> {
  const { actor } = input;
  if (actor.type === 'user' && actor.id && !actor.email) {
    const { rows } = await db.query<{ email: string }>('SELECT email FROM users WHERE id = $1 AND environment = $2', [actor.id, input.environment]);
    if (rows[0]) input = { ...input, actor: { ...actor, email: rows[0].email } };
  }
  return appendToOutbox(db, input);
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

