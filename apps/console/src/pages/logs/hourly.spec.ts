import { countByHour, countWindow, hourLabel, hoursOf, OTHER_KINDS, tableRows, type Countable } from './hourly';

const H = 3_600_000;
const T0 = Date.parse('2026-03-10T00:00:00.000Z');
/** A bucket of one entry in the hour holding `ms` (as the API answers: the hour's start). */
const at = (ms: number, event = 'user.login', result: 'success' | 'failure' = 'success', count = 1): Countable => ({ start: new Date(Math.floor(ms / H) * H).toISOString(), event, result, count });

describe('hours of a window', () => {
  it('runs from the hour holding from to the hour holding the last millisecond before to', () => {
    expect(hoursOf(T0 + 30 * 60_000, T0 + 3 * H)).toEqual([T0, T0 + H, T0 + 2 * H]);
    expect(hoursOf(T0, T0 + 3 * H + 1)).toEqual([T0, T0 + H, T0 + 2 * H, T0 + 3 * H]);
    expect(hoursOf(T0 + 10, T0 + 20)).toEqual([T0]);
  });

  it('keeps the newest hours when the window is longer than the maximum', () => {
    expect(hoursOf(T0, T0 + 100 * H, 3)).toEqual([T0 + 97 * H, T0 + 98 * H, T0 + 99 * H]);
  });

  it('labels an hour in UTC', () => {
    expect(hourLabel(T0 + 14 * H)).toBe('03-10 14:00');
  });
});

describe('counting per hour by kind and result', () => {
  const window = { from: new Date(T0 + 15 * 60_000).toISOString(), to: new Date(T0 + 3 * H).toISOString() };

  it('lays each bucket out in its hour and series; buckets outside the hours are not drawn', () => {
    const h = countByHour(
      [
        at(T0 + 20 * 60_000),
        at(T0 + 59 * 60_000 + 59_999),
        at(T0 + H, 'user.login', 'failure'),
        at(T0 + 2 * H + 5, 'user.created'),
        at(T0 + 2 * H + 6, 'user.login', 'failure'),
        at(T0 + 2 * H + 7, 'user.login', 'failure'),
        at(T0 - 1),
        at(T0 + 3 * H),
      ],
      window,
    );
    expect(h.hours).toEqual([T0, T0 + H, T0 + 2 * H]);
    expect(h.series).toEqual([
      { kind: 'user.login', result: 'failure', counts: [0, 1, 2], total: 3 },
      { kind: 'user.login', result: 'success', counts: [2, 0, 0], total: 2 },
      { kind: 'user.created', result: 'success', counts: [0, 0, 1], total: 1 },
    ]);
    expect(h.total).toBe(6);
    expect(tableRows(h)).toEqual([
      { hour: T0, kind: 'user.login', success: 2, failure: 0 },
      { hour: T0 + H, kind: 'user.login', success: 0, failure: 1 },
      { hour: T0 + 2 * H, kind: 'user.created', success: 1, failure: 0 },
      { hour: T0 + 2 * H, kind: 'user.login', success: 0, failure: 2 },
    ]);
  });

  it('sums the smallest series into "other kinds" per result beyond the maximum', () => {
    const entries: Countable[] = [];
    const kinds = ['a.one', 'b.two', 'c.three', 'd.four', 'e.five'];
    kinds.forEach((k, i) => {
      for (let n = 0; n <= 5 - i; n++) entries.push(at(T0 + n, k));
    });
    entries.push(at(T0 + H, 'e.five', 'failure'));
    const h = countByHour(entries, window, 4);
    expect(h.series.map((s) => [s.kind, s.result, s.total])).toEqual([
      ['a.one', 'success', 6],
      ['b.two', 'success', 5],
      [OTHER_KINDS, 'success', 4 + 3 + 2],
      [OTHER_KINDS, 'failure', 1],
    ]);
    expect(h.series.reduce((n, s) => n + s.total, 0)).toBe(h.total);
    expect(h.series[2]!.counts).toEqual([9, 0, 0]);
  });

  it('counts nothing in an empty window', () => {
    const h = countByHour([], window);
    expect([h.total, h.series, tableRows(h)]).toEqual([0, [], []]);
  });
});

describe('the counts of a window', () => {
  it('adds the counts of buckets of the same hour and series', () => {
    const window = { from: new Date(T0).toISOString(), to: new Date(T0 + 2 * H).toISOString() };
    const h = countByHour([at(T0, 'user.login', 'success', 40), at(T0 + H, 'user.login', 'success', 2), at(T0 + H, 'user.login', 'failure', 5)], window);
    expect(h.series).toEqual([
      { kind: 'user.login', result: 'success', counts: [40, 2], total: 42 },
      { kind: 'user.login', result: 'failure', counts: [0, 5], total: 5 },
    ]);
    expect(h.total).toBe(47);
  });

  it('asks for the hours it draws: a window over 744 hours is cut to its last 744', () => {
    const short = { from: new Date(T0 + 5).toISOString(), to: new Date(T0 + 5 * H).toISOString() };
    expect(countWindow(short)).toEqual(short);
    const long = { from: new Date(T0).toISOString(), to: new Date(T0 + 1000 * H).toISOString() };
    expect(countWindow(long)).toEqual({ from: new Date(T0 + 256 * H).toISOString(), to: long.to });
    expect(hoursOf(Date.parse(countWindow(long).from), Date.parse(long.to))).toHaveLength(744);
  });
});
