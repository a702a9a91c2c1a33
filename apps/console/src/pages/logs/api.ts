// The audit log's reads through the typed client: a page of entries for a filter (GET /v1/logs, or POST
// /v1/logs/search with highlights and the count of matches).
import type { Schemas, SecsvcClient } from '@secsvc/client';
import { unwrap } from '../../api/errors';
import { pageRequest, type LogFilter, type TimeWindow } from './filter';

/** An entry of a page: the list form, with the search's highlights when it came from a search. */
export type Entry = Schemas['LogListItem'] & { highlights?: Record<string, string> };

export interface EntryPage {
  entries: Entry[];
  pagination: { hasMore: boolean; nextCursor?: string };
  /** search: every match in the window, and how long the search took. */
  totalHits?: number;
  searchTimeMs?: number;
}

export async function loadPage(api: SecsvcClient, filter: LogFilter, window: TimeWindow, limit: number, cursor?: string): Promise<EntryPage> {
  const req = pageRequest(filter, window, limit, cursor);
  if (req.kind === 'search') {
    const r = unwrap(await api.POST('/v1/logs/search', { body: req.body }));
    return { entries: r.data, pagination: r.pagination, totalHits: r.meta.totalHits, searchTimeMs: r.meta.searchTimeMs };
  }
  const r = unwrap(await api.GET('/v1/logs', { params: { query: req.query } }));
  return { entries: r.data, pagination: r.pagination };
}

/** `2025-01-31T14:05:59.123Z` → `2025-01-31 14:05:59 UTC` (the list), or with milliseconds (an entry). */
export function formatInstant(iso: string, ms = false): string {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.toISOString().slice(0, ms ? 23 : 19).replace('T', ' ')} UTC`;
}
