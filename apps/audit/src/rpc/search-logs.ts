import type { audit } from '@secsvc/proto';
import { logQueries, type AuditContext } from '../context';
import { toLogEntry } from './messages';

/** Full-text search: the hits newest first with their highlights, and the total number of hits. */
export const searchLogs = (ctx: AuditContext) => {
  const logs = logQueries(ctx);
  return async (req: audit.SearchLogsRequest): Promise<audit.SearchLogsResponse> => {
    const found = await logs.search(req);
    return {
      entries: found.hits.map((h) => toLogEntry(h.row, h.highlights)),
      totalHits: found.totalHits,
      searchTimeMs: found.searchTimeMs,
      hasMore: found.hasMore,
      nextCursor: found.nextCursor,
    };
  };
};
