import { Backoff } from './backoff';
import { Counter } from 'prom-client';
import type pg from 'pg';
import { GAUGE_STATEMENT_TIMEOUT_MS, withStatementTimeout, type Pool, type PoolClient } from './db';
import type { Logger } from './logger';
import type { Metrics } from './metrics';
import { PgChannelListener } from './pg-listener';
import { Waker } from './waker';
import { AUTH_EVENTS_TOPIC, type EventBus, type InDatabasePublishing } from './bus/port';
import { createEventBus, type BusSettings } from './bus/config';

/**
 * The channel the outbox trigger of `schema` notifies (see each service's outbox migrations and outboxDdl): one
 * per schema, so a service's relay is woken by its own events only.
 */
export const outboxChannel = (schema: string): string => `secsvc_outbox_${schema}`;

export interface OutboxRelayOptions {
  /**
   * The service's pool (search_path = its schema, which holds the `outbox` table). A round holds one connection
   * and, before it publishes, commits its range on another: the pool needs at least 2.
   */
  pool: Pool;
  /** For the LISTEN connection. */
  databaseUrl: string;
  schema: string;
  bus: EventBus;
  logger: Logger;
  metrics?: Metrics;
  topic?: string;
  /**
   * Rows per round (default 5,000). A round takes what is there, so this matters for a backlog: on the
   * Postgres bus a round of 5,000 costs PostgreSQL 7 µs per event, one of 500 costs 9.
   */
  batchSize?: number;
  /** Poll interval when no notification arrives (default 1 s). */
  pollMs?: number;
  /**
   * The pause after a round that published less than a full batch, before the next (default 100 ms): events
   * arriving meanwhile go out together, so a steady stream costs a round per pause rather than per event.
   */
  lingerMs?: number;
  /**
   * How long published rows are kept before deletion (default 24 h), for replay when the bus lost them. On a
   * bus in the outbox's own database a round deletes the rows it publishes (the bus's records keep them).
   */
  keepPublishedMs?: number;
}

interface OutboxRow {
  seq: string;
  event_id: string;
  event_key: string;
  /** The event's JSON text (payload::text: no parse and re-serialisation on the way through). */
  payload: string;
  traceparent: string | null;
}

/**
 * The oldest unpublished rows, in outbox order (the partial index `outbox_unpublished` holds exactly them, in
 * seq order). `limit`: a number, or a parameter such as `$1`.
 */
export function unpublishedQuery(schema: string, limit: number | string = '$1', condition = 'true'): string {
  return `SELECT seq, event_id, event_key, payload::text AS payload, traceparent FROM ${schema}.outbox
          WHERE published_at IS NULL AND ${condition} ORDER BY seq LIMIT ${limit}`;
}

/**
 * A round's rows on a bus in the outbox's own database (relayInDatabase's source): the oldest unpublished rows,
 * deleted from the outbox and returned as the bus's statement takes them. The bus's records table keeps them
 * from then on (for its retention), so the outbox keeping a second copy would only cost: marking a row
 * published writes a new version of it and two index entries (measured: 12 µs of PostgreSQL CPU per event,
 * against 5 to delete it), and the clean-up a day later deletes it anyway. They are picked by walking
 * `outbox_unpublished` (an array of their seqs, so the DELETE finds them by primary key), only while holding
 * the relay lock (`lock`, asked for inside the statement). The DELETE checks `published_at IS NULL` again:
 * the statement's snapshot is taken before the lock is granted, so a round of another replica that committed
 * in between still looks unpublished to the pick, and only the re-check on the rows' newest versions (gone,
 * or marked by a replica publishing to another bus) keeps those rows from going out twice.
 */
export function takeRowsQuery(schema: string, limit: number, lock: string): string {
  return `DELETE FROM ${schema}.outbox
      WHERE published_at IS NULL
        AND seq = ANY (ARRAY(SELECT seq FROM ${schema}.outbox WHERE published_at IS NULL AND (SELECT ${lock}) ORDER BY seq LIMIT ${limit}))
      RETURNING seq, event_id AS id, event_key AS key, payload::text AS value, traceparent,
                seq <= (SELECT unsure_through FROM ${schema}.outbox_relay) AS may_repeat`;
}

/**
 * Set in each round's transaction before the read: the rows must come from walking `outbox_unpublished` in
 * order. Planner statistics taken while few rows were unpublished (or none yet, on a freshly filled table)
 * make PostgreSQL pick a bitmap scan of every unpublished row, converting each payload to text, and a sort
 * of them all (on disk for a large backlog) to keep 500: each round then costs time proportional to the
 * whole backlog (measured with a 100,000-event backlog: 1.2 s per round instead of 36 ms). `SET LOCAL` ends
 * with the transaction.
 */
export const INDEX_ORDER_ONLY = 'SET LOCAL enable_sort = off';

const counters = new WeakMap<Metrics, Counter<'schema'>>();
function relayedCounter(metrics: Metrics): Counter<'schema'> {
  let c = counters.get(metrics);
  if (!c) {
    c = new Counter({ name: 'outbox_relayed_total', help: 'Outbox events published to the event bus', labelNames: ['schema'], registers: [metrics.registry] });
    counters.set(metrics, c);
  }
  return c;
}

/**
 * outbox_backlog_events (rows not yet published) and outbox_oldest_event_age_seconds (of the oldest of them, 0
 * when none), counted when /metrics is scraped: both walk the partial index `outbox_unpublished`.
 */
export function observeOutboxBacklog(metrics: Metrics, pool: Pool, schema: string): void {
  metrics.scrapedGauges(
    'outbox',
    {
      backlog: { name: 'outbox_backlog_events', help: 'Outbox events not yet published to the event bus' },
      oldest: { name: 'outbox_oldest_event_age_seconds', help: 'Age of the oldest outbox event not yet published (0 when none)' },
    },
    async (g) => {
      const { rows } = await withStatementTimeout(pool, GAUGE_STATEMENT_TIMEOUT_MS, (c) =>
        c.query<{ n: string; age: number }>(
          `SELECT (SELECT count(*) FROM ${schema}.outbox WHERE published_at IS NULL) AS n,
                  coalesce(extract(epoch FROM now() - (SELECT created_at FROM ${schema}.outbox WHERE published_at IS NULL ORDER BY seq LIMIT 1)), 0)::float8 AS age`,
        ),
      );
      g.backlog.set(Number(rows[0]!.n));
      g.oldest.set(Math.max(0, rows[0]!.age));
    },
  );
}

/**
 * Relays a service's outbox to the event bus. Each round runs in one transaction that holds a transaction
 * advisory lock (one relaying replica at a time, so rows go out in outbox order), reads the oldest unpublished
 * rows, publishes them and marks them published (at the same time), and commits once the bus acknowledged.
 * A crash between the acknowledgement and the commit publishes the rows again on the next round: duplicates,
 * never loss. Those are flagged (BusRecord.mayRepeat): before a round sends anything, its highest sequence
 * number is committed in `outbox_relay`, and rows still unpublished at or below it go out flagged, so the audit
 * store looks up by id only the events that may repeat (it knows the others by their bus position). On a bus
 * in the outbox's own database (InDatabasePublishing) a round is one statement instead (relayInDatabase).
 */
export class OutboxRelay {
  private stopped = false;
  private readonly waker = new Waker();
  private running: Promise<void> | undefined;
  private listener: PgChannelListener | undefined;
  private lastCleanup = 0;
  private readonly topic: string;
  private readonly batchSize: number;
  /** The statements that open a round, sent as one simple query. */
  private readonly opening: string;
  /** Set when the bus lives in this database: rounds then publish on the server (relayInDatabase). */
  private readonly inDatabase: InDatabasePublishing | undefined;
  /** relayInDatabase's source: the round's rows, taken out of the outbox. */
  private readonly takeRows: string;

  constructor(private readonly o: OutboxRelayOptions) {
    if (!/^[a-z_][a-z0-9_]*$/.test(o.schema)) throw new Error(`invalid schema name ${o.schema}`);
    this.topic = o.topic ?? AUTH_EVENTS_TOPIC;
    this.batchSize = o.batchSize ?? 5000;
    if (!Number.isSafeInteger(this.batchSize) || this.batchSize < 1) throw new Error(`invalid batch size ${this.batchSize}`);
    // The read asks for the lock again (an uncorrelated subquery, evaluated once; granted again to its holder):
    // a replica without it reads nothing.
    const lock = `pg_try_advisory_xact_lock(hashtext('secsvc:outbox:${o.schema}'))`;
    this.opening = `BEGIN; SELECT ${lock} AS ok; ${INDEX_ORDER_ONLY}; SELECT unsure_through FROM ${o.schema}.outbox_relay; ${unpublishedQuery(o.schema, this.batchSize, `(SELECT ${lock})`)}`;
    // The bus's own statement can take the rows on the server when it lives in this database.
    this.inDatabase = o.bus.inDatabase?.databaseUrl === o.databaseUrl ? o.bus.inDatabase : undefined;
    this.takeRows = takeRowsQuery(o.schema, this.batchSize, lock);
    if (o.metrics) observeOutboxBacklog(o.metrics, o.pool, o.schema);
  }

  async start(): Promise<void> {
    this.listener = new PgChannelListener(this.o.databaseUrl, outboxChannel(this.o.schema), this.o.logger, {
      onNotify: () => this.wake(),
      onLive: () => this.wake(),
    });
    await this.listener.start();
    this.running = this.loop();
  }

  private wake(): void {
    this.waker.wake();
  }

  private sleep(ms: number): Promise<void> {
    return this.stopped ? Promise.resolve() : this.waker.sleep(ms);
  }

  /**
   * Rounds until stopped. The outbox trigger notifies only for an event that finds no older one unpublished
   * as its transaction commits (the first of a run), so the relay owns every run it was woken for: after a
   * round that published something it goes round again (after `lingerMs`, at once after a full batch), and
   * after the first rounds that find nothing it looks twice more (an event that saw an older one waiting
   * but became visible only after the round that took that one had read). A commit made visible even later
   * than that (one waiting for a synchronous standby) is found by the poll.
   */
  private async loop(): Promise<void> {
    const backoff = new Backoff({ baseMs: 100, maxMs: 10_000 });
    const lingerMs = this.o.lingerMs ?? 100;
    let idleRounds = 0;
    while (!this.stopped) {
      try {
        const n = await this.relayOnce();
        backoff.reset();
        if (n >= this.batchSize) {
          idleRounds = 0;
        } else if (n > 0) {
          idleRounds = 0;
          await this.pause(lingerMs);
        } else if (++idleRounds <= 2) {
          await this.sleep(Math.max(lingerMs, 10) * idleRounds * 2);
        } else {
          await this.sleep(this.o.pollMs ?? 1000);
        }
      } catch (err) {
        if (this.stopped) break;
        this.o.logger.warn({ err: { message: (err as Error).message }, schema: this.o.schema }, 'outbox relay failed, retrying');
        await this.sleep(backoff.next());
      }
    }
  }

  /** A pause no notification cuts short (stop() does not wait for more than it). */
  private pause(ms: number): Promise<void> {
    return this.stopped || ms <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, ms));
  }

  /** One round: returns how many events were published (0 when another replica holds the relay lock). */
  async relayOnce(): Promise<number> {
    const client = await this.o.pool.connect();
    if (this.inDatabase) return this.relayInDatabase(client, this.inDatabase);
    try {
      // One round trip opens the round: the transaction, its advisory lock, the index-order setting and the read
      // (the schema is an identifier checked in the constructor, the batch size a number).
      const [, lock, , unsure, read] = (await client.query(this.opening)) as unknown as [
        unknown,
        pg.QueryResult<{ ok: boolean }>,
        unknown,
        pg.QueryResult<{ unsure_through: string }>,
        pg.QueryResult<OutboxRow>,
      ];
      if (!lock.rows[0]?.ok) {
        await client.query('ROLLBACK');
        return 0;
      }
      const rows = read.rows;
      if (rows.length > 0) {
        // Rows an earlier round may have sent before it failed go out flagged; then this round's highest sequence
        // number is recorded (committed now, on another connection) before anything is sent.
        const unsureThrough = BigInt(unsure.rows[0]?.unsure_through ?? 0);
        const last = rows[rows.length - 1]!.seq;
        if (BigInt(last) > unsureThrough) await this.o.pool.query(`UPDATE ${this.o.schema}.outbox_relay SET unsure_through = $1 WHERE unsure_through < $1`, [last]);
        // The rows are marked while the bus works on the publish: the mark is part of this transaction, which
        // commits only once both succeeded (a failed publish rolls it back), so a round costs the longer of
        // the two instead of their sum. allSettled: the transaction is rolled back only after the UPDATE
        // finished, whichever failed.
        const [published, marked] = await Promise.allSettled([
          this.o.bus.publish(
            this.topic,
            rows.map((r) => ({
              id: r.event_id,
              key: r.event_key,
              value: r.payload,
              ...(r.traceparent && { traceparent: r.traceparent }),
              ...(unsureThrough > 0n && BigInt(r.seq) <= unsureThrough && { mayRepeat: true }),
            })),
          ),
          // The array literal built directly: sequence numbers are digits only, nothing to escape.
          client.query(`UPDATE ${this.o.schema}.outbox SET published_at = now() WHERE seq = ANY($1::bigint[])`, [`{${rows.map((r) => r.seq).join(',')}}`]),
        ]);
        if (published.status === 'rejected') throw published.reason;
        if (marked.status === 'rejected') throw marked.reason;
      }
      await this.cleanup(client);
      await client.query('COMMIT');
      if (this.o.metrics && rows.length > 0) relayedCounter(this.o.metrics).inc({ schema: this.o.schema }, rows.length);
      return rows.length;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * A round on a bus in the outbox's own database (the Postgres bus on the service's database): one statement
   * takes the oldest unpublished rows out of the outbox and publishes them, and the transaction commits both
   * or neither, so no record is ever published twice and none travels to the relay and back. Rows an earlier
   * round on another bus may have sent (at or below `unsure_through`) still go out flagged.
   */
  private async relayInDatabase(client: PoolClient, bus: InDatabasePublishing): Promise<number> {
    try {
      const results = (await client.query(`BEGIN; ${INDEX_ORDER_ONLY}; ${bus.statement(this.topic, this.takeRows)}; COMMIT`)) as unknown as pg.QueryResult[];
      const n = Number((results[2] as pg.QueryResult<{ n: string }>).rows[0]?.n ?? 0);
      // After the commit: a failed clean-up does not make the round (already published) look failed.
      await this.cleanup(client).catch((err: Error) => this.o.logger.warn({ err: { message: err.message }, schema: this.o.schema }, 'outbox clean-up failed'));
      if (this.o.metrics && n > 0) relayedCounter(this.o.metrics).inc({ schema: this.o.schema }, n);
      return n;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** Publishes until nothing is left (tests and shutdown). */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.relayOnce();
      total += n;
      if (n < this.batchSize) return total;
    }
  }

  /** Deletes rows published more than keepPublishedMs ago (once a minute). */
  private async cleanup(client: PoolClient): Promise<void> {
    if (Date.now() - this.lastCleanup < 60_000) return;
    this.lastCleanup = Date.now();
    await client.query(
      `DELETE FROM ${this.o.schema}.outbox WHERE published_at < now() - make_interval(secs => $1::double precision / 1000)`,
      [this.o.keepPublishedMs ?? 86_400_000],
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.running;
    await this.listener?.stop();
  }
}

/**
 * A producing service's relay on the configured bus (see busConfig): started, and closed in order (the relay
 * finishes its round, then the bus connection goes). Events still unpublished at shutdown go out at the
 * next start.
 */
export async function startServiceOutboxRelay(o: {
  config: BusSettings;
  pool: Pool;
  schema: string;
  logger: Logger;
  metrics?: Metrics;
}): Promise<{ close: () => Promise<void> }> {
  const bus = await createEventBus(o.config, o.logger, o.schema, o.metrics && { metrics: o.metrics, pool: 'bus_publish' });
  const relay = new OutboxRelay({ pool: o.pool, databaseUrl: o.config.DATABASE_URL, schema: o.schema, bus, logger: o.logger, metrics: o.metrics });
  await relay.start();
  return {
    close: async () => {
      await relay.stop();
      await bus.close();
    },
  };
}
