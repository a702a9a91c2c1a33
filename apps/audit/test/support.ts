import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { GeoIp, LogStore, migrateClickHouse, openClickHouse } from '@secsvc/audit-store';
import { createLogger, createPool, OutboxRelay, outboxDdl, type appendEvent, type EventBus } from '@secsvc/shared';
import { stopTestPostgres, testDatabase } from '@secsvc/dev/testing';

/** Waits until `cond` holds (polling every 50 ms), or fails after `ms`. */
export async function until(cond: () => Promise<boolean>, ms = 30_000, state?: () => Promise<unknown>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`condition not met in time${state ? ` (${JSON.stringify(await state())})` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The i-th test event: alternating kinds, seven actors, a London address. */
export const eventInput = (i: number, over: Partial<Parameters<typeof appendEvent>[1]> = {}): Parameters<typeof appendEvent>[1] => ({
  environment: 'live',
  type: i % 2 ? 'user.login' : 'user.updated',
  actor: { id: `user_${i % 7}`, email: `person${i % 7}@example.com`, type: 'user' },
  target: { id: `ses_${i}`, type: 'session' },
  context: { ip: '81.2.69.142', userAgent: 'jest' },
  result: 'success',
  traceId: `req_${i}`,
  authMethod: 'password',
  ...over,
});

/**
 * What both pipeline suites need: a fresh database with the producing service's outbox (schema svc), a pool on
 * it, embedded ClickHouse with the audit schema in a temp dir, the GeoIP database, and an outbox relay on the
 * bus `makeBus` returns for the database URL. close() stops and deletes all of it.
 */
export async function startPipeline(makeBus: (databaseUrl: string) => Promise<EventBus>) {
  const logger = createLogger('audit-test', process.env.TEST_LOG_LEVEL ?? 'silent');
  const db = await testDatabase();
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  await c.query(outboxDdl('svc'));
  await c.end();
  const pool = createPool(db.url, 6, logger, 'svc');
  const chDir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-audit-'));
  const ch = await openClickHouse({ path: chDir });
  await migrateClickHouse(ch);
  const bus = await makeBus(db.url);
  const relay = new OutboxRelay({ pool, databaseUrl: db.url, schema: 'svc', bus, logger, pollMs: 100 });
  await relay.start();
  return {
    logger,
    db,
    pool,
    ch,
    store: new LogStore(ch),
    bus,
    relay,
    geo: await GeoIp.open(),
    close: async () => {
      await relay.stop();
      await bus.close();
      await pool.end();
      await ch.close();
      await rm(chDir, { recursive: true, force: true });
      await db.drop();
      await stopTestPostgres();
    },
  };
}

/**
 * A store whose first `failures` inserts succeed and then throw, as a consumer that dies after ClickHouse
 * took the batch but before the bus moved its position. `calls()` counts every insert.
 */
export function storeDyingAfterInsert(store: LogStore, failures = 2): { store: LogStore; calls: () => number } {
  let calls = 0;
  const crashing = Object.create(store) as LogStore;
  crashing.insertEntries = async (entries) => {
    const n = await store.insertEntries(entries);
    if (calls++ < failures) throw new Error('consumer died after the insert (test)');
    return n;
  };
  return { store: crashing, calls: () => calls };
}
