import type { audit } from '@secsvc/proto';
import { exportService, type ExportContext } from '../export-context';
import { toExport } from './messages';

/** GET /logs/export/{id}: the job's current state, in the caller's environment only. */
export const getExport = (ctx: ExportContext) => {
  const service = exportService(ctx);
  return async (req: audit.GetExportRequest): Promise<audit.Export> => {
    const { job, manifest } = await service.status(req);
    return toExport(job, ctx.secret, manifest);
  };
};
