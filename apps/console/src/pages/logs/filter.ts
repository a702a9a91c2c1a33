// The audit log's filter (search text, event kinds, actor, result, time range) as the URL carries it, and the
// API requests it makes: GET /v1/logs when the API's list filters can say it all, POST /v1/logs/search when
// there is search text (the filters then become clauses of the search language), POST /v1/logs/export with the
// same entries. Pure functions: unit-tested in Node (filter.spec.ts).
import type { operations } from '@secsvc/client';
import type { FieldDetail } from '../../api/errors';
import { EVENT_KINDS, type EventKind } from './events';

export type RangeKey = '1h' | '24h' | '7d' | '30d' | 'custom';
export type ResultFilter = '' | 'success' | 'failure';
export type ExportFormat = 'csv' | 'json' | 'ndjson';

export const HOUR_MS = 3_600_000;

/** The time ranges offered: the last hour, day, week, 30 days (ending now), or two UTC times. */
export const RANGES: { key: RangeKey; label: string; ms?: number }[] = [
  { key: '1h', label: 'Last hour', ms: HOUR_MS },
  { key: '24h', label: 'Last 24 hours', ms: 24 * HOUR_MS },
  { key: '7d', label: 'Last 7 days', ms: 7 * 24 * HOUR_MS },
  { key: '30d', label: 'Last 30 days', ms: 30 * 24 * HOUR_MS },
  { key: 'custom', label: 'Between two times (UTC)' },
];

export const DEFAULT_RANGE: RangeKey = '24h';

export interface LogFilter {
  /** Text in the search language (docs/api/search.md); empty: no search. */
  query: string;
  /** Only these kinds (none: every kind). */
  events: EventKind[];
  /** An actor's id (user_…, key_…, cli_…) or email. */
  actor: string;
  result: ResultFilter;
  range: RangeKey;
  /** custom range: UTC wall times as a datetime-local input holds them (2025-01-31T14:05). */
  from: string;
  to: string;
}

export const EMPTY_FILTER: LogFilter = { query: '', events: [], actor: '', result: '', range: DEFAULT_RANGE, from: '', to: '' };

/** An ISO 8601 instant. */
export interface TimeWindow {
  from: string;
  to: string;
}

const isRange = (v: string | null): v is RangeKey => RANGES.some((r) => r.key === v);

/** The filter of /logs?q=&events=a,b&actor=&result=&range=&from=&to= (unknown values are left out). */
export function parseFilter(params: URLSearchParams): LogFilter {
  const events = new Set((params.get('events') ?? '').split(',').map((e) => e.trim()));
  const result = params.get('result');
  const range = params.get('range');
  return {
    query: params.get('q') ?? '',
    events: EVENT_KINDS.filter((k) => events.has(k)),
    actor: (params.get('actor') ?? '').trim(),
    result: result === 'success' || result === 'failure' ? result : '',
    range: isRange(range) ? range : DEFAULT_RANGE,
    from: range === 'custom' ? (params.get('from') ?? '') : '',
    to: range === 'custom' ? (params.get('to') ?? '') : '',
  };
}

/** The query string of a filter (without `?`; only what differs from no filter), which parseFilter reads back. */
export function filterQueryString(f: LogFilter): string {
  const p = new URLSearchParams();
  if (f.query.trim()) p.set('q', f.query.trim());
  const events = EVENT_KINDS.filter((k) => f.events.includes(k));
  if (events.length) p.set('events', events.join(','));
  if (f.actor.trim()) p.set('actor', f.actor.trim());
  if (f.result) p.set('result', f.result);
  if (f.range !== DEFAULT_RANGE) p.set('range', f.range);
  if (f.range === 'custom') {
    p.set('from', f.from);
    p.set('to', f.to);
  }
  return p.toString();
}

const WALL_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?$/;

/** A datetime-local value read as UTC (2025-01-31T14:05 → 2025-01-31T14:05:00.000Z), or undefined. */
export function utcFromWallTime(value: string): string | undefined {
  if (!WALL_TIME.test(value)) return undefined;
  const ms = Date.parse(`${value}Z`);
  if (Number.isNaN(ms)) return undefined;
  const iso = new Date(ms).toISOString();
  // No rolling over: 2026-02-30 or 25:00 is not a time (Date.parse would make it another one).
  return iso.slice(0, 16) === value.slice(0, 16) ? iso : undefined;
}

/** An instant as a datetime-local value in UTC, to the minute (the inverse of utcFromWallTime). */
export const wallTimeOf = (ms: number) => new Date(ms).toISOString().slice(0, 16);

/** The instants the filter's range stands for, `now` being the end of the relative ranges; undefined when a custom bound is missing or invalid. */
export function resolveWindow(f: LogFilter, now: number): TimeWindow | undefined {
  const preset = RANGES.find((r) => r.key === f.range);
  if (preset?.ms) return { from: new Date(now - preset.ms).toISOString(), to: new Date(now).toISOString() };
  const from = utcFromWallTime(f.from);
  const to = utcFromWallTime(f.to);
  if (!from || !to || Date.parse(to) <= Date.parse(from)) return undefined;
  return { from, to };
}

const isEmail = (actor: string) => actor.includes('@');

/** Search text, or an actor given by email (the list's actorId filter takes ids only): POST /logs/search. */
export const usesSearch = (f: LogFilter) => f.query.trim() !== '' || isEmail(f.actor.trim());

/** What is wrong with the filter before any request (field names as the form's: query, events, actor, from, to). */
export function filterProblems(f: LogFilter): FieldDetail[] {
  const out: FieldDetail[] = [];
  const actor = f.actor.trim();
  if (/["\s]/.test(actor)) out.push({ field: 'actor', message: 'must be one actor id or email, without spaces or quotes' });
  if (usesSearch(f) && f.events.length > 1) {
    out.push({ field: 'events', message: 'with search text, choose one event kind at most (the search language has no OR); clear the search to filter by several kinds' });
  }
  if (f.range === 'custom') {
    const from = utcFromWallTime(f.from);
    const to = utcFromWallTime(f.to);
    if (!from) out.push({ field: 'from', message: 'must be a date and time (UTC)' });
    if (!to) out.push({ field: 'to', message: 'must be a date and time (UTC)' });
    if (from && to && Date.parse(to) <= Date.parse(from)) out.push({ field: 'to', message: 'must be after from' });
  }
  return out;
}

/** `field:"value"` in the search language (the value is checked by filterProblems: no quote inside). */
const clause = (field: string, value: string) => `${field}:"${value}"`;

/**
 * The filters as search-language clauses, after the search text: the actor (`actor.email:` or `actor.id:`, the
 * whole value), the result, and (when `withEvents`) the one event kind: `event:"user.login"` matches the event's
 * tokens in that order, which no other kind has (a unit test checks it against the list).
 */
export function searchText(f: LogFilter, withEvents: boolean): string {
  const actor = f.actor.trim();
  const parts = [f.query.trim()];
  if (actor) parts.push(clause(isEmail(actor) ? 'actor.email' : 'actor.id', actor));
  if (f.result) parts.push(`result:${f.result}`);
  if (withEvents && f.events.length === 1) parts.push(clause('event', f.events[0]!));
  return parts.filter(Boolean).join(' ');
}

type ListQuery = NonNullable<operations['listLogs']['parameters']['query']>;
type SearchBody = operations['searchLogs']['requestBody']['content']['application/json'];
export type ExportBody = operations['createLogExport']['requestBody']['content']['application/json'];
export type CountsBody = operations['countLogs']['requestBody']['content']['application/json'];

export type PageRequest = { kind: 'list'; query: ListQuery } | { kind: 'search'; body: SearchBody };

/** The request of one page of entries (`limit` of them, after `cursor`) for a valid filter and its window. */
export function pageRequest(f: LogFilter, window: TimeWindow, limit: number, cursor?: string): PageRequest {
  const more = cursor ? { cursor } : {};
  if (usesSearch(f)) return { kind: 'search', body: { query: searchText(f, true), from: window.from, to: window.to, limit, ...more } };
  const actor = f.actor.trim();
  return {
    kind: 'list',
    query: {
      limit,
      from: window.from,
      to: window.to,
      ...more,
      ...(f.events.length ? { events: f.events.join(',') } : {}),
      ...(actor ? { actorId: actor } : {}),
      ...(f.result ? { result: f.result } : {}),
    },
  };
}

/** The export of the entries the filter shows: the same window, the kinds as `events`, the rest as `query`. */
export function exportRequest(f: LogFilter, window: TimeWindow, format: ExportFormat): ExportBody {
  const query = searchText(f, false);
  return { from: window.from, to: window.to, format, ...(f.events.length ? { events: [...f.events] } : {}), ...(query ? { query } : {}) };
}

/** The per-hour counts of the entries the filter shows (as an export selects them: the kinds as `events`, the rest as `query`). */
export function countsRequest(f: LogFilter, window: TimeWindow): CountsBody {
  const { from, to, events, query } = exportRequest(f, window, 'json');
  return { from, to, interval: 'hour', ...(events ? { events } : {}), ...(query ? { query } : {}) };
}

/** A short description of a filter for people: `“login” · user.login · failure · 2025-01-31 14:05 → 15:05 UTC`. */
export function describeFilter(f: LogFilter, window: TimeWindow): string {
  const parts: string[] = [];
  if (f.query.trim()) parts.push(`“${f.query.trim()}”`);
  if (f.events.length) parts.push(f.events.join(', '));
  if (f.actor.trim()) parts.push(`actor ${f.actor.trim()}`);
  if (f.result) parts.push(f.result);
  parts.push(`${window.from.slice(0, 16).replace('T', ' ')} → ${window.to.slice(0, 16).replace('T', ' ')} UTC`);
  return parts.join(' · ');
}
