import type { audit } from '@secsvc/proto';
import { verifyDownloadToken, type ExportJob } from '@secsvc/audit-store';
import { AppError, isId, parseByteRange, type BulkServerStream, type CallContext } from '@secsvc/shared';
import type { ExportContext } from '../export-context';

export const CONTENT_TYPES: Record<string, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
};

const refused = () => new AppError('forbidden', 'The download link is invalid');

/** The completed export a download token opens, or a 403 (invalid or expired link) / 404 (no such file). */
async function authorize(ctx: ExportContext, req: audit.DownloadExportRequest): Promise<ExportJob & { objectKey: string }> {
  // An unknown id and a wrong token look the same: a link names no export unless it is genuine.
  const job = isId('exp', req.id) ? await ctx.exports.jobs.byId(req.id) : undefined;
  if (!job) throw refused();
  const check = verifyDownloadToken(req.token, { exportId: job.id, format: req.format, environment: job.environment }, ctx.secret);
  if (!check.ok) throw check.reason === 'expired' ? new AppError('forbidden', 'The download link has expired') : refused();
  if (job.format !== req.format) throw refused();
  if (job.status === 'expired') throw new AppError('forbidden', 'The download link has expired');
  if (job.status !== 'completed' || !job.objectKey) throw AppError.notFound('Export file');
  return job as ExportJob & { objectKey: string };
}

/**
 * A completed export's bytes for the gateway's download host: the token must be genuine, unexpired and
 * bound to this export, format and environment. One byte range is served when asked; the head comes first,
 * then chunks as the object store streams them (each awaiting flow control). A download from the first byte
 * is recorded as log.export.downloaded.
 */
export const downloadExport =
  (ctx: ExportContext) =>
  (req: audit.DownloadExportRequest, call: CallContext, stream: BulkServerStream<audit.DownloadChunk>): void => {
    void (async () => {
      const job = await authorize(ctx, req);
      const stat = await ctx.exports.objects.stat(job.objectKey);
      if (!stat) throw AppError.notFound('Export file');
      const size = stat.size;
      const range = parseByteRange(req.range || undefined, size);
      const head: audit.DownloadHead = {
        size,
        start: 0,
        end: size - 1,
        partial: false,
        contentType: CONTENT_TYPES[job.format] ?? 'application/octet-stream',
        filename: `${job.id}.${job.format}`,
        sha256: job.sha256 ?? '',
        unsatisfiable: range === 'unsatisfiable',
      };
      if (range && range !== 'unsatisfiable') Object.assign(head, { start: range.start, end: range.end, partial: true });
      await stream.send({ head });
      if (req.headOnly || head.unsatisfiable || size === 0) return stream.end();
      const body = await ctx.exports.objects.read(job.objectKey, head.partial ? { start: head.start, end: head.end } : undefined);
      stream.onClose(() => body.destroy());
      if (head.start === 0) {
        await ctx.exports.jobs.recordDownload(job, { actor: { type: 'anonymous' }, context: { ip: req.clientIp, userAgent: req.userAgent }, authMethod: 'download_token' }, call.requestId, { start: head.start, end: head.end, size });
      }
      for await (const chunk of body) {
        if (stream.isClosed()) return;
        await stream.send({ data: chunk as Buffer });
      }
      stream.end();
    })().catch((err: unknown) => stream.fail(err));
  };
