import { Metadata, type ClientReadableStream } from '@grpc/grpc-js';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { audit } from '@secsvc/proto';
import { AppError, fromGrpcError } from '@secsvc/shared';
import { requestOrigin } from './http/origin';

/** The audit service's DownloadExport stream (a port, so tests can hand in their own). */
export type DownloadSource = (req: audit.DownloadExportRequest, requestId: string, traceparent?: string) => ClientReadableStream<audit.DownloadChunk>;

const FILE = /^(exp_[0-9a-z]{26})\.(json|csv|ndjson)$/;

/** Writes a chunk, waiting for the socket to drain when its buffer is full. */
function write(res: Response, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (res.write(chunk)) return resolve();
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      return res.destroyed ? reject(new Error('client went away')) : resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/**
 * The download host (`DOWNLOAD_BASE_URL`): GET or HEAD `/<exportId>.<format>?token=...`. No API key: the
 * signed token is the credential (checked by the audit service, which streams the file). Answers with
 * Content-Length, Content-Type, Content-Disposition and Accept-Ranges; one `Range: bytes=...` gets a 206 with
 * Content-Range; a range past the end a 416. Invalid, tampered or expired links are 403 in the error shape
 * with no bytes.
 */
export function downloadRouter(open: DownloadSource): express.Router {
  const router = express.Router();
  const handler = (req: Request, res: Response, next: NextFunction): void => {
    const m = FILE.exec(String(req.params.file));
    if (!m) return next(AppError.notFound('Export file'));
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    if (!token || token.length > 200) return next(new AppError('forbidden', 'The download link is invalid'));
    const call = open(
      { id: m[1]!, format: m[2]!, token, range: req.get('range') ?? '', headOnly: req.method === 'HEAD', clientIp: req.ip ?? '', userAgent: requestOrigin(req).userAgent },
      req.requestId,
      req.traceparent,
    );
    res.once('close', () => call.cancel());
    void (async () => {
      let started = false;
      try {
        for await (const msg of call as AsyncIterable<audit.DownloadChunk>) {
          if (msg.head) {
            const h = msg.head;
            if (h.unsatisfiable) {
              res.setHeader('Content-Range', `bytes */${h.size}`);
              throw new AppError('range_not_satisfiable', `The range is beyond the end of the file (${h.size} bytes)`);
            }
            res.status(h.partial ? 206 : 200);
            res.setHeader('Content-Type', h.contentType);
            res.setHeader('Content-Length', String(h.size === 0 ? 0 : h.end - h.start + 1));
            res.setHeader('Content-Disposition', `attachment; filename="${h.filename}"`);
            res.setHeader('Accept-Ranges', 'bytes');
            res.setHeader('Cache-Control', 'private, no-store');
            res.setHeader('X-Content-Type-Options', 'nosniff');
            if (h.sha256) res.setHeader('ETag', `"${h.sha256}"`);
            if (h.partial) res.setHeader('Content-Range', `bytes ${h.start}-${h.end}/${h.size}`);
            res.flushHeaders();
            started = true;
          } else if (msg.data && started) {
            await write(res, msg.data);
          }
        }
        if (!started) throw new AppError('internal_error', 'The download produced no head');
        res.end();
      } catch (err) {
        if (started || res.headersSent) return void res.destroy();
        next(err instanceof AppError ? err : fromGrpcError(err));
      }
    })();
  };
  router.get('/:file', handler);
  router.head('/:file', handler);
  return router;
}

/** DownloadExport calls on the audit service's client, carrying the request id and trace context. No deadline: files can be large. */
export function auditDownloadSource(client: Pick<audit.AuditServiceClient, 'downloadExport'>): DownloadSource {
  return (req, requestId, traceparent) => {
    const md = new Metadata();
    md.set('x-request-id', requestId);
    if (traceparent) md.set('traceparent', traceparent);
    return client.downloadExport(req, md);
  };
}
