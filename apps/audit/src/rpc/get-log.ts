import type { audit } from '@secsvc/proto';
import { AppError, isId } from '@secsvc/shared';
import { environmentOf, toLogEntry, type AuditContext } from '../context';

export const getLog =
  (ctx: AuditContext) =>
  async (req: audit.GetLogRequest): Promise<audit.LogEntry> => {
    const environment = environmentOf(req.environment);
    // A malformed id names no entry: the same 404 as an unknown one.
    const row = isId('log', req.id) ? await ctx.store.get(environment, req.id) : undefined;
    if (!row) throw AppError.notFound('Log entry');
    return toLogEntry(row);
  };
