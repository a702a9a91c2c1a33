import type { appendEvent } from '@secsvc/shared';

/** A producing service's outbox, as identity's and policy's migrations create it (schema svc). */
export const OUTBOX_DDL = `
  CREATE SCHEMA svc; SET search_path TO svc;
  CREATE TABLE outbox (seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE,
    environment text NOT NULL CHECK (environment IN ('live', 'test')), event_type text NOT NULL, event_key text NOT NULL,
    payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), published_at timestamptz);
  CREATE FUNCTION notify_outbox() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN PERFORM pg_notify('secsvc_outbox', TG_TABLE_SCHEMA); RETURN NULL; END $$;
  CREATE TRIGGER outbox_notify AFTER INSERT ON outbox FOR EACH STATEMENT EXECUTE FUNCTION notify_outbox();`;

/** Waits until `cond` holds (polling every 50 ms), or fails after `ms`. */
export async function until(cond: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The i-th test event: alternating kinds, seven actors, a London address. */
export const eventInput = (i: number, over: Partial<Parameters<typeof appendEvent>[1]> = {}): Parameters<typeof appendEvent>[1] => ({
  environment: 'live',
  type: i % 2 ? 'user.login' : 'user.updated',
  actor: { id: `user_${i % 7}`, email: `person${i % 7}@example.com`, type: 'user' },
  target: { id: `ses_${i}`, type: 'session' },
  context: { ip: '81.2.69.142', userAgent: 'jest' },
  result: 'success',
  traceId: `req_${i}`,
  authMethod: 'password',
  ...over,
});
