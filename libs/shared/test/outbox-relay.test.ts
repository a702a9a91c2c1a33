import pg from 'pg';
import { createPool } from '../src/db';
import { createLogger } from '../src/logger';
import { appendEvent, appendEvents, outboxDdl } from '../src/outbox';
import { requestContext } from '../src/context';
import { INDEX_ORDER_ONLY, OutboxRelay, takeRowsQuery, unpublishedQuery } from '../src/outbox-relay';
import { createPostgresBus } from '../src/bus/postgres';
import type { BusRecord, EventBus } from '../src/bus/port';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';

const logger = createLogger('relay-test', 'silent');
let db: TestDatabase;
let pool: pg.Pool;
let bus: EventBus;

beforeAll(async () => {
  db = await testDatabase();
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  await c.query(outboxDdl('svc'));
  await c.end();
  pool = createPool(db.url, 4, logger, 'svc');
  bus = await createPostgresBus({ url: db.url, logger, pollMs: 100 });
}, 60_000);
afterAll(async () => {
  await bus.close();
  await pool.end();
  await db.drop();
  await stopTestPostgres();
});
afterEach(async () => void (await pool.query('TRUNCATE outbox')));

const event = (actor: string) => ({
  environment: 'live',
  type: 'user.updated',
  actor: { id: actor, type: 'api_key' },
  context: { ip: '127.0.0.1', userAgent: 'jest' },
  result: 'success' as const,
  traceId: 'req_test',
});

async function consume(topic: string, group: string, count: number): Promise<BusRecord[]> {
  const got: BusRecord[] = [];
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const sub = await bus.subscribe({ topic, group, maxWaitMs: 0 }, async (batch) => {
    got.push(...batch);
    if (got.length >= count) done();
  });
  const timer = setTimeout(done, 15_000);
  await finished;
  clearTimeout(timer);
  await sub.stop();
  return got;
}

/** The same bus without InDatabasePublishing: the relay reads the rows and publishes them (as on Kafka). */
const viaRelay = (b: EventBus): EventBus => ({ kind: b.kind, publish: (t, r) => b.publish(t, r), subscribe: (o, h) => b.subscribe(o, h), close: async () => undefined });
/** Both ways a round publishes: on the server (the Postgres bus in the outbox's database) and through the relay. */
const BOTH_WAYS: Array<[string, () => EventBus]> = [
  ['on the server', () => bus],
  ['through the relay', () => viaRelay(bus)],
];

test.each(BOTH_WAYS)('events written to the outbox reach the bus promptly, as the AuthEvent JSON, keyed by actor (%s)', async (way, busOf) => {
  const topic = `relay-1-${way.replace(/ /g, '-')}`;
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus: busOf(), logger, topic, pollMs: 60_000 });
  await relay.start();
  try {
    // The relay sleeps up to a minute between polls: only the outbox trigger's notification can wake it.
    await new Promise((r) => setTimeout(r, 200));
    const ids = [await appendEvent(pool, event('key_a')), await appendEvent(pool, event('key_b'))];
    const got = await consume(topic, 'g', 2);
    expect(got.map((r) => r.id)).toEqual(ids);
    expect(got.map((r) => r.key)).toEqual(['key_a', 'key_b']);
    const value = JSON.parse(got[0]!.value);
    expect(value).toMatchObject({ id: ids[0], type: 'user.updated', environment: 'live', actor: { id: 'key_a', type: 'api_key' }, result: 'success' });
    // The rows are marked in the relay's transaction, which commits only after the bus acknowledged: a consumer
    // can see the records a moment before that commit.
    let unpublished = -1;
    for (const deadline = Date.now() + 5_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      unpublished = (await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n;
      if (unpublished === 0) break;
    }
    expect(unpublished).toBe(0);
  } finally {
    await relay.stop();
  }
});

test('only the first event of a run notifies, on the schema\'s own channel; the relay takes the rest of a burst without polling', async () => {
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  const notified: string[] = [];
  listener.on('notification', (n) => notified.push(`${n.channel}:${n.payload}`));
  await listener.query('LISTEN secsvc_outbox_svc');
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus, logger, topic: 'relay-burst', pollMs: 60_000 });
  await relay.start();
  try {
    await new Promise((r) => setTimeout(r, 300));
    // 3 bursts of 40 events from 4 connections at once, 150 ms apart; the relay polls once a minute.
    const ids: string[] = [];
    for (let burst = 0; burst < 3; burst++) {
      ids.push(...(await Promise.all(Array.from({ length: 40 }, (_, i) => appendEvent(pool, event(`key_${burst}_${i}`))))));
      await new Promise((r) => setTimeout(r, 150));
    }
    const got = await consume('relay-burst', 'g', ids.length);
    expect(got.map((r) => r.id).sort()).toEqual([...ids].sort());
    // Each event committed while none older waited notifies; the others find the relay at work.
    expect(notified.length).toBeGreaterThanOrEqual(1);
    expect(notified.length).toBeLessThan(ids.length / 2);
    expect(new Set(notified)).toEqual(new Set(['secsvc_outbox_svc:svc']));
  } finally {
    await relay.stop();
    await listener.end();
  }
});

test('an event committed while the round that took an older one is publishing it is not notified, and still goes out without a poll', async () => {
  // The bus holds the first publish until the late event has committed: the late event's trigger sees the
  // older one unpublished, so nothing wakes the relay for it; the round after a non-empty one finds it.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let publishing!: () => void;
  const publishStarted = new Promise<void>((r) => (publishing = r));
  const gated: EventBus = {
    kind: 'postgres',
    publish: async (topic, records) => {
      publishing();
      await held;
      return bus.publish(topic, records);
    },
    subscribe: (o, h) => bus.subscribe(o, h),
    close: async () => undefined,
  };
  const listener = new pg.Client({ connectionString: db.url });
  await listener.connect();
  let notifications = 0;
  listener.on('notification', () => notifications++);
  await listener.query('LISTEN secsvc_outbox_svc');
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus: gated, logger, topic: 'relay-late', pollMs: 60_000 });
  await relay.start();
  try {
    await new Promise((r) => setTimeout(r, 300));
    const first = await appendEvent(pool, event('key_first'));
    await publishStarted;
    // The first event's notification reaches this listener on a connection of its own: waited for, so a busy
    // machine delivering it late does not read as the late event's.
    for (const deadline = Date.now() + 10_000; notifications === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 10));
    expect(notifications).toBe(1);
    const late = await appendEvent(pool, event('key_late'));
    await new Promise((r) => setTimeout(r, 300));
    expect(notifications).toBe(1);
    release();
    const got = await consume('relay-late', 'g', 2);
    expect(got.map((r) => r.id)).toEqual([first, late]);
    expect(notifications).toBe(1);
  } finally {
    release();
    await relay.stop();
    await listener.end();
  }
});

test.each(BOTH_WAYS)('an event keeps the traceparent of the span that wrote it (same trace) on the way to the bus; none outside a trace (%s)', async (way, busOf) => {
  const topic = `relay-trace-${way.replace(/ /g, '-')}`;
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const span = { traceId, spanId: 'b7ad6b7169203331', traceFlags: 1 };
  const inTrace = await requestContext.run({ trace: span }, () => appendEvent(pool, { ...event('key_t'), traceId }));
  // A context of another trace (a queued job replaying an older request's event) is not the event's parent.
  const otherTrace = await requestContext.run({ trace: { ...span, traceId: 'f'.repeat(32) } }, () => appendEvent(pool, { ...event('key_t'), traceId }));
  const outside = await appendEvent(pool, event('key_t'));
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus: busOf(), logger, topic });
  await relay.drain();
  const got = await consume(topic, 'g', 3);
  expect(got.map((r) => [r.id, r.traceparent])).toEqual([
    [inTrace, `00-${traceId}-b7ad6b7169203331-01`],
    [otherTrace, undefined],
    [outside, undefined],
  ]);
  expect(JSON.parse(got[0]!.value).traceId).toBe(traceId);
});

test('a crash after the bus acknowledged but before the outbox was marked republishes: duplicates, never loss', async () => {
  let crash = true;
  const crashing: EventBus = {
    kind: 'postgres',
    publish: async (topic, records) => {
      await bus.publish(topic, records);
      if (crash) {
        crash = false;
        throw new Error('process died after publishing (test)');
      }
    },
    subscribe: (o, h) => bus.subscribe(o, h),
    close: async () => undefined,
  };
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await appendEvent(pool, event(`key_${i}`)));
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus: crashing, logger, topic: 'relay-2' });
  await expect(relay.relayOnce()).rejects.toThrow('process died');
  expect(await relay.drain()).toBe(3);
  const later = await appendEvent(pool, event('key_later'));
  expect(await relay.drain()).toBe(1);
  const got = await consume('relay-2', 'g', 7);
  expect(got.map((r) => r.id)).toEqual([...ids, ...ids, later]);
  // The second sending is flagged (its first may have reached the bus); the first sending and a later event,
  // whose rounds went well, are not.
  expect(got.map((r) => r.mayRepeat === true)).toEqual([false, false, false, true, true, true, false]);
  // Positions: partition 0, the topic's sequence numbers.
  expect(got.map((r) => r.position)).toEqual(got.map((_, i) => ({ partition: 0, offset: i + 1 })));
});

test('on a bus in its own database a round publishes on the server: no record passes through the relay, published rows leave the outbox, and a round takes and publishes all or nothing', async () => {
  // publish() must not be used: the bus's statement takes the rows on the server.
  const serverOnly: EventBus = { ...viaRelay(bus), inDatabase: bus.inDatabase, publish: () => Promise.reject(new Error('publish called (test)')) };
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus: serverOnly, logger, topic: 'relay-server' });
  const ids = [await appendEvent(pool, event('key_a')), await appendEvent(pool, event('key_b'))];
  expect(await relay.relayOnce()).toBe(2);
  // The bus's records hold them now: the outbox keeps no copy.
  expect((await pool.query('SELECT count(*)::int AS n FROM outbox WHERE event_id = ANY($1)', [ids])).rows[0].n).toBe(0);
  // A round that fails after taking its rows (here: the bus's insert refuses one record) leaves every row of it
  // unpublished and publishes none of them.
  await pool.query(`CREATE FUNCTION bus.refuse_boom() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.key = 'key_boom' THEN RAISE EXCEPTION 'refused (test)'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER refuse_boom BEFORE INSERT ON bus.bus_records FOR EACH ROW EXECUTE FUNCTION bus.refuse_boom()`);
  let failing: string[];
  try {
    failing = [await appendEvent(pool, event('key_c')), await appendEvent(pool, event('key_boom'))];
    await expect(relay.relayOnce()).rejects.toThrow('refused (test)');
    expect((await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n).toBe(2);
    expect((await pool.query("SELECT count(*)::int AS n FROM bus.bus_records WHERE topic = 'relay-server'")).rows[0].n).toBe(2);
  } finally {
    await pool.query('DROP TRIGGER refuse_boom ON bus.bus_records; DROP FUNCTION bus.refuse_boom()');
  }
  expect(await relay.drain()).toBe(2);
  // A relay on another database cannot take the rows on the server: it publishes them itself (which fails
  // here, after its round recorded them as maybe sent). Such rows then go out flagged.
  const doubtful = await appendEvent(pool, event('key_d'));
  const elsewhere = new OutboxRelay({ pool, databaseUrl: `${db.url}?application_name=elsewhere`, schema: 'svc', bus: serverOnly, logger, topic: 'relay-server' });
  await expect(elsewhere.relayOnce()).rejects.toThrow('publish called (test)');
  const after = await appendEvent(pool, event('key_e'));
  expect(await relay.drain()).toBe(2);
  const got = await consume('relay-server', 'g', 6);
  expect(got.map((r) => r.id)).toEqual([...ids, ...failing, doubtful, after]);
  expect(got.map((r) => r.mayRepeat === true)).toEqual([false, false, false, false, true, false]);
  expect(got.map((r) => r.position?.offset)).toEqual([1, 2, 3, 4, 5, 6]);
  expect(JSON.parse(got[0]!.value)).toMatchObject({ id: ids[0], actor: { id: 'key_a' } });
  expect((await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n).toBe(0);
  expect((await pool.query('SELECT count(*)::int AS n FROM outbox WHERE event_id = ANY($1)', [got.map((r) => r.id)])).rows[0].n).toBe(0);
  await pool.query('UPDATE outbox_relay SET unsure_through = 0');
});

test.each([
  ['on the server (deleted)', 'DELETE FROM outbox WHERE published_at IS NULL'],
  ['to another bus (marked)', 'UPDATE outbox SET published_at = now() WHERE published_at IS NULL'],
])("a round on the server that gets the lock just after another replica's round committed does not publish that round's rows again: replica's round %s", async (_, take) => {
  for (let i = 0; i < 3; i++) await appendEvent(pool, event(`key_${i}`));
  const a = await pool.connect();
  const b = await pool.connect();
  try {
    // Replica A's round, not committed yet: it holds the relay lock and has taken the rows.
    await a.query('BEGIN');
    await a.query("SELECT pg_advisory_xact_lock(hashtext('secsvc:outbox:svc'))");
    await a.query(take);
    // Replica B's statement takes its snapshot now, when the rows still look unpublished, and asks for the lock
    // half a second later, after A committed (the sleep widens what is otherwise a window of microseconds).
    const lock = "pg_sleep(0.5) IS NOT NULL AND pg_try_advisory_xact_lock(hashtext('secsvc:outbox:svc'))";
    const racing = b.query(`BEGIN; ${bus.inDatabase!.statement('relay-race', takeRowsQuery('svc', 100, lock))}; COMMIT`);
    await new Promise((r) => setTimeout(r, 150));
    await a.query('COMMIT');
    const results = (await racing) as unknown as Array<pg.QueryResult<{ n: string }>>;
    expect(Number(results[1]!.rows[0]!.n)).toBe(0);
    expect((await pool.query("SELECT count(*)::int AS n FROM bus.bus_records WHERE topic = 'relay-race'")).rows[0].n).toBe(0);
  } finally {
    a.release();
    b.release();
  }
});

test('events appended together in one statement are rows of their own, in order, relayed like any', async () => {
  const ids = await appendEvents(pool, [event('key_a'), event('key_b'), event('key_c')]);
  expect(new Set(ids).size).toBe(3);
  const { rows } = await pool.query<{ event_id: string; event_key: string }>('SELECT event_id, event_key FROM outbox ORDER BY seq');
  expect(rows).toEqual([
    { event_id: ids[0], event_key: 'key_a' },
    { event_id: ids[1], event_key: 'key_b' },
    { event_id: ids[2], event_key: 'key_c' },
  ]);
  expect(await appendEvents(pool, [])).toEqual([]);
  await expect(appendEvents(pool, Array.from({ length: 1001 }, () => event('key_x')))).rejects.toThrow('at most 1,000');
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus, logger, topic: 'relay-many' });
  expect(await relay.drain()).toBe(3);
  expect((await consume('relay-many', 'g', 3)).map((r) => r.id)).toEqual(ids);
});

test('two relays on one outbox: every event goes out, in outbox order, and only once', async () => {
  const relays = [1, 2].map(() => new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus, logger, topic: 'relay-3', batchSize: 7, pollMs: 50 }));
  await Promise.all(relays.map((r) => r.start()));
  try {
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push(await appendEvent(pool, event('key_same')));
    const got = await consume('relay-3', 'g', 60);
    expect(got.map((r) => r.id)).toEqual(ids);
  } finally {
    await Promise.all(relays.map((r) => r.stop()));
  }
});

test('a bus that is down delays relaying; the events go out once it is back', async () => {
  let down = true;
  const flaky: EventBus = {
    kind: 'postgres',
    publish: async (topic, records) => {
      if (down) throw new Error('bus unreachable (test)');
      await bus.publish(topic, records);
    },
    subscribe: (o, h) => bus.subscribe(o, h),
    close: async () => undefined,
  };
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus: flaky, logger, topic: 'relay-4', pollMs: 50 });
  await relay.start();
  try {
    const id = await appendEvent(pool, event('key_x'));
    await new Promise((r) => setTimeout(r, 300));
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL');
    expect(rows[0].n).toBe(1);
    down = false;
    const got = await consume('relay-4', 'g', 1);
    expect(got.map((r) => r.id)).toEqual([id]);
  } finally {
    await relay.stop();
  }
});

test('a backlog in a table without planner statistics is read by walking the unpublished index, never sorted', async () => {
  // A freshly filled outbox that was never analyzed (as after a burst, or a bus outage, before autovacuum
  // gets to it): PostgreSQL guesses a few hundred unpublished rows and would rather sort the whole backlog
  // than walk the index.
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    await c.query(outboxDdl('svc_backlog'));
    await c.query(
      `INSERT INTO svc_backlog.outbox (event_id, environment, event_type, event_key, payload)
       SELECT 'log_' || md5(g::text), 'live', 'user.updated', 'key_' || (g % 50), '{"id":"x"}'::jsonb FROM generate_series(1, 20000) g`,
    );
    await c.query('BEGIN');
    await c.query(INDEX_ORDER_ONLY);
    // As the relay reads: only while holding the relay lock (a subquery evaluated once).
    const read = unpublishedQuery('svc_backlog', '$1', "(SELECT pg_try_advisory_xact_lock(hashtext('secsvc:outbox:svc_backlog')))");
    const { rows } = await c.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${read}`, [500]);
    await c.query('ROLLBACK');
    const plan = JSON.stringify(rows[0]!['QUERY PLAN']);
    expect(plan).toContain('"Index Name":"outbox_unpublished"');
    expect(plan).toContain('"Node Type":"Index Scan"');
    expect(plan).not.toContain('"Node Type":"Sort"');
    // A round holds one connection and records its range on a second (OutboxRelayOptions.pool).
    const backlogPool = createPool(db.url, 2, logger, 'svc_backlog');
    try {
      const relay = new OutboxRelay({ pool: backlogPool, databaseUrl: db.url, schema: 'svc_backlog', bus, logger, topic: 'relay-5', batchSize: 500 });
      const first = await c.query<{ event_id: string }>('SELECT event_id FROM svc_backlog.outbox ORDER BY seq LIMIT 500');
      expect(await relay.relayOnce()).toBe(500);
      const got = await consume('relay-5', 'g', 500);
      expect(got.map((r) => r.id)).toEqual(first.rows.map((r) => r.event_id));
    } finally {
      await backlogPool.end();
    }
  } finally {
    await c.query('DROP SCHEMA svc_backlog CASCADE');
    await c.end();
  }
});
