import { AppError, newId } from '@secsvc/shared';
import type { LogRow } from '../rows';
import type { Clause, LogFilters, LogPosition } from '../store';
import { sampleRow } from '../../test/support/rows';
import { LogQueries, MAX_PAGE, positionOf, type LogReader } from './log-queries';

const SECRET = 'test-secret-test-secret-test-secret-0123';

/** An in-memory LogReader: environment, event, actor and result filters, newest first, keyset after a position, limit + 1. */
function fakeStore(rows: LogRow[]) {
  const calls: { list: [LogFilters, number, LogPosition | undefined, Clause | undefined][]; count: [LogFilters, Clause | undefined][]; get: number; counts: [LogFilters, string, Clause | undefined][] } = {
    list: [],
    count: [],
    get: 0,
    counts: [],
  };
  const matching = (f: LogFilters) =>
    rows
      .filter((r) => r.environment === f.environment && (!f.events || f.events.includes(r.event)) && (!f.actorId || r.actor_id === f.actorId) && (!f.result || r.result === f.result))
      .sort((a, b) => (a.timestamp === b.timestamp ? b.id.localeCompare(a.id) : b.timestamp.localeCompare(a.timestamp)));
  const store: LogReader = {
    list: async (filters, limit, after, extra) => {
      calls.list.push([filters, limit, after, extra]);
      const all = matching(filters);
      const start = after ? all.findIndex((r) => r.timestamp < after.timestamp || (r.timestamp === after.timestamp && r.id < after.id)) : 0;
      return start === -1 ? [] : all.slice(start, start + limit + 1);
    },
    count: async (filters, extra) => {
      calls.count.push([filters, extra]);
      return matching(filters).length;
    },
    get: async (environment, id) => {
      calls.get++;
      return rows.find((r) => r.environment === environment && r.id === id);
    },
    counts: async (filters, interval, extra) => {
      calls.counts.push([filters, interval, extra]);
      return [
        { start: '2026-03-01T10:00:00Z', event: 'user.login', result: 'success', count: 2 },
        { start: '2026-03-01T11:00:00Z', event: 'user.login', result: 'failure', count: 3 },
      ];
    },
  };
  return { store, calls };
}

const page = { limit: 10, cursor: '' };
const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as AppError);

describe('list', () => {
  const rows = Array.from({ length: 25 }, (_, i) => sampleRow({ event: i % 2 ? 'user.login' : 'user.logout', actor_id: `user_${i % 3}`, result: i === 7 ? 'failure' : 'success' }));
  rows.push(sampleRow({ environment: 'test' }));

  test('pages newest first through every entry of the environment, the cursor carrying the position', async () => {
    const { store, calls } = fakeStore(rows);
    const logs = new LogQueries(store, SECRET);
    const seen: string[] = [];
    let cursor = '';
    for (;;) {
      const res = await logs.list({ environment: 'live', limit: 7, cursor });
      expect(res.rows.length).toBeLessThanOrEqual(7);
      seen.push(...res.rows.map((r) => r.id));
      if (!res.hasMore) {
        expect(res.nextCursor).toBe('');
        break;
      }
      expect(res.nextCursor).toMatch(/^cur_/);
      cursor = res.nextCursor;
    }
    expect(seen).toEqual(rows.slice(0, 25).map((r) => r.id).reverse());
    expect(calls.list.map(([, limit]) => limit)).toEqual([7, 7, 7, 7]);
    expect(calls.list[1]![2]).toEqual({ timestamp: rows[18]!.timestamp, id: rows[18]!.id });
    // a page that holds exactly the rest: no more, no cursor
    expect(await logs.list({ environment: 'live', limit: 25, cursor: '' })).toMatchObject({ hasMore: false, nextCursor: '' });
  });

  test('hands the filters to the store, empty actor and result meaning any', async () => {
    const { store, calls } = fakeStore(rows);
    const logs = new LogQueries(store, SECRET);
    await logs.list({ environment: 'live', events: ['user.login'], actorId: '', result: '', from: '2026-11-01T00:00:00Z', ...page });
    expect(calls.list[0]).toEqual([{ environment: 'live', events: ['user.login'], from: '2026-11-01T00:00:00Z', to: undefined, actorId: undefined, result: undefined }, 10, undefined, undefined]);
    const failures = await logs.list({ environment: 'live', actorId: 'user_1', result: 'failure', ...page });
    expect(failures.rows.map((r) => r.id)).toEqual([rows[7]!.id]);
  });

  test('refuses bad requests naming every faulty field, before reading', async () => {
    const { store, calls } = fakeStore(rows);
    const logs = new LogQueries(store, SECRET);
    const err = await rejection(logs.list({ environment: 'live', events: ['user.login', 'login'], from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z', result: 'maybe', ...page }));
    expect(err).toBeInstanceOf(AppError);
    expect(err!.details.map((d) => d.field)).toEqual(['events[1]', 'to', 'result']);
    expect((await rejection(logs.list({ environment: 'prod', ...page })))!.details).toMatchObject([{ field: 'environment' }]);
    expect((await rejection(logs.list({ environment: 'live', limit: MAX_PAGE + 1, cursor: '' })))!.details).toMatchObject([{ field: 'limit' }]);
    expect((await rejection(logs.list({ environment: 'live', limit: 5, cursor: 'cur_forged' })))!.details).toMatchObject([{ field: 'cursor' }]);
    expect(calls.list).toHaveLength(0);
  });

  test('a cursor serves only its own list and environment', async () => {
    const logs = new LogQueries(fakeStore(rows).store, SECRET);
    const { nextCursor } = await logs.list({ environment: 'live', limit: 2, cursor: '' });
    expect((await rejection(logs.list({ environment: 'test', limit: 2, cursor: nextCursor })))!.details).toMatchObject([{ field: 'cursor' }]);
    expect((await rejection(logs.search({ environment: 'live', query: 'login', limit: 2, cursor: nextCursor })))!.details).toMatchObject([{ field: 'cursor' }]);
    expect((await rejection(new LogQueries(fakeStore(rows).store, 'another-secret-another-secret-0123').list({ environment: 'live', limit: 2, cursor: nextCursor })))!.code).toBe('invalid_request');
  });
});

describe('search', () => {
  const rows = [
    sampleRow({ event: 'user.login', actor_email: 'alice@example.com' }),
    sampleRow({ event: 'user.logout', actor_email: 'bob@example.com' }),
    sampleRow({ event: 'user.login', actor_email: 'carol@example.org', city: 'Login-on-Sea' }),
  ];

  test('lists and counts with the compiled query; each hit carries the highlights of the fields it matched', async () => {
    const { store, calls } = fakeStore(rows);
    const res = await new LogQueries(store, SECRET).search({ environment: 'live', query: 'login', limit: 2, cursor: '' });
    expect(calls.list[0]![3]).toMatchObject({ where: expect.any(String), params: expect.any(Object) });
    expect(calls.count[0]).toEqual([calls.list[0]![0], calls.list[0]![3]]);
    expect(res.totalHits).toBe(3); // the fake counts by filters only: what the store says is what is answered
    expect(res.hits.map((h) => h.row.id)).toEqual([rows[2]!.id, rows[1]!.id]);
    expect(res.hits[0]!.highlights).toEqual({ event: 'user.<em>login</em>', city: '<em>Login</em>-on-Sea' });
    expect(res.hits[1]!.highlights).toEqual({});
    expect(res.hasMore).toBe(true);
    expect(res.nextCursor).toMatch(/^cur_/);
    expect(res.searchTimeMs).toBeGreaterThanOrEqual(0);
  });

  test('a first page that holds every match is the total, and the count is called off; otherwise the count is', async () => {
    const { store } = fakeStore(rows);
    const signals: (AbortSignal | undefined)[] = [];
    const counting: LogReader = { ...store, count: async (_filters, _extra, signal) => (signals.push(signal), 99) };
    const logs = new LogQueries(counting, SECRET);
    expect((await logs.search({ environment: 'live', query: 'login', limit: 3, cursor: '' })).totalHits).toBe(3);
    expect(signals[0]?.aborted).toBe(true);
    const first = await logs.search({ environment: 'live', query: 'login', limit: 2, cursor: '' });
    expect(first.totalHits).toBe(99);
    expect(signals[1]?.aborted).toBe(false);
    // A last page after a cursor holds only the rest: the total is still the count.
    expect((await logs.search({ environment: 'live', query: 'login', limit: 2, cursor: first.nextCursor })).totalHits).toBe(99);
    expect(signals[2]?.aborted).toBe(false);
  });

  test('filter faults come before query faults; a query that cannot be parsed is a 400 naming query', async () => {
    const { store, calls } = fakeStore(rows);
    const logs = new LogQueries(store, SECRET);
    expect((await rejection(logs.search({ environment: 'live', query: '"unclosed', ...page })))!.details).toMatchObject([{ field: 'query' }]);
    expect((await rejection(logs.search({ environment: 'live', query: '"unclosed', from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z', ...page })))!.details).toMatchObject([{ field: 'to' }]);
    expect(calls.list).toHaveLength(0);
    expect(calls.count).toHaveLength(0);
  });
});

describe('get', () => {
  const row = sampleRow({ id: newId('log') });

  test('the entry of the environment; unknown, malformed and other-environment ids are 404', async () => {
    const { store, calls } = fakeStore([row]);
    const logs = new LogQueries(store, SECRET);
    expect(await logs.get({ environment: 'live', id: row.id })).toBe(row);
    for (const [environment, id] of [['live', newId('log')], ['test', row.id], ['live', 'nope']] as const) {
      expect(await rejection(logs.get({ environment, id }))).toMatchObject({ code: 'not_found' });
    }
    expect(calls.get).toBe(3); // the malformed id is not looked up
    expect(await rejection(logs.get({ environment: 'prod', id: row.id }))).toMatchObject({ details: [{ field: 'environment' }] });
  });
});

test('positionOf reads `<time>|<id>`; anything else is an invalid cursor', () => {
  expect(positionOf(undefined)).toBeUndefined();
  expect(positionOf('2026-11-01T00:00:00.000Z|log_1')).toEqual({ timestamp: '2026-11-01T00:00:00.000Z', id: 'log_1' });
  for (const bad of ['', 'x|log_1', '2026-11-01T00:00:00.000Z', '2026-11-01T00:00:00.000Z|']) expect(() => positionOf(bad)).toThrow(AppError);
});

describe('counts', () => {
  const window = { environment: 'live', from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00Z' };

  test('counts per hour by default, with the filters and the compiled query, and their total', async () => {
    const { store, calls } = fakeStore([]);
    const res = await new LogQueries(store, SECRET).counts({ ...window, query: 'event:user.login', events: ['user.login'], result: 'failure' });
    expect(res.total).toBe(5);
    expect(calls.counts).toHaveLength(1);
    const [filters, interval, clause] = calls.counts[0]!;
    expect([filters, interval]).toEqual([{ ...window, events: ['user.login'], actorId: undefined, result: 'failure' }, 'hour']);
    expect(clause?.where).toContain('event');
    await new LogQueries(store, SECRET).counts({ ...window, interval: 'day' });
    expect(calls.counts[1]![1]).toBe('day');
    expect(calls.counts[1]![2]).toBeUndefined();
  });

  test('refuses, naming every faulty field at once, and counts nothing', async () => {
    const { store, calls } = fakeStore([]);
    const logs = new LogQueries(store, SECRET);
    const e = await rejection(logs.counts({ environment: 'live', interval: 'minute', query: 'event:(', events: ['no.such'], result: 'maybe' }));
    expect(e).toBeInstanceOf(AppError);
    expect(e!.details.map((d) => d.field).sort()).toEqual(['events[0]', 'from', 'interval', 'query', 'result', 'to']);
    const long = await rejection(logs.counts({ environment: 'live', from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:01Z' }));
    expect(long!.details).toEqual([{ field: 'to', message: 'the range from..to must be at most 31 days with interval hour' }]);
    await expect(logs.counts({ environment: 'live', from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:01Z', interval: 'day' })).resolves.toMatchObject({ total: 5 });
    const reversed = await rejection(logs.counts({ environment: 'live', from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }));
    expect(reversed!.details).toEqual([{ field: 'to', message: 'must be after from' }]);
    expect(calls.counts).toHaveLength(1);
  });
});
