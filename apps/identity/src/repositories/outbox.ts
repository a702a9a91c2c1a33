import { appendEvent as appendToOutbox, appendEvents as appendAllToOutbox, type EventInput, type Pool, type PoolClient } from '@secsvc/shared';

export type { EventInput } from '@secsvc/shared';

/**
 * Writes an event to identity's outbox (the writer is shared by every service; the services build their events
 * with eventOfCall). A user actor always carries the email the user has at that moment: read in the event's own
 * transaction when the caller did not say it.
 */
export async function appendEvent(db: PoolClient | Pool, input: EventInput): Promise<string> {
  return appendToOutbox(db, await withEmail(db, input));
}

/** appendEvent for several events in one statement (at most 1,000). */
export async function appendEvents(db: PoolClient | Pool, inputs: EventInput[]): Promise<string[]> {
  const complete: EventInput[] = [];
  for (const input of inputs) complete.push(await withEmail(db, input));
  return appendAllToOutbox(db, complete);
}

async function withEmail(db: PoolClient | Pool, input: EventInput): Promise<EventInput> {
  const { actor } = input;
  if (actor.type === 'user' && actor.id && !actor.email) {
    const { rows } = await db.query<{ email: string }>('SELECT email FROM users WHERE id = $1 AND environment = $2', [actor.id, input.environment]);
    if (rows[0]) return { ...input, actor: { ...actor, email: rows[0].email } };
  }
  return input;
}
