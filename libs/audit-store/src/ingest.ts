import { isId, type BusRecord } from '@secsvc/shared';
import { canonicalEntry, type IncomingEntry } from './chain';
import type { GeoIp } from './geoip';
import type { LogRow } from './rows';

/** A record that cannot be an event (bad JSON, no id...): skipped, since retrying cannot fix it. */
export interface MalformedRecord {
  record: BusRecord;
  reason: string;
}

/**
 * Turns auth-event records from the bus into log entries: the event parsed and checked, its ip located, its
 * canonical form (what the chain hashes and the insert sends) made, and where it came from on the bus. Given
 * as the subscription's `onReceived`, `prepare` does that work as soon as the bus has read a record, while the
 * store still works on the batch before (it waits on ClickHouse and PostgreSQL, so the two overlap); `entries`
 * then picks the prepared entries up, and prepares any record the bus did not show early.
 */
export class EventRecords {
  private readonly ready = new WeakMap<BusRecord, IncomingEntry | MalformedRecord>();
  /** One copy of each text that repeats across events (see `shared`). */
  private readonly texts = new Map<string, string>();

  constructor(private readonly geo: GeoIp) {}

  /** SubscribeOptions.onReceived. */
  readonly prepare = (record: BusRecord): void => {
    this.ready.set(record, this.entryOf(record));
  };

  /** The batch's entries, in order; malformed records are left out and given to `skipped`. */
  entries(batch: BusRecord[], skipped: (bad: MalformedRecord) => void): IncomingEntry[] {
    const out: IncomingEntry[] = [];
    for (const record of batch) {
      const entry = this.ready.get(record) ?? this.entryOf(record);
      this.ready.delete(record);
      if ('row' in entry) out.push(entry);
      else skipped(entry);
    }
    return out;
  }

  // A prepared entry lives until its batch is inserted, past the young generation: what it holds is copied by
  // the scavenger twice, most of the GC time per event. Hence a flat canonical form, shared texts and the
  // record's own position.
  private entryOf(record: BusRecord): IncomingEntry | MalformedRecord {
    const row = eventRow(record.value, this.geo, this.shared);
    if (typeof row === 'string') return { record, reason: row };
    const canonical = flat(canonicalEntry(row));
    if (!record.position) return { row, canonical };
    // Positions are not changed once delivered.
    return { row, canonical, origin: record.mayRepeat ? { ...record.position, mayRepeat: true } : record.position };
  }

  /** `text`, or an equal text seen lately: the entries then keep one copy of an event type, user agent... */
  private readonly shared = (text: string): string => {
    if (text.length > 512) return text; // rarely repeated; the cache stays small
    const known = this.texts.get(text);
    if (known !== undefined) return known;
    if (this.texts.size >= 4096) this.texts.clear();
    this.texts.set(text, text);
    return text;
  };
}

/**
 * `text` flattened: JSON.stringify returns a rope of the buffers it grew (half again the text's size), which the
 * entry would keep. V8 flattens a rope when a character of it is read.
 */
function flat(text: string): string {
  text.charCodeAt(0);
  return text;
}

/** An events.v1.AuthEvent as JSON, before anything is checked (any field may hold any JSON value). */
interface EventJson {
  id?: unknown;
  environment?: unknown;
  type?: unknown;
  timestamp?: unknown;
  actor?: { id?: unknown; email?: unknown; type?: unknown; name?: unknown } | null;
  target?: { id?: unknown; type?: unknown } | null;
  context?: { ip?: unknown; userAgent?: unknown; user_agent?: unknown } | null;
  result?: unknown;
  traceId?: unknown;
  trace_id?: unknown;
  metadataJson?: unknown;
  metadata_json?: unknown;
}

/** A string field as events.AuthEvent.fromJSON reads it: String() of the value, `absent` when null or missing. */
const text = (v: unknown, absent: string): string => (v === undefined || v === null ? absent : String(v));

/**
 * The row of an event's JSON text, located, or why it cannot be one (bad JSON, no log id, type, environment or
 * valid timestamp). It is rowFromEvent(events.AuthEvent.fromJSON(JSON.parse(value)), ...) without making the
 * message, its nested objects and a Date on the way: the same fields and snake_case aliases, defaults and
 * String() of values that are not text, converted in fromJSON's order, so that a value String() rejects is
 * reported as it was. `shared` gives the texts that repeat (see EventRecords.shared).
 */
function eventRow(value: string, geo: GeoIp, shared: (text: string) => string): LogRow | string {
  let id: string, environment: string, type: string, timestamp: string, actorId: string, actorEmail: string, actorType: string, actorName: string;
  let targetId: string, targetType: string, ip: string, userAgent: string, result: string, traceId: string, metadata: string;
  try {
    const json = JSON.parse(value) as EventJson;
    id = text(json.id, '');
    environment = text(json.environment, '');
    type = text(json.type, '');
    timestamp = text(json.timestamp, '');
    const { actor, target, context } = json;
    const hasActor = actor !== undefined && actor !== null;
    actorId = hasActor ? text(actor.id, '') : '';
    actorEmail = hasActor ? text(actor.email, '') : '';
    actorType = hasActor ? text(actor.type, '') : 'anonymous';
    actorName = hasActor ? text(actor.name, '') : '';
    const hasTarget = target !== undefined && target !== null;
    targetId = hasTarget ? text(target.id, '') : '';
    targetType = hasTarget ? text(target.type, '') : '';
    const hasContext = context !== undefined && context !== null;
    ip = hasContext ? text(context.ip, '') : '';
    userAgent = hasContext ? text(context.userAgent ?? context.user_agent, '') : '';
    result = text(json.result, '');
    traceId = text(json.traceId ?? json.trace_id, '');
    metadata = text(json.metadataJson ?? json.metadata_json, '');
  } catch (err) {
    return (err as Error).message;
  }
  // A missing timestamp reads as '' (Date.parse('') is NaN, as the check was).
  const time = isId('log', id) && type && environment ? utcMillis(timestamp) : undefined;
  if (time === undefined) return 'missing id, type, environment or timestamp';
  const location = geo.lookup(ip);
  return {
    id,
    environment,
    timestamp: time,
    event: shared(type),
    actor_id: actorId,
    actor_email: actorEmail,
    actor_type: actorType,
    target_id: targetId,
    target_type: targetType,
    ip: shared(ip),
    user_agent: shared(userAgent),
    city: location?.city ?? '',
    country: location?.country ?? '',
    region: location?.region ?? '',
    lat: location ? location.lat : null,
    lng: location ? location.lng : null,
    result,
    trace_id: traceId,
    metadata: shared(metadata || '{}'),
    actor_name: actorName,
  };
}

const UTC_MILLIS = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/;
const digits = (t: string, from: number, to: number): number => {
  let n = 0;
  for (let i = from; i < to; i++) n = n * 10 + t.charCodeAt(i) - 48;
  return n;
};

/**
 * `new Date(t).toISOString()`, or undefined where that throws (Date cannot read `t`). A timestamp in that form
 * already (what producers send) is given back as it is, without a Date: where its fields are in range, Date
 * reads it as that instant and prints it the same (Date reads out-of-range ones leniently: Feb 30 is March 1,
 * T24:00 the next day; those go through Date).
 */
function utcMillis(t: string): string | undefined {
  if (UTC_MILLIS.test(t)) {
    const day = digits(t, 8, 10);
    if (day <= 28) return t;
    const month = digits(t, 5, 7);
    const year = digits(t, 0, 4);
    const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
    if (day <= (month === 2 ? (leap ? 29 : 28) : month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31)) return t;
  }
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
