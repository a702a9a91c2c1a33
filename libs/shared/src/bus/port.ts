/**
 * The event bus port: auth events travel from each producing service's outbox relay to the audit consumer.
 * Two adapters implement it with the same semantics: Postgres (a durable topic table, local profile) and
 * Kafka (distributed profile). Domain code only ever sees this interface.
 *
 * Delivery is at least once: a record is handed to a subscriber again until the subscriber's handler has
 * resolved for the batch that contained it. Subscribers make the effect exactly once (the audit store
 * deduplicates by record id).
 */
export interface BusRecord {
  /** The event id (log_...): the idempotency key end to end. */
  id: string;
  /** Partition / ordering key: records with the same key are delivered in publish order. */
  key: string;
  /** The payload, JSON text of an events.v1.AuthEvent. */
  value: string;
  /** The W3C trace context of the span that wrote the record (Kafka: header `traceparent`), if any. */
  traceparent?: string;
  /**
   * The publisher may have published this record before: an earlier attempt's outcome was unknown (a relay
   * round that failed or stopped after sending). Kafka: header `secsvc-may-repeat`. Subscribers that tell
   * repeats apart by position must check such a record by its id.
   */
  mayRepeat?: boolean;
  /**
   * Where a subscription read the record (set on delivery, ignored by publish): its partition and offset there.
   * Offsets grow in publish order within a partition, and a record handed over again keeps its position, so a
   * subscriber that remembers the last position it durably handled per partition can tell a record handed over
   * again (at or below it) from one it has never seen (above it), without looking it up.
   */
  position?: BusPosition;
}

/** Hands a record just read to SubscribeOptions.onReceived, if any; what it throws is ignored (the handler still gets the record). */
export function showReceived(onReceived: SubscribeOptions['onReceived'], record: BusRecord): void {
  try {
    onReceived?.(record);
  } catch {
    // onReceived must not throw: nothing of the record's delivery depends on it.
  }
}

/** A record's place on the bus: Kafka's partition and offset; the Postgres bus's sequence number (partition 0). */
export interface BusPosition {
  partition: number;
  offset: number;
}

export interface SubscribeOptions {
  topic: string;
  /** Consumer group: each group sees every record; within a group each record goes to one member. */
  group: string;
  /** Most records per handler call (default 1,000). */
  maxBatchSize?: number;
  /**
   * Partial batches are handed over at most this often (default 200 ms): a record waits at most this long for
   * others to join it, and not at all when the last batch was handed over longer ago than that.
   */
  maxWaitMs?: number;
  /**
   * Called once with each record as soon as the subscription has read it: possibly while the handler still
   * works on an earlier batch, so per-record work done here overlaps it. The handler later gets the same
   * object (a record read again after a failure or a rebalance is a new object, shown here again). Must not
   * throw (what it throws is ignored).
   */
  onReceived?: (record: BusRecord) => void;
}

/**
 * Called with a non-empty batch in publish order (per key). Resolve once the batch is durably handled: only
 * then is the group's position moved past it. Throwing makes the adapter hand the same records again after
 * a backoff (never skips them).
 */
export type BatchHandler = (records: BusRecord[]) => Promise<void>;

export interface Subscription {
  /** Stops fetching; resolves after the handler call in flight (if any) finished and its position was saved. */
  stop(): Promise<void>;
}

/**
 * Publishing inside a PostgreSQL transaction (the Postgres bus, whose records live in a database): a publisher
 * connected to that same database hands the bus a query of the records instead of the records, and they are
 * published when its own transaction commits (the outbox relay: read, marked and published in one statement,
 * without the records travelling to the relay and back).
 */
export interface InDatabasePublishing {
  /** The database the bus's records live in (its connection URL): only a publisher on it can use this. */
  readonly databaseUrl: string;
  /**
   * One statement (no parameters) that publishes to `topic` the rows `source` yields, in `seq` order, and returns
   * how many as column `n`. `source`: a query (it may modify data, as an UPDATE ... RETURNING does) with
   * columns seq (bigint), id, key, value, traceparent (text) and may_repeat (boolean).
   */
  statement(topic: string, source: string): string;
}

export interface EventBus {
  readonly kind: 'postgres' | 'kafka';
  /** Resolves once every record is durably accepted by the bus (acknowledged), in order per key. */
  publish(topic: string, records: BusRecord[]): Promise<void>;
  /** Set when the bus can publish inside a publisher's PostgreSQL transaction (InDatabasePublishing). */
  readonly inDatabase?: InDatabasePublishing;
  subscribe(options: SubscribeOptions, handler: BatchHandler): Promise<Subscription>;
  /**
   * Records of `topic` that `group` has not consumed yet (its saved position; records fetched but not yet
   * handled count as not consumed), for the bus_consumer_lag_events gauge.
   */
  lag?(topic: string, group: string): Promise<number>;
  /** Stops every subscription and releases connections. */
  close(): Promise<void>;
}

/** The topic auth events travel on. */
export const AUTH_EVENTS_TOPIC = 'auth-events';
/** The audit service's consumer group. */
export const AUDIT_CONSUMER_GROUP = 'audit';

export const DEFAULT_MAX_BATCH_SIZE = 1000;
export const DEFAULT_MAX_WAIT_MS = 200;
