import { appendEvent as appendToOutbox, type EventInput, type Pool, type PoolClient } from '@secsvc/shared';

export type { EventInput } from '@secsvc/shared';

/**
 * Writes an event to identity's outbox (the writer is shared by every service; the services build their events
 * with eventOfCall). A user actor always carries the email the user has at that moment: read in the event's own
 * transaction when the caller did not say it.
 */
export async function appendEvent(db: PoolClient | Pool, input: EventInput): Promise<string> {
  const { actor } = input;
  if (actor.type === 'user' && actor.id && !actor.email) {
    const { rows } = await db.query<{ email: string }>('SELECT email FROM users WHERE id = $1 AND environment = $2', [actor.id, input.environment]);
    if (rows[0]) input = { ...input, actor: { ...actor, email: rows[0].email } };
  }
  return appendToOutbox(db, input);
}
