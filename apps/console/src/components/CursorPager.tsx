// A list read a page at a time with the API's cursors (pagination.nextCursor), with previous/next buttons: the
// cursors of the pages before the current one are kept, so "previous" goes back without the API's help.
import { useState } from 'react';
import type { Schemas } from '@secsvc/client';
import { useLoad, type Loaded } from '../hooks';

export interface Pages {
  number: number;
  loading: boolean;
  hasPrevious: boolean;
  hasNext: boolean;
  previous: () => void;
  next: () => void;
}

/** The query of a list's page: `limit` entries from `cursor` (none: the first page). */
export const pageQuery = (cursor: string | undefined, limit = 20) => ({ limit, ...(cursor ? { cursor } : {}) });

/** Loads the page of `load(cursor)` for `key`; moving to another key should remount the caller (a React key). */
export function useCursorPages<P extends { pagination: Schemas['Pagination'] }>(key: string, load: (cursor: string | undefined) => Promise<P>): { page: Loaded<P>; pages: Pages } {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = useLoad(`${key}|${cursor ?? ''}`, () => load(cursor));
  return {
    page,
    pages: {
      number: cursors.length + 1,
      loading: page.loading,
      hasPrevious: cursors.length > 0,
      hasNext: !!page.data?.pagination.hasMore,
      previous: () => setCursors((c) => c.slice(0, -1)),
      next: () => {
        const n = page.data?.pagination.nextCursor;
        if (n) setCursors((c) => [...c, n]);
      },
    },
  };
}

export function Pager({ label, pages }: { label: string; pages: Pages }) {
  return (
    <nav className="pager" aria-label={label}>
      <button type="button" className="button" disabled={!pages.hasPrevious || pages.loading} onClick={pages.previous}>
        Previous page
      </button>
      <span aria-live="polite">Page {pages.number}</span>
      <button type="button" className="button" disabled={!pages.hasNext || pages.loading} onClick={pages.next}>
        Next page
      </button>
    </nav>
  );
}
