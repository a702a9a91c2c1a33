import type { audit } from '@secsvc/proto';
import { logQueries, type AuditContext } from '../context';
import { toLogEntry } from './messages';

export const getLog = (ctx: AuditContext) => {
  const logs = logQueries(ctx);
  return async (req: audit.GetLogRequest): Promise<audit.LogEntry> => toLogEntry(await logs.get(req));
};
