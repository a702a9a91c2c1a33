import type pg from 'pg';
import { events } from '@secsvc/proto';
import type { ClickHouseClient, GeoIp, LogStore } from '@secsvc/audit-store';
import {
  AUTH_EVENTS_TOPIC,
  appendEvent,
  createLogger,
  createPostgresBus,
  Metrics,
  parseMetricsText,
  withTransaction,
  type EventBus,
  type Logger,
  type Subscription,
} from '@secsvc/shared';
import { startConsumer } from '../src/consumer';
import { eventInput as event, startPipeline, storeDyingAfterInsert, until } from './support';
import type { AuditContext } from '../src/context';
import { getLog } from '../src/rpc/get-log';
import { listLogs } from '../src/rpc/list-logs';

const SECRET = 'test-secret-test-secret-test-secret-0123';
let pipeline: Awaited<ReturnType<typeof startPipeline>>;
let logger: Logger;
let pool: pg.Pool;
let ch: ClickHouseClient;
let store: LogStore;
let bus: EventBus;
let geo: GeoIp;
let ctx: AuditContext;

beforeAll(async () => {
  pipeline = await startPipeline((url) => createPostgresBus({ url, logger: createLogger('audit-test', 'silent'), pollMs: 100 }));
  ({ logger, pool, ch, store, bus, geo } = pipeline);
  ctx = { store, secret: SECRET, logger };
}, 60_000);
afterAll(async () => {
  await pipeline?.close();
});

const count = async () => (await store.count({ environment: 'live' })) + (await store.count({ environment: 'test' }));
describe('outbox → Postgres bus → consumer → ClickHouse', () => {
  let consumer: Subscription | undefined;
  afterEach(async () => {
    await consumer?.stop();
    consumer = undefined;
    await ch.command({ query: 'TRUNCATE TABLE audit_logs' });
  });

  test('every committed event lands exactly once, with its location; rolled-back ones never do', async () => {
    const metrics = new Metrics('audit-test');
    consumer = await startConsumer({ bus, store, geo, logger, metrics, maxBatchSize: 100, maxWaitMs: 20 });
    const ids: string[] = [];
    for (let b = 0; b < 10; b++) {
      await withTransaction(pool, async (tx) => {
        for (let i = 0; i < 50; i++) ids.push(await appendEvent(tx, event(b * 50 + i)));
      });
    }
    await expect(
      withTransaction(pool, async (tx) => {
        await appendEvent(tx, event(9999, { traceId: 'req_rolled_back' }));
        throw new Error('the change failed (test)');
      }),
    ).rejects.toThrow('the change failed');
    await until(async () => (await count()) >= 500);
    await new Promise((r) => setTimeout(r, 300));
    expect(await count()).toBe(500);
    const london = await store.get('live', ids[0]!);
    expect(london).toMatchObject({ city: 'London', country: 'GB', region: 'England', actor_email: 'person0@example.com', event: 'user.updated' });
    expect(JSON.parse(london!.metadata)).toEqual({ authMethod: 'password', mfaUsed: false });
    expect(await metrics.registry.getSingleMetricAsString('audit_events_stored_total')).toContain('audit_events_stored_total{service="audit-test"} 500');
    // everything published was consumed: no lag
    expect(parseMetricsText(await metrics.registry.metrics())).toContainEqual({ name: 'bus_consumer_lag_events', labels: { topic: AUTH_EVENTS_TOPIC, group: 'audit', service: 'audit-test' }, value: 0 });
  }, 60_000);

  test('a consumer that dies after inserting but before its position moved: the batch comes again, still once in the log', async () => {
    // The first two batches are stored but "the process dies" before the position is committed.
    const { store: crashing, calls } = storeDyingAfterInsert(store);
    consumer = await startConsumer({ bus, store: crashing, geo, logger, maxBatchSize: 40, maxWaitMs: 20 });
    for (let i = 0; i < 120; i++) await appendEvent(pool, event(i));
    await until(async () => (await count()) >= 120 && calls() > 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(await count()).toBe(120);
    const ids = (await ch.query({ query: 'SELECT id, count() AS n FROM audit_logs GROUP BY id HAVING n > 1', format: 'JSONEachRow' })).json();
    expect(await ids).toEqual([]);
  }, 60_000);

  test('a malformed record is skipped and the events after it still arrive; private addresses get no location', async () => {
    consumer = await startConsumer({ bus, store, geo, logger, maxBatchSize: 100, maxWaitMs: 20 });
    await bus.publish(AUTH_EVENTS_TOPIC, [
      { id: 'garbage', key: 'k', value: '{not json' },
      { id: 'noid', key: 'k', value: JSON.stringify({ type: 'user.login' }) },
    ]);
    const id = await appendEvent(pool, event(1, { context: { ip: '10.0.0.7', userAgent: 'jest' } }));
    await until(async () => (await count()) >= 1);
    const row = await store.get('live', id);
    expect(row).toMatchObject({ ip: '10.0.0.7', city: '', country: '', lat: null, lng: null });
  }, 60_000);
});

describe('ListLogs and GetLog', () => {
  const ids: string[] = [];
  beforeAll(async () => {
    const consumer = await startConsumer({ bus, store, geo, logger, maxBatchSize: 100, maxWaitMs: 20 });
    for (let i = 0; i < 30; i++) ids.push(await appendEvent(pool, event(i, i === 29 ? { result: 'failure', actor: { type: 'anonymous' } } : {})));
    ids.push(await appendEvent(pool, event(100, { environment: 'test' })));
    await until(async () => (await count()) >= 31);
    await consumer.stop();
  }, 60_000);

  test('pages newest first through every entry with cursors; the other environment is invisible', async () => {
    const seen: string[] = [];
    let cursor = '';
    for (let page = 0; page < 10; page++) {
      const res = await listLogs(ctx)({ environment: 'live', limit: 7, cursor, events: [], actorId: '', result: '' });
      seen.push(...res.entries.map((e) => e.event!.id));
      if (!res.hasMore) break;
      cursor = res.nextCursor;
    }
    expect(seen).toEqual(ids.slice(0, 30).reverse());
    const test = await listLogs(ctx)({ environment: 'test', limit: 100, cursor: '', events: [], actorId: '', result: '' });
    expect(test.entries.map((e) => e.event!.id)).toEqual([ids[30]]);
  });

  test('filters: event kinds, actor, result, time window', async () => {
    const list = (over: Partial<Parameters<ReturnType<typeof listLogs>>[0]>) =>
      listLogs(ctx)({ environment: 'live', limit: 100, cursor: '', events: [], actorId: '', result: '', ...over }).then((r) => r.entries.map((e) => e.event!));
    expect((await list({ events: ['user.login'] })).every((e) => e.type === 'user.login')).toBe(true);
    expect(await list({ events: ['user.login'] })).toHaveLength(15);
    expect(await list({ events: ['user.login', 'user.updated'] })).toHaveLength(30);
    expect((await list({ actorId: 'user_3' })).map((e) => e.actor!.id)).toEqual(['user_3', 'user_3', 'user_3', 'user_3']);
    expect((await list({ result: 'failure' })).map((e) => e.id)).toEqual([ids[29]]);
    const all = await list({});
    const mid = all[10]!.timestamp!;
    expect((await list({ to: mid })).every((e) => e.timestamp! < mid)).toBe(true);
    expect((await list({ from: mid })).every((e) => e.timestamp! >= mid)).toBe(true);
  });

  test('bad filters are 400s naming the field', async () => {
    const call = (over: object) => listLogs(ctx)({ environment: 'live', limit: 10, cursor: '', events: [], actorId: '', result: '', ...over });
    await expect(call({ events: ['login'] })).rejects.toMatchObject({ code: 'invalid_request', details: [{ field: 'events[0]' }] });
    await expect(call({ result: 'maybe' })).rejects.toMatchObject({ details: [{ field: 'result' }] });
    await expect(call({ from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z' })).rejects.toMatchObject({ details: [{ field: 'to' }] });
    await expect(call({ limit: 0 })).rejects.toMatchObject({ details: [{ field: 'limit' }] });
    await expect(call({ cursor: 'cur_forged' })).rejects.toMatchObject({ details: [{ field: 'cursor' }] });
    // every fault at once; a kind the product does not emit is refused like a malformed one
    await expect(call({ events: ['user.login', 'user.nonsense'], from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z', result: 'maybe' })).rejects.toMatchObject({
      details: [{ field: 'events[1]' }, { field: 'to' }, { field: 'result' }],
    });
  });

  test('GetLog returns the full entry; unknown, malformed and other-environment ids are 404', async () => {
    const entry = await getLog(ctx)({ environment: 'live', id: ids[0]! });
    expect(entry.event).toMatchObject({ id: ids[0], type: 'user.updated', traceId: 'req_0', actor: { id: 'user_0', email: 'person0@example.com', type: 'user' } });
    expect(events.AuthEvent.toJSON(entry.event!)).toMatchObject({ target: { id: 'ses_0', type: 'session' } });
    expect(entry.location).toMatchObject({ city: 'London', country: 'GB', region: 'England' });
    expect(typeof entry.location!.lat).toBe('number');
    for (const [environment, id] of [['live', 'log_01aaaaaaaaaaaaaaaaaaaaaaaa'], ['live', 'nope'], ['test', ids[0]!]]) {
      await expect(getLog(ctx)({ environment: environment!, id: id! })).rejects.toMatchObject({ code: 'not_found' });
    }
  });
});
