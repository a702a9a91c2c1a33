import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openClickHouse, type ClickHouseClient } from '../src/clickhouse';
import { LogStore } from '../src/store';
import { applyRetention, migrateClickHouse, MIGRATIONS, LOG_TABLE } from '../src/schema';
import { eventFromRow, type LogRow } from '../src/rows';
import { sampleRow } from './support/rows';

let dir: string;
let ch: ClickHouseClient;
let store: LogStore;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-ch-'));
  ch = await openClickHouse({ path: dir });
  await migrateClickHouse(ch);
  store = new LogStore(ch);
}, 60_000);
afterAll(async () => {
  await ch.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(async () => void (await ch.command({ query: `TRUNCATE TABLE ${LOG_TABLE}` })));

const row = sampleRow;

test('migrations are recorded once and re-running them is a no-op; an edited migration is refused', async () => {
  expect(await migrateClickHouse(ch)).toBe(0);
  const edited = [{ ...MIGRATIONS[0]!, statements: [...MIGRATIONS[0]!.statements, 'SELECT 1'] }];
  await expect(migrateClickHouse(ch, edited)).rejects.toThrow('was edited after it was applied');
});

test('a row round-trips with millisecond time, location and metadata', async () => {
  const r = row();
  expect(await store.insert([r])).toBe(1);
  const got = await store.get('live', r.id);
  expect(got).toEqual(r);
  const { event, location } = eventFromRow(got!);
  expect(event.timestamp).toBe(r.timestamp);
  expect(location).toEqual({ city: 'London', country: 'GB', region: 'England', lat: 51.5, lng: -0.12 });
  expect(await store.get('test', r.id)).toBeUndefined();
});

test('inserting the same events again (redelivery) stores each once', async () => {
  const rows = [row(), row(), row()];
  expect(await store.insert(rows)).toBe(3);
  expect(await store.insert([rows[1]!, row(), rows[1]!])).toBe(1);
  expect(await store.insert(rows)).toBe(0);
  expect(await store.count({ environment: 'live' })).toBe(4);
});

test('pages are newest first with a keyset position, filtered by events, time, actor and result, per environment', async () => {
  const rows = [
    row({ event: 'user.login' }),
    row({ event: 'user.logout' }),
    row({ event: 'user.login', result: 'failure', actor_id: '', actor_type: 'anonymous' }),
    row({ event: 'api_key.created', actor_id: 'key_1', actor_type: 'api_key' }),
    row({ environment: 'test' }),
  ];
  await store.insert(rows);
  const ids = (rs: LogRow[]) => rs.map((r) => r.id);
  const live = rows.filter((r) => r.environment === 'live').reverse();
  expect(ids(await store.list({ environment: 'live' }, 10))).toEqual(ids(live));
  const first = await store.list({ environment: 'live' }, 2);
  expect(first).toHaveLength(3); // limit + 1: there is more
  const second = await store.list({ environment: 'live' }, 2, { timestamp: first[1]!.timestamp, id: first[1]!.id });
  expect(ids(second)).toEqual(ids(live.slice(2)));
  expect(ids(await store.list({ environment: 'live', events: ['user.logout', 'api_key.created'] }, 10))).toEqual([rows[3]!.id, rows[1]!.id]);
  expect(ids(await store.list({ environment: 'live', result: 'failure' }, 10))).toEqual([rows[2]!.id]);
  expect(ids(await store.list({ environment: 'live', actorId: 'key_1' }, 10))).toEqual([rows[3]!.id]);
  expect(ids(await store.list({ environment: 'live', from: rows[1]!.timestamp, to: rows[3]!.timestamp }, 10))).toEqual([rows[2]!.id, rows[1]!.id]);
  expect(ids(await store.list({ environment: 'test' }, 10))).toEqual([rows[4]!.id]);
});

test('counts entries per hour or day, event kind and result, with the filters and a search clause', async () => {
  const at = (iso: string, over: Partial<LogRow> = {}) => row({ timestamp: iso, ...over });
  await store.insert([
    at('2026-03-01T10:05:00.000Z', { event: 'user.login' }),
    at('2026-03-01T10:59:59.999Z', { event: 'user.login' }),
    at('2026-03-01T10:30:00.000Z', { event: 'user.login', result: 'failure' }),
    at('2026-03-01T11:00:00.000Z', { event: 'user.created' }),
    at('2026-03-02T00:00:00.000Z', { event: 'user.login' }),
    at('2026-03-01T10:10:00.000Z', { event: 'user.login', environment: 'test' }),
    at('2026-02-28T23:59:59.999Z', { event: 'user.login' }),
  ]);
  const window = { environment: 'live', from: '2026-03-01T00:00:00.000Z', to: '2026-03-03T00:00:00.000Z' };
  expect(await store.counts(window, 'hour')).toEqual([
    { start: '2026-03-01T10:00:00Z', event: 'user.login', result: 'failure', count: 1 },
    { start: '2026-03-01T10:00:00Z', event: 'user.login', result: 'success', count: 2 },
    { start: '2026-03-01T11:00:00Z', event: 'user.created', result: 'success', count: 1 },
    { start: '2026-03-02T00:00:00Z', event: 'user.login', result: 'success', count: 1 },
  ]);
  expect(await store.counts(window, 'day')).toEqual([
    { start: '2026-03-01T00:00:00Z', event: 'user.created', result: 'success', count: 1 },
    { start: '2026-03-01T00:00:00Z', event: 'user.login', result: 'failure', count: 1 },
    { start: '2026-03-01T00:00:00Z', event: 'user.login', result: 'success', count: 2 },
    { start: '2026-03-02T00:00:00Z', event: 'user.login', result: 'success', count: 1 },
  ]);
  expect(await store.counts({ ...window, events: ['user.login'], result: 'success' }, 'day')).toEqual([
    { start: '2026-03-01T00:00:00Z', event: 'user.login', result: 'success', count: 2 },
    { start: '2026-03-02T00:00:00Z', event: 'user.login', result: 'success', count: 1 },
  ]);
  expect(await store.counts(window, 'hour', { where: 'event = {kind:String}', params: { kind: 'user.created' } })).toEqual([
    { start: '2026-03-01T11:00:00Z', event: 'user.created', result: 'success', count: 1 },
  ]);
});

test('retention is a TTL on the table, changed only when configuration changes', async () => {
  await applyRetention(ch, 365);
  await applyRetention(ch, 365);
  const q = async () => (await (await ch.query({ query: `SELECT create_table_query AS q FROM system.tables WHERE name = '${LOG_TABLE}'`, format: 'JSONEachRow' })).json<{ q: string }>())[0]!.q;
  expect(await q()).toContain('TTL toDateTime(timestamp) + toIntervalDay(365)');
  await applyRetention(ch, 30);
  expect(await q()).toContain('toIntervalDay(30)');
  await expect(applyRetention(ch, 0)).rejects.toThrow('retention');
});
