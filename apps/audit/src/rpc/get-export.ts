import type { audit } from '@secsvc/proto';
import { signExportManifest } from '@secsvc/audit-store';
import { AppError, environmentOf, isId } from '@secsvc/shared';
import type { ExportContext } from '../export-context';
import { toExport } from './exports';

/** GET /logs/export/{id}: the job's current state, in the caller's environment only. */
export const getExport =
  (ctx: ExportContext) =>
  async (req: audit.GetExportRequest): Promise<audit.Export> => {
    const environment = environmentOf(req.environment);
    const job = isId('exp', req.id) ? await ctx.exports.jobs.get(environment, req.id) : undefined;
    if (!job) throw AppError.notFound('Export');
    if (job.status !== 'completed' || !ctx.chain || !job.completedAt) return toExport(job, ctx.secret);
    // Signed on each read from what the job recorded (Ed25519 is deterministic: the same manifest every time).
    const manifest = signExportManifest(ctx.chain.key, {
      exportId: job.id,
      environment: job.environment,
      format: job.format,
      from: job.from,
      to: job.to,
      events: job.events,
      query: job.query,
      file: { sha256: job.sha256 ?? '', sizeBytes: job.fileSizeBytes ?? 0, records: job.totalRecords ?? 0 },
      positions: job.firstPosition && job.lastPosition ? { first: job.firstPosition, last: job.lastPosition } : null,
      completedAt: job.completedAt,
      checkpoint: (await ctx.chain.checkpointAt(environment, new Date(job.completedAt))) ?? null,
    });
    return toExport(job, ctx.secret, manifest);
  };
