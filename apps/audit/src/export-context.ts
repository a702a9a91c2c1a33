import type { ClickHouseClient, ExportJobs } from '@secsvc/audit-store';
import type { ObjectStore } from '@secsvc/shared';
import type { AuditContext } from './context';

/** What the export RPCs need besides the log reads: the job repository, the files, ClickHouse for streaming. */
export interface ExportContext extends AuditContext {
  ch: ClickHouseClient;
  exports: {
    jobs: ExportJobs;
    objects: ObjectStore;
    /** Longest from..to an export may span. */
    maxRangeDays: number;
    /** Rows per ClickHouse page when streaming to a worker. */
    pageSize: number;
  };
}
