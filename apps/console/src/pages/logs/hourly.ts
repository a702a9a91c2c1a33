// The chart of entries per hour by event kind and result, from the API's counts (POST /v1/logs/counts: the
// buckets with entries, counted where the entries are), laid out on every hour of the window. Pure functions
// (hourly.spec.ts).

import { HOUR_MS, type TimeWindow } from './filter';

/** At most this many hours are drawn (31 days, the API's limit for hourly counts): a longer range shows its last 744 hours. */
export const CHART_MAX_HOURS = 744;
/** At most this many series (kind × result) are drawn; the rest are summed as "other kinds". */
export const CHART_MAX_SERIES = 10;

export const OTHER_KINDS = 'other kinds';

/** One bucket of the API's counts: the entries of one kind and result in the hour starting at `start`. */
export interface Countable {
  start: string;
  event: string;
  result: 'success' | 'failure';
  count: number;
}

export interface Series {
  kind: string;
  result: 'success' | 'failure';
  /** Per hour, in the order of Hourly.hours. */
  counts: number[];
  total: number;
}

export interface Hourly {
  /** The hours' starts (ms since the epoch, UTC), oldest first. */
  hours: number[];
  series: Series[];
  /** Entries counted (in the hours drawn). */
  total: number;
}

export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS) * HOUR_MS;

/**
 * The hours of `[from, to)` as bucket starts: from the hour holding `from` to the hour holding the last
 * millisecond before `to`, at most `maxHours` of them (the newest).
 */
export function hoursOf(fromMs: number, toMs: number, maxHours = CHART_MAX_HOURS): number[] {
  const last = hourOf(toMs - 1);
  const first = Math.max(hourOf(fromMs), last - (maxHours - 1) * HOUR_MS);
  const out: number[] = [];
  for (let h = first; h <= last; h += HOUR_MS) out.push(h);
  return out;
}

/** The part of a window the chart draws and asks the counts of: its last CHART_MAX_HOURS hours. */
export function countWindow(window: TimeWindow): TimeWindow {
  const first = hoursOf(Date.parse(window.from), Date.parse(window.to))[0]!;
  return { from: new Date(Math.max(first, Date.parse(window.from))).toISOString(), to: window.to };
}

/**
 * Lays the API's buckets out per hour of `window` by (event kind, result): series ordered by their total
 * (largest first, then by kind and result), the ones past `maxSeries - 2` summed into "other kinds" per result
 * when more than `maxSeries` exist. A bucket outside the window's hours is not drawn.
 */
export function countByHour(buckets: readonly Countable[], window: TimeWindow, maxSeries = CHART_MAX_SERIES): Hourly {
  const hours = hoursOf(Date.parse(window.from), Date.parse(window.to));
  const index = new Map(hours.map((h, i) => [h, i]));
  const byKey = new Map<string, Series>();
  let total = 0;
  for (const b of buckets) {
    const i = index.get(hourOf(Date.parse(b.start)));
    if (i === undefined) continue;
    const key = `${b.event}\n${b.result}`;
    let s = byKey.get(key);
    if (!s) byKey.set(key, (s = { kind: b.event, result: b.result, counts: hours.map(() => 0), total: 0 }));
    s.counts[i]! += b.count;
    s.total += b.count;
    total += b.count;
  }
  const sorted = [...byKey.values()].sort((a, b) => b.total - a.total || a.kind.localeCompare(b.kind) || a.result.localeCompare(b.result));
  if (sorted.length <= maxSeries) return { hours, series: sorted, total };
  const kept = sorted.slice(0, maxSeries - 2);
  const others = (['success', 'failure'] as const).map((result) => {
    const rest = sorted.slice(maxSeries - 2).filter((s) => s.result === result);
    return { kind: OTHER_KINDS, result, counts: hours.map((_, i) => rest.reduce((n, s) => n + s.counts[i]!, 0)), total: rest.reduce((n, s) => n + s.total, 0) };
  });
  return { hours, series: [...kept, ...others.filter((o) => o.total > 0)], total };
}

export interface TableRow {
  hour: number;
  kind: string;
  success: number;
  failure: number;
}

/** The chart's numbers as rows (hour, kind, successes, failures), hours oldest first, only counts above zero. */
export function tableRows(h: Hourly): TableRow[] {
  const rows: TableRow[] = [];
  h.hours.forEach((hour, i) => {
    const byKind = new Map<string, TableRow>();
    for (const s of h.series) {
      const n = s.counts[i]!;
      if (!n) continue;
      let row = byKind.get(s.kind);
      if (!row) byKind.set(s.kind, (row = { hour, kind: s.kind, success: 0, failure: 0 }));
      row[s.result] += n;
    }
    rows.push(...[...byKind.values()].sort((a, b) => a.kind.localeCompare(b.kind)));
  });
  return rows;
}

/** An hour's start as `01-31 14:00` (UTC). */
export const hourLabel = (ms: number) => new Date(ms).toISOString().slice(5, 16).replace('T', ' ');
