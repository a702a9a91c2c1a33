// The chart of entries per hour by event kind and result. The API has no aggregation endpoint (GET /logs and
// POST /logs/search list entries; search also counts its matches): the console pages through the filter's
// entries, newest first, up to a limit, and counts them by UTC hour here. Pure functions (hourly.spec.ts).

import { HOUR_MS, type TimeWindow } from './filter';

/** At most this many entries are read for the chart (100 a request). */
export const CHART_MAX_ENTRIES = 2000;
/** At most this many hours are drawn (31 days): a longer range shows its last 744 hours. */
export const CHART_MAX_HOURS = 744;
/** At most this many series (kind × result) are drawn; the rest are summed as "other kinds". */
export const CHART_MAX_SERIES = 10;

export const OTHER_KINDS = 'other kinds';

export interface Countable {
  timestamp: string;
  event: string;
  result: 'success' | 'failure';
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
  /** Entries outside the hours drawn (before the first one). */
  left: number;
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

/**
 * Counts `entries` per hour of `window` by (event kind, result): series ordered by their total (largest first,
 * then by kind and result), the ones past `maxSeries - 2` summed into "other kinds" per result when more than
 * `maxSeries` exist.
 */
export function countByHour(entries: readonly Countable[], window: TimeWindow, maxSeries = CHART_MAX_SERIES): Hourly {
  const hours = hoursOf(Date.parse(window.from), Date.parse(window.to));
  const index = new Map(hours.map((h, i) => [h, i]));
  const byKey = new Map<string, Series>();
  let total = 0;
  let left = 0;
  for (const e of entries) {
    const i = index.get(hourOf(Date.parse(e.timestamp)));
    if (i === undefined) {
      left++;
      continue;
    }
    const key = `${e.event}\n${e.result}`;
    let s = byKey.get(key);
    if (!s) byKey.set(key, (s = { kind: e.event, result: e.result, counts: hours.map(() => 0), total: 0 }));
    s.counts[i]!++;
    s.total++;
    total++;
  }
  const sorted = [...byKey.values()].sort((a, b) => b.total - a.total || a.kind.localeCompare(b.kind) || a.result.localeCompare(b.result));
  if (sorted.length <= maxSeries) return { hours, series: sorted, total, left };
  const kept = sorted.slice(0, maxSeries - 2);
  const others = (['success', 'failure'] as const).map((result) => {
    const rest = sorted.slice(maxSeries - 2).filter((s) => s.result === result);
    return { kind: OTHER_KINDS, result, counts: hours.map((_, i) => rest.reduce((n, s) => n + s.counts[i]!, 0)), total: rest.reduce((n, s) => n + s.total, 0) };
  });
  return { hours, series: [...kept, ...others.filter((o) => o.total > 0)], total, left };
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

export interface Collected<T> {
  entries: T[];
  /** More entries matched than were read. */
  capped: boolean;
}

/** Reads pages (`page(cursor)`) until the last one or `max` entries, whichever comes first. */
export async function collectPages<T>(page: (cursor?: string) => Promise<{ data: T[]; pagination: { hasMore: boolean; nextCursor?: string } }>, max = CHART_MAX_ENTRIES): Promise<Collected<T>> {
  const entries: T[] = [];
  let cursor: string | undefined;
  for (;;) {
    const p = await page(cursor);
    entries.push(...p.data);
    if (!p.pagination.hasMore || !p.pagination.nextCursor) return { entries: entries.slice(0, max), capped: entries.length > max };
    if (entries.length >= max) return { entries: entries.slice(0, max), capped: true };
    cursor = p.pagination.nextCursor;
  }
}

/**
 * The window the chart can count completely: the filter's, or, when only the newest entries were read (capped),
 * from the oldest entry read (its hour is then partly counted).
 */
export function chartWindow(window: TimeWindow, collected: Collected<Countable>): TimeWindow {
  if (!collected.capped || collected.entries.length === 0) return window;
  const oldest = collected.entries.reduce((min, e) => Math.min(min, Date.parse(e.timestamp)), Infinity);
  return { from: new Date(Math.max(oldest, Date.parse(window.from))).toISOString(), to: window.to };
}
