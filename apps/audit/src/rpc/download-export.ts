import type { audit } from '@secsvc/proto';
import { traceIdOf, type BulkServerStream, type CallContext } from '@secsvc/shared';
import { exportService, type ExportContext } from '../export-context';

export const CONTENT_TYPES: Record<string, string> = {
  csv: 'text/csv; charset=utf-8',
  json: 'application/json; charset=utf-8',
  ndjson: 'application/x-ndjson; charset=utf-8',
};

/**
 * A completed export's bytes for the gateway's download host: the token must be genuine, unexpired and
 * bound to this export, format and environment. One byte range is served when asked; the head comes first,
 * then chunks as the object store streams them (each awaiting flow control). A download from the first byte
 * is recorded as log.export.downloaded.
 */
export const downloadExport = (ctx: ExportContext) => {
  const service = exportService(ctx);
  return (req: audit.DownloadExportRequest, call: CallContext, stream: BulkServerStream<audit.DownloadChunk>): void => {
    void (async () => {
      const download = await service.openDownload(req);
      const { job, size } = download;
      const head: audit.DownloadHead = {
        size,
        start: download.start,
        end: download.end,
        partial: download.partial,
        contentType: CONTENT_TYPES[job.format] ?? 'application/octet-stream',
        filename: `${job.id}.${job.format}`,
        sha256: job.sha256 ?? '',
        unsatisfiable: download.unsatisfiable,
      };
      await stream.send({ head });
      if (req.headOnly || head.unsatisfiable || size === 0) return stream.end();
      const body = await service.read(download);
      stream.onClose(() => body.destroy());
      await service.recordDownload(download, { ip: req.clientIp, userAgent: req.userAgent }, traceIdOf(call));
      for await (const chunk of body) {
        if (stream.isClosed()) return;
        await stream.send({ data: chunk as Buffer });
      }
      stream.end();
    })().catch((err: unknown) => stream.fail(err));
  };
};
