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

test('the log table writes its parts in 16 KB compression blocks (migration 4), also when created before it', async () => {
  const settings = async (c: ClickHouseClient) => {
    const rs = await c.query({ query: `SELECT create_table_query AS q FROM system.tables WHERE database = currentDatabase() AND name = '${LOG_TABLE}'`, format: 'JSONEachRow' });
    return (await rs.json<{ q: string }>())[0]!.q;
  };
  expect(await settings(ch)).toMatch(/min_compress_block_size = 16384, max_compress_block_size = 16384/);
  // A table from before migration 4 (its settings reset, the migration not recorded) gets them on the next start.
  await ch.command({ query: `ALTER TABLE ${LOG_TABLE} RESET SETTING min_compress_block_size, max_compress_block_size` });
  await ch.command({ query: 'DELETE FROM schema_migrations WHERE version = 4' });
  expect(await settings(ch)).not.toMatch(/compress_block_size/);
  expect(await migrateClickHouse(ch)).toBe(1);
  expect(await settings(ch)).toMatch(/min_compress_block_size = 16384, max_compress_block_size = 16384/);
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

test('inserts go through a connection of their own when given one: reads see what it wrote, without waiting for an insert in flight', async () => {
  // The audit service's embedded setup: a second client on the same chdb data directory for the consumer.
  const writer = await openClickHouse({ path: dir });
  try {
    const split = new LogStore(ch, undefined, { writer });
    const rows = Array.from({ length: 50_000 }, () => row());
    const readDuring = async (s: LogStore) => {
      const insert = s.write(rows.map((r) => ({ row: r, position: 0, link: 0 }))).then(() => 'insert');
      // The engine takes a while over 50,000 rows (about half a second): it is inserting when the read starts.
      await new Promise((r) => setTimeout(r, 100));
      const read = ch.query({ query: 'SELECT 1 AS x', format: 'JSONEachRow' }).then((r) => r.json()).then(() => 'read');
      const first = await Promise.race([insert, read]);
      await Promise.all([insert, read]);
      return first;
    };
    expect(await readDuring(split)).toBe('read');
    expect(await store.count({ environment: 'live' })).toBe(50_000);
    // On one connection the read waits for the insert (what the writer avoids).
    await ch.command({ query: `TRUNCATE TABLE ${LOG_TABLE}` });
    expect(await readDuring(store)).toBe('insert');
    expect(await store.count({ environment: 'live' })).toBe(50_000);
  } finally {
    await writer.close();
  }
}, 60_000);

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
  // Four blocks (four parts): two with both environments, one of live entries only, one of test entries only;
  // `failure` in one entry in three, `login` in every `user.login`.
  for (let block = 0; block < 4; block++) {
    await store.insert(
      Array.from({ length: 30 }, (_, i) => {
        const k = block * 30 + i;
        const environment = block === 2 ? 'live' : block === 3 ? 'test' : k % 4 === 0 ? 'test' : 'live';
        return row({ environment, timestamp: at(k), event: k % 2 ? 'user.login' : 'user.logout', result: k % 3 ? 'success' : 'failure' });
      }),
    );
  }
  const search = (token: string) => ({ where: 'hasToken(search_text, {t:String})', params: { t: token } });
  const windows = [{}, { from: at(10) }, { to: at(95) }, { from: at(31), to: at(59) }, { from: at(0), to: at(120) }, { from: at(59), to: at(91) }, { from: at(200) }];
  // With minIndexedPartRows 0 every part may be counted from the text index (at this size the default counts rows).
  const fromIndex = new LogStore(ch, undefined, { minIndexedPartRows: 0 });
  const check = async () => {
    for (const environment of ['live', 'test', 'other']) {
      for (const w of windows) {
        for (const token of ['failure', 'login', 'logout', 'absent']) {
          const filters = { environment, ...w };
          const rows = await store.count(filters, search(token));
          // twice: the second from the token counts kept in memory
          for (const s of [store, fromIndex, fromIndex]) expect({ filters, token, n: await s.count(filters, { ...search(token), indexToken: token }) }).toEqual({ filters, token, n: rows });
        }
      }
    }
  };
  await check();
  await ch.command({ query: `OPTIMIZE TABLE ${LOG_TABLE} FINAL` }); // one part holding both environments: new counts
  await check();
});

test('token counts are kept per part content: a merge, new parts and a recreated table with the same part names are counted afresh', async () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 12, minute)).toISOString();
  const insert = (n: number, event = 'user.login') => store.insert(Array.from({ length: n }, (_, i) => row({ timestamp: at(i), event })));
  const fromIndex = new LogStore(ch, undefined, { minIndexedPartRows: 0 });
  const login = { where: 'hasToken(search_text, {t:String})', params: { t: 'login' }, indexToken: 'login' };
  const parts = async () => (await (await ch.query({ query: `SELECT name FROM system.parts WHERE table = '${LOG_TABLE}' AND active ORDER BY name`, format: 'JSONEachRow' })).json<{ name: string }>()).map((r) => r.name);
  // A new table numbers its blocks (and so its parts) from 1.
  const recreate = async () => {
    await ch.command({ query: `DROP TABLE ${LOG_TABLE} SYNC` });
    for (const m of MIGRATIONS) for (const statement of m.statements) await ch.command({ query: statement });
  };
  await recreate();
  const statements = jest.spyOn(ch, 'query');
  const counted = async (expected: number) => {
    statements.mockClear();
    expect(await fromIndex.count({ environment: 'live' }, login)).toBe(expected);
    return statements.mock.calls.map(([q]) => (/mergeTreeTextIndex/.test(q.query) ? 'tokens' : /system\.parts/.test(q.query) ? 'parts' : /mergeTreeIndex/.test(q.query) ? 'keys' : 'rows'));
  };
  try {
    await insert(10);
    await insert(5);
    expect(await counted(15)).toEqual(['parts', 'keys', 'tokens', 'parts']); // read, then checked
    expect(await counted(15)).toEqual(['parts']); // every part wholly inside the filter: from memory
    await insert(7, 'user.logout');
    expect(await counted(15)).toEqual(['parts', 'keys', 'tokens', 'parts']); // the new part's counts
    const before = await parts();
    await ch.command({ query: `OPTIMIZE TABLE ${LOG_TABLE} FINAL` });
    expect(await parts()).not.toEqual(before);
    expect(await counted(15)).toEqual(['parts', 'keys', 'tokens', 'parts']); // the merged part is new
    expect(await counted(15)).toEqual(['parts']);

    // The same part names with other content (10 logins and 5 before, none and 4 now).
    await recreate();
    await insert(10, 'user.logout');
    await insert(4);
    expect(await parts()).toEqual(before.slice(0, 2));
    expect(await counted(4)).toEqual(['parts', 'keys', 'tokens', 'parts']);
  } finally {
    statements.mockRestore();
  }
});

test('a merge while a one-term search is counted from the text index: counted again, then row by row', async () => {
  const at = (minute: number) => new Date(Date.UTC(2026, 10, 1, 12, minute)).toISOString();
  const insert = (n: number, environment = 'live') => store.insert(Array.from({ length: n }, (_, i) => row({ environment, timestamp: at(i), event: 'user.login' })));
  const login = { where: 'hasToken(search_text, {t:String})', params: { t: 'login' }, indexToken: 'login' };
  // merge (a real one, OPTIMIZE FINAL) right before the statements that read parts listed earlier
  for (const [when, races] of [['tokens', 1], ['rows', 1], ['rows', 2]] as const) {
    await ch.command({ query: `TRUNCATE TABLE ${LOG_TABLE}` });
    await insert(10);
    await insert(6, 'test'); // a part outside the filter: the row count's statement runs
    await insert(5);
    const fromIndex = new LogStore(ch, undefined, { minIndexedPartRows: 0 });
    const real = ch.query.bind(ch);
    let merged = 0;
    const raced = jest.spyOn(ch, 'query').mockImplementation((async (params: Parameters<ClickHouseClient['query']>[0]) => {
      const statement = params.query.includes('mergeTreeTextIndex') ? 'tokens' : params.query.includes('_part NOT IN') ? 'rows' : '';
      if (statement === when && merged < races) {
        merged++;
        await insert(1, 'test'); // so that there is something to merge the second time, outside the filter
        await ch.command({ query: `OPTIMIZE TABLE ${LOG_TABLE} FINAL` });
      }
      return real(params);
    }) as ClickHouseClient['query']);
    try {
      expect(await fromIndex.count({ environment: 'live' }, login)).toBe(15);
      const calls = raced.mock.calls.map(([q]) => q.query);
      const rowCounts = calls.filter((q) => q.startsWith('SELECT count() AS n FROM audit_logs WHERE')).length;
      // one race: counted again from the index; two: rows counted
      expect({ when, races, merged, rowCounts }).toEqual({ when, races, merged: races, rowCounts: races === 2 ? 1 : 0 });
    } finally {
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
