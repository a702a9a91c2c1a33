import { EventRecords, type GeoIp, type LogStore } from '@secsvc/audit-store';
import { AUDIT_CONSUMER_GROUP, AUTH_EVENTS_TOPIC, traceBatch, type EventBus, type Logger, type Metrics, type Subscription } from '@secsvc/shared';
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

/**
 * The audit consumer: takes batches of auth events off the bus (group `audit`), adds a location to each from
 * its ip, and stores them in ClickHouse; each record is parsed as soon as the bus has read it (EventRecords),
 * while the batch before is being stored. A record that cannot be an event (bad JSON, no id...) is logged
 * and skipped, since retrying cannot fix it. The bus moves the group's position only after the insert resolved,
 * and the store skips ids it already has (looking up only the events its bus positions cannot vouch for), so a
 * crash anywhere yields every event exactly once in the log.
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
  const records = new EventRecords(o.geo);
  return o.bus.subscribe(
    { topic: AUTH_EVENTS_TOPIC, group: AUDIT_CONSUMER_GROUP, maxBatchSize: o.maxBatchSize, maxWaitMs: o.maxWaitMs, onReceived: records.prepare },
    async (batch) => {
      const entries = records.entries(batch, ({ record, reason }) => o.logger.error({ recordId: record.id, err: { message: reason } }, 'skipping a malformed event record'));
      // Traced: each event's span continues the trace of the request that caused it (its traceparent).
      const inserted = await traceBatch(AUTH_EVENTS_TOPIC, batch, () => o.store.insertEntries(entries));
      stored?.inc(inserted);
      duplicates?.inc(entries.length - inserted);
    },
  );
}
