import { events } from '@secsvc/proto';
import { isId, type BusRecord } from '@secsvc/shared';
import { canonicalEntry, type IncomingEntry } from './chain';
import type { GeoIp } from './geoip';
import { rowFromEvent } from './rows';

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

  private entryOf(record: BusRecord): IncomingEntry | MalformedRecord {
    let e: events.AuthEvent;
    try {
      e = events.AuthEvent.fromJSON(JSON.parse(record.value));
    } catch (err) {
      return { record, reason: (err as Error).message };
    }
    if (!isId('log', e.id) || !e.type || !e.environment || Number.isNaN(Date.parse(e.timestamp ?? ''))) return { record, reason: 'missing id, type, environment or timestamp' };
    const row = rowFromEvent(e, this.geo.lookup(e.context?.ip ?? ''));
    return { row, canonical: canonicalEntry(row), ...(record.position && { origin: { ...record.position, ...(record.mayRepeat && { mayRepeat: true }) } }) };
  }
}
