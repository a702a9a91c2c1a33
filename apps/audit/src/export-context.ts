import { ExportService, exportPages, type ClickHouseClient, type ExportJobs } from '@secsvc/audit-store';
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

/** The export use cases over the context's store, jobs, files and ClickHouse. */
export const exportService = (ctx: ExportContext): ExportService =>
  new ExportService({
    store: ctx.store,
    jobs: ctx.exports.jobs,
    objects: ctx.exports.objects,
    chain: ctx.chain,
    pages: (spec, format, pageSize, maxRunBytes) => exportPages(ctx.ch, spec, format, pageSize, maxRunBytes),
    secret: ctx.secret,
    maxRangeDays: ctx.exports.maxRangeDays,
    pageSize: ctx.exports.pageSize,
  });
