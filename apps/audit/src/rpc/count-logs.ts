import type { audit } from '@secsvc/proto';
import { logQueries, type AuditContext } from '../context';

/** Entries per hour (or day), event kind and result that a filter and an optional search query select (a chart's data). */
export const countLogs = (ctx: AuditContext) => {
  const logs = logQueries(ctx);
  return async (req: audit.CountLogsRequest): Promise<audit.LogCounts> => {
    return logs.counts(req);
  };
};
