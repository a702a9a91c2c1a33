import type { audit } from '@secsvc/proto';
import { logQueries, type AuditContext } from '../context';
import { toLogEntry } from './messages';

/** A newest-first page of the environment's log, narrowed by event kinds, actor, result and time window. */
export const listLogs = (ctx: AuditContext) => {
  const logs = logQueries(ctx);
  return async (req: audit.ListLogsRequest): Promise<audit.ListLogsResponse> => {
    const page = await logs.list(req);
    return { entries: page.rows.map((r) => toLogEntry(r)), hasMore: page.hasMore, nextCursor: page.nextCursor };
  };
};
