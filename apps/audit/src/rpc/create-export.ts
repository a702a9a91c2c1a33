import type { audit } from '@secsvc/proto';
import { callerOf, traceIdOf, type CallContext } from '@secsvc/shared';
import { exportService, type ExportContext } from '../export-context';
import { toExport } from './messages';

/** POST /logs/export: a new job for a worker, with the estimate of its size (log.export.created). */
export const createExport = (ctx: ExportContext) => {
  const service = exportService(ctx);
  return async (req: audit.CreateExportRequest, call: CallContext): Promise<audit.Export> =>
    toExport(await service.create(req, { requestedBy: callerOf(call), traceId: traceIdOf(call) }), ctx.secret);
};
