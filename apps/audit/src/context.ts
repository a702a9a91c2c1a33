import type { audit } from '@secsvc/proto';
import { eventFromRow, type AuditChain, type LogRow, type LogStore } from '@secsvc/audit-store';
import type { Logger } from '@secsvc/shared';

export { environmentOf } from '@secsvc/shared';

export interface AuditContext {
  store: LogStore;
  /** The hash chain of the log (tamper evidence); absent in tests that only read. */
  chain?: AuditChain;
  /** SERVER_SECRET signs list cursors. */
  secret: string;
  logger: Logger;
}

export function toLogEntry(row: LogRow, highlights: Record<string, string> = {}): audit.LogEntry {
  const { event, location } = eventFromRow(row);
  return { event, location, highlights };
}
