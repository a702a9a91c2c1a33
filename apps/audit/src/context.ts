import { LogQueries, type AuditChain, type LogStore } from '@secsvc/audit-store';
import type { Logger } from '@secsvc/shared';

export interface AuditContext {
  store: LogStore;
  /** The hash chain of the log (tamper evidence); absent in tests that only read. */
  chain?: AuditChain;
  /** SERVER_SECRET signs list cursors. */
  secret: string;
  logger: Logger;
}

/** The log reads (list, search, get) over the context's store. */
export const logQueries = (ctx: AuditContext): LogQueries => new LogQueries(ctx.store, ctx.secret);
