import { events } from '@secsvc/proto';
import { rowFromEvent, type GeoIp, type LogRow, type LogStore } from '@secsvc/audit-store';
import { AUDIT_CONSUMER_GROUP, AUTH_EVENTS_TOPIC, isId, traceBatch, type BusRecord, type EventBus, type Logger, type Metrics, type Subscription } from '@secsvc/shared';
import { Counter } from 'prom-client';

export interface ConsumerOptions {
  bus: EventBus;
  store: LogStore;
  geo: GeoIp;
  logger: Logger;
  metrics?: Metrics;
  maxBatchSize: number;
  maxWaitMs: number;
}

/** A record that cannot be an event (bad JSON, no id...): logged and skipped, since retrying cannot fix it. */
function parse(record: BusRecord, logger: Logger): events.AuthEvent | undefined {
  try {
    const e = events.AuthEvent.fromJSON(JSON.parse(record.value));
    if (!isId('log', e.id) || !e.type || !e.environment || Number.isNaN(Date.parse(e.timestamp ?? ''))) throw new Error('missing id, type, environment or timestamp');
    return e;
  } catch (err) {
    logger.error({ recordId: record.id, err: { message: (err as Error).message } }, 'skipping a malformed event record');
    return undefined;
  }
}

/**
 * The audit consumer: takes batches of auth events off the bus (group `audit`), adds a location to each from
 * its ip, and stores them in ClickHouse. The bus moves the group's position only after the insert resolved,
 * and the store skips ids it already has, so a crash anywhere yields every event exactly once in the log.
 */
export async function startConsumer(o: ConsumerOptions): Promise<Subscription> {
  const stored = o.metrics
    ? new Counter({ name: 'audit_events_stored_total', help: 'Events inserted into the log store', registers: [o.metrics.registry] })
    : undefined;
  const duplicates = o.metrics
    ? new Counter({ name: 'audit_events_duplicate_total', help: 'Events received again and skipped (already stored)', registers: [o.metrics.registry] })
    : undefined;
  const lag = o.bus.lag?.bind(o.bus);
  if (o.metrics && lag) {
    o.metrics.scrapedGauges(
      'bus_lag',
      { lag: { name: 'bus_consumer_lag_events', help: 'Events on the bus the consumer group has not consumed yet', labelNames: ['topic', 'group'] } },
      async (g) => g.lag.set({ topic: AUTH_EVENTS_TOPIC, group: AUDIT_CONSUMER_GROUP }, await lag(AUTH_EVENTS_TOPIC, AUDIT_CONSUMER_GROUP)),
    );
  }
  return o.bus.subscribe(
    { topic: AUTH_EVENTS_TOPIC, group: AUDIT_CONSUMER_GROUP, maxBatchSize: o.maxBatchSize, maxWaitMs: o.maxWaitMs },
    async (batch) => {
      const rows: LogRow[] = [];
      for (const record of batch) {
        const e = parse(record, o.logger);
        if (e) rows.push(rowFromEvent(e, o.geo.lookup(e.context?.ip ?? '')));
      }
      // Traced: each event's span continues the trace of the request that caused it (its traceparent).
      const inserted = await traceBatch(AUTH_EVENTS_TOPIC, batch, () => o.store.insert(rows));
      stored?.inc(inserted);
      duplicates?.inc(rows.length - inserted);
    },
  );
}
