import { events } from '@secsvc/proto';
import type { Pool, PoolClient } from './db';
import { newId } from './ids';
import { callerOf } from './grpc/caller';
import type { CallContext } from './grpc/server';
import { traceIdOf, traceparentFor } from './tracing/tracer';

export interface EventInput {
  environment: string;
  type: string;
  actor: events.Actor;
  target?: events.Target;
  context: events.Context;
  result: 'success' | 'failure';
  /** The W3C trace id (32 hex digits) of the request that caused the event. */
  traceId: string;
  /**
   * The span the event continues in the audit consumer (W3C traceparent); default: the current context's
   * when it belongs to `traceId`.
   */
  traceparent?: string;
  metadata?: Record<string, unknown>;
  /** How the caller authenticated (metadata.authMethod unless the metadata says otherwise). */
  authMethod?: string;
}

/** What an event says of itself; its caller and trace id come from the call (see eventOfCall). */
export type CallEvent = Omit<EventInput, 'actor' | 'context' | 'traceId' | 'traceparent' | 'authMethod'> & {
  /** Who acted, when not the caller the gateway named (a user logging in, an anonymous attempt). */
  actor?: events.Actor;
};

/**
 * The event a call caused: the caller the gateway named in its metadata (actor, ip, user agent, how it
 * authenticated) and the call's W3C trace id, with what `event` says over them.
 */
export function eventOfCall(call: CallContext, event: CallEvent): EventInput {
  const caller = callerOf(call);
  return { ...caller, ...event, actor: event.actor ?? caller.actor, traceId: traceIdOf(call) };
}

/**
 * Writes an event to the service's `outbox` table (its search_path schema), inside the caller's transaction
 * when given a transaction client, so it exists exactly when the change that caused it was committed. The
 * event id (log_...) is the idempotency key all the way into the audit log. The row keeps the event's
 * traceparent: the relay publishes it with the event, and the audit consumer's span continues it.
 */
export async function appendEvent(db: PoolClient | Pool, input: EventInput): Promise<string> {
  const row = outboxRow(input);
  await db.query(`INSERT INTO outbox (${OUTBOX_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)`, row);
  return row[0];
}

/** appendEvent for several events in one statement (at most 1,000); their ids, in order. */
export async function appendEvents(db: PoolClient | Pool, inputs: EventInput[]): Promise<string[]> {
  if (inputs.length === 0) return [];
  if (inputs.length > 1000) throw new Error('at most 1,000 events per statement');
  const rows = inputs.map(outboxRow);
  const width = rows[0]!.length;
  const values = rows.map((_, i) => `(${Array.from({ length: width }, (_, k) => `$${i * width + k + 1}`).join(', ')})`).join(', ');
  await db.query(`INSERT INTO outbox (${OUTBOX_COLUMNS}) VALUES ${values}`, rows.flat());
  return rows.map((r) => r[0]);
}

/** The columns an outbox row is written with, in the order of outboxRow's values. */
export const OUTBOX_COLUMNS = 'event_id, environment, event_type, event_key, payload, traceparent';

/**
 * The values of the outbox row of `input` (OUTBOX_COLUMNS; the first is the new event id): for a statement that
 * writes the event together with the change that caused it (`INSERT INTO outbox (...) SELECT $n, ... FROM ...`,
 * with payload cast to jsonb).
 */
export function outboxRow(input: EventInput): [eventId: string, environment: string, eventType: string, eventKey: string, payload: unknown, traceparent: string | null] {
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
  return [
    event.id,
    event.environment,
    event.type,
    input.actor.id ?? 'anonymous',
    events.AuthEvent.toJSON(event),
    input.traceparent ?? traceparentFor(input.traceId) ?? null,
  ];
}

/**
 * The DDL of a producing service's outbox in `schema`, exactly as the services' migrations create it (table,
 * index and notify trigger): for tests and benchmarks that need an outbox without a whole service.
 */
export function outboxDdl(schema: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  return `
    CREATE SCHEMA ${schema};
    SET search_path TO ${schema};
    CREATE TABLE outbox (
      seq bigserial PRIMARY KEY, event_id text NOT NULL UNIQUE,
      environment text NOT NULL CHECK (environment IN ('live', 'test')), event_type text NOT NULL,
      event_key text NOT NULL, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now(), published_at timestamptz,
      traceparent text);
    CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_at IS NULL;
    CREATE FUNCTION notify_outbox() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
    BEGIN
      IF NOT EXISTS (SELECT 1 FROM outbox WHERE published_at IS NULL AND seq < NEW.seq) THEN
        PERFORM pg_notify('secsvc_outbox_' || TG_TABLE_SCHEMA, TG_TABLE_SCHEMA);
      END IF;
      RETURN NULL;
    END $$;
    CREATE CONSTRAINT TRIGGER outbox_notify AFTER INSERT ON outbox DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW EXECUTE FUNCTION notify_outbox();
    CREATE TABLE outbox_relay (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton), unsure_through bigint NOT NULL DEFAULT 0);
    INSERT INTO outbox_relay DEFAULT VALUES;
    RESET search_path;`;
}
