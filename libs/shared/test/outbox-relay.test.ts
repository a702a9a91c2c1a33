import pg from 'pg';
import { createPool } from '../src/db';
import { createLogger } from '../src/logger';
import { appendEvent, outboxDdl } from '../src/outbox';
import { OutboxRelay } from '../src/outbox-relay';
import { createPostgresBus } from '../src/bus/postgres';
import type { BusRecord, EventBus } from '../src/bus/port';
import { stopTestPostgres, testDatabase, type TestDatabase } from '../src/testing';

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

test('events written to the outbox reach the bus promptly, as the AuthEvent JSON, keyed by actor', async () => {
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus, logger, topic: 'relay-1', pollMs: 60_000 });
  await relay.start();
  try {
    // The relay sleeps up to a minute between polls: only the outbox trigger's notification can wake it.
    await new Promise((r) => setTimeout(r, 200));
    const ids = [await appendEvent(pool, event('key_a')), await appendEvent(pool, event('key_b'))];
    const got = await consume('relay-1', 'g', 2);
    expect(got.map((r) => r.id)).toEqual(ids);
    expect(got.map((r) => r.key)).toEqual(['key_a', 'key_b']);
    const value = JSON.parse(got[0]!.value);
    expect(value).toMatchObject({ id: ids[0], type: 'user.updated', environment: 'live', actor: { id: 'key_a', type: 'api_key' }, result: 'success' });
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL');
    expect(rows[0].n).toBe(0);
  } finally {
    await relay.stop();
  }
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
  const got = await consume('relay-2', 'g', 6);
  expect(got.map((r) => r.id)).toEqual([...ids, ...ids]);
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
