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

test('a one-term search is counted from the text index exactly as counting rows does, across parts, environments and windows', async () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 12, minute)).toISOString();
  // Four blocks (four parts), both environments in each; `failure` in one entry in three, `login` in every `user.login`.
  for (let block = 0; block < 4; block++) {
    await store.insert(
      Array.from({ length: 30 }, (_, i) => {
        const k = block * 30 + i;
        return row({ environment: k % 4 === 0 ? 'test' : 'live', timestamp: at(k), event: k % 2 ? 'user.login' : 'user.logout', result: k % 3 ? 'success' : 'failure' });
      }),
    );
  }
  const search = (token: string) => ({ where: 'hasToken(search_text, {t:String})', params: { t: token } });
  const windows = [{}, { from: at(10) }, { to: at(95) }, { from: at(31), to: at(59) }, { from: at(0), to: at(120) }, { from: at(200) }];
  // With minSparedRows 0 the text index counts whenever some part is mostly inside the filter (at this size the
  // default would count rows every time).
  const fromIndex = new LogStore(ch, undefined, { minSparedRows: 0 });
  const check = async () => {
    for (const environment of ['live', 'test', 'other']) {
      for (const w of windows) {
        for (const token of ['failure', 'login', 'logout', 'absent']) {
          const filters = { environment, ...w };
          const rows = await store.count(filters, search(token));
          for (const s of [store, fromIndex]) expect({ filters, token, n: await s.count(filters, { ...search(token), indexToken: token }) }).toEqual({ filters, token, n: rows });
        }
      }
    }
  };
  await check();
  await ch.command({ query: `OPTIMIZE TABLE ${LOG_TABLE} FINAL` }); // one part holding both environments
  await check();
  // It did count from the text index (and did not fall back to counting rows).
  const query = jest.spyOn(ch, 'query');
  expect(await fromIndex.count({ environment: 'live' }, { ...search('login'), indexToken: 'login' })).toBe(60);
  expect(query.mock.calls.some(([q]) => q.query.includes('mergeTreeTextIndex'))).toBe(true);
  expect(query.mock.calls.some(([q]) => q.query.includes('system.parts'))).toBe(true);
  query.mockRestore();
  // A merge between the statements (a part read is gone afterwards, or a part read was not active before them):
  // counted again; twice in a row: rows counted.
  for (const when of ['after', 'before'] as const) {
    for (const races of [1, 2]) {
      const real = ch.query.bind(ch);
      let attempts = 0;
      let restCounted = false; // a part list after statement 2 (the rest counted by rows) is the check after it
      const raced = jest.spyOn(ch, 'query').mockImplementation(((params: Parameters<ClickHouseClient['query']>[0]) => {
        if (params.query.includes('_part NOT IN')) restCounted = true;
        if (!params.query.includes('system.parts')) return real(params);
        const isBefore = !restCounted;
        restCounted = false;
        if (isBefore) attempts++;
        const race = attempts <= races && (when === 'before' ? isBefore : !isBefore);
        return race ? real({ ...params, query: `SELECT 'merged_part' AS name`, query_params: {} }) : real(params);
      }) as ClickHouseClient['query']);
      expect(await fromIndex.count({ environment: 'live' }, { ...search('login'), indexToken: 'login' })).toBe(60);
      expect(attempts).toBe(2); // counted twice from the index
      const rowCounts = raced.mock.calls.filter(([q]) => q.query.startsWith('SELECT count() AS n FROM audit_logs WHERE')).length;
      expect({ when, races, rowCounts }).toEqual({ when, races, rowCounts: races === 1 ? 0 : 1 });
      raced.mockRestore();
    }
  }
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
