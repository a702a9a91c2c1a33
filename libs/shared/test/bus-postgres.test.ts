import { createLogger } from '../src/logger';
import pg from 'pg';
import { busReadQuery, createPostgresBus, SUBSCRIBER_SESSION_OPTIONS } from '../src/bus/postgres';
import type { EventBus } from '../src/bus/port';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';
import { describeBusContract } from './bus-contract';

const logger = createLogger('bus-test', 'silent');
let db: TestDatabase;

beforeAll(async () => {
  db = await testDatabase();
}, 60_000);
afterAll(async () => {
  await db.drop();
  await stopTestPostgres();
});

describeBusContract('Postgres', () => createPostgresBus({ url: db.url, logger, pollMs: 200 }));

describe('Postgres event bus', () => {
  const buses: EventBus[] = [];
  afterEach(async () => void (await Promise.all(buses.splice(0).map((b) => b.close()))));
  const bus = async () => {
    const b = await createPostgresBus({ url: db.url, logger, pollMs: 100 });
    buses.push(b);
    return b;
  };

  test('stopping ends the wait for a partial batch to fill, without handing it over', async () => {
    const b = await bus();
    const got: string[][] = [];
    const sub = await b.subscribe({ topic: 'stop-wait', group: 'g', maxWaitMs: 30_000 }, async (batch) => void got.push(batch.map((r) => r.id)));
    await b.publish('stop-wait', [{ id: 'log_a', key: 'k', value: '{}' }]);
    for (const deadline = Date.now() + 10_000; got.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    // The next record waits for the rest of the 30 s; stop() does not.
    await b.publish('stop-wait', [{ id: 'log_b', key: 'k', value: '{}' }]);
    await new Promise((r) => setTimeout(r, 300));
    const started = Date.now();
    await sub.stop();
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(got).toEqual([['log_a']]);
  }, 60_000);

  test('one member of a group is active; a standby takes over where the active one stopped', async () => {
    const [b1, b2] = [await bus(), await bus()];
    const seen: Array<[string, string]> = [];
    const s1 = await b1.subscribe({ topic: 'failover', group: 'g', maxWaitMs: 0 }, async (batch) => void seen.push(...batch.map((r) => ['b1', r.id] as [string, string])));
    await b1.publish('failover', [{ id: 'e1', key: 'k', value: '1' }]);
    await waitFor(() => seen.length === 1);
    const s2 = await b2.subscribe({ topic: 'failover', group: 'g', maxWaitMs: 0 }, async (batch) => void seen.push(...batch.map((r) => ['b2', r.id] as [string, string])));
    await b1.publish('failover', [{ id: 'e2', key: 'k', value: '2' }]);
    await waitFor(() => seen.length === 2);
    expect(seen).toEqual([['b1', 'e1'], ['b1', 'e2']]);
    await s1.stop();
    await b1.publish('failover', [{ id: 'e3', key: 'k', value: '3' }]);
    await waitFor(() => seen.length === 3);
    expect(seen[2]).toEqual(['b2', 'e3']);
    await s2.stop();
  }, 30_000);

  test('concurrent publishers: the consumer sees every record exactly once and in per-publisher order', async () => {
    const b = await bus();
    const publishers = Array.from({ length: 8 }, (_, p) =>
      (async () => {
        for (let i = 0; i < 25; i++) await b.publish('race', [{ id: `p${p}-${i}`, key: `p${p}`, value: '' }]);
      })(),
    );
    const got: string[] = [];
    const sub = await b.subscribe({ topic: 'race', group: 'g', maxBatchSize: 7, maxWaitMs: 0 }, async (batch) => void got.push(...batch.map((r) => r.id)));
    await Promise.all(publishers);
    await waitFor(() => got.length >= 200);
    await sub.stop();
    expect(got).toHaveLength(200);
    expect(new Set(got).size).toBe(200);
    for (let p = 0; p < 8; p++) {
      const mine = got.filter((id) => id.startsWith(`p${p}-`));
      expect(mine).toEqual(Array.from({ length: 25 }, (_, i) => `p${p}-${i}`));
    }
  }, 30_000);

  test('retention deletes only records every group has consumed', async () => {
    const b = await createPostgresBus({ url: db.url, logger, pollMs: 50, retentionMs: 0, pruneIntervalMs: 50 });
    buses.push(b);
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const left = async () => Number((await client.query(`SELECT count(*) AS n FROM bus.bus_records WHERE topic = 'ret'`)).rows[0].n);
    try {
      // Group "slow" exists (position 0) but consumes nothing yet: it pins the records.
      await client.query(`INSERT INTO bus.bus_offsets (topic, grp, seq) VALUES ('ret', 'slow', 0)`);
      await b.publish('ret', [{ id: 'r1', key: 'k', value: '' }, { id: 'r2', key: 'k', value: '' }]);
      const got: string[] = [];
      const fast = await b.subscribe({ topic: 'ret', group: 'fast', maxWaitMs: 0 }, async (batch) => void got.push(...batch.map((r) => r.id)));
      await waitFor(() => got.length === 2);
      await new Promise((r) => setTimeout(r, 400)); // several prune rounds of the active member
      expect(await left()).toBe(2);
      const slowGot: string[] = [];
      const slow = await b.subscribe({ topic: 'ret', group: 'slow', maxWaitMs: 0 }, async (batch) => void slowGot.push(...batch.map((r) => r.id)));
      await waitFor(() => slowGot.length === 2);
      expect(slowGot).toEqual(['r1', 'r2']);
      const until = Date.now() + 10_000;
      while ((await left()) > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(await left()).toBe(0);
      await fast.stop();
      await slow.stop();
    } finally {
      await client.end();
    }
  }, 30_000);
});

test('a backlog in a table without planner statistics is read by walking the primary key, never sorted', async () => {
  // A fresh database whose records table was never analyzed (as after a burst or a consumer outage, before
  // autovacuum gets to it): PostgreSQL guesses a few hundred records past the position.
  const fresh = await testDatabase();
  const b = await createPostgresBus({ url: fresh.url, logger });
  const plain = new pg.Client({ connectionString: fresh.url, options: '-c search_path=bus' });
  const subscriber = new pg.Client({ connectionString: fresh.url, options: SUBSCRIBER_SESSION_OPTIONS });
  try {
    await plain.connect();
    await subscriber.connect();
    await plain.query('ALTER TABLE bus_records SET (autovacuum_enabled = false)');
    const records = Array.from({ length: 1000 }, (_, i) => ({ id: `log_${i}`, key: `k${i % 7}`, value: `{"n":${i}}` }));
    for (let i = 0; i < 20; i++) await b.publish('backlog', records);
    await plain.query(`INSERT INTO bus_offsets (topic, grp, seq) VALUES ('backlog', 'g', 0)`);
    const plan = async (c: pg.Client, sql: string, params: unknown[]) =>
      JSON.stringify((await c.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${sql}`, params)).rows[0]!['QUERY PLAN']);
    // What the setting prevents: every record past the position taken and sorted to keep one batch.
    expect(await plan(plain, busReadQuery('after'), ['backlog', '0', 5000])).toContain('"Node Type":"Sort"');
    for (const [sql, params] of [[busReadQuery('after'), ['backlog', '0', 5000]], [busReadQuery('saved'), ['backlog', 'g', 5000]]] as const) {
      const walked = await plan(subscriber, sql, [...params]);
      expect(walked).toContain('"Index Name":"bus_records_pkey"');
      expect(walked).toContain('"Node Type":"Index Scan"');
      expect(walked).not.toContain('"Node Type":"Sort"');
    }
    // And a subscription reads the backlog in order through that session.
    const got: string[] = [];
    const sub = await b.subscribe({ topic: 'backlog', group: 'g', maxBatchSize: 5000, maxWaitMs: 0 }, async (batch) => void got.push(...batch.map((r) => r.value)));
    await waitFor(() => got.length === 20_000);
    await sub.stop();
    expect(got.slice(0, 3)).toEqual(['{"n":0}', '{"n":1}', '{"n":2}']);
    expect(got.at(-1)).toBe('{"n":999}');
  } finally {
    await plain.end();
    await subscriber.end();
    await b.close();
    await fresh.drop();
  }
}, 60_000);

async function waitFor(cond: () => boolean, ms = 15_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
