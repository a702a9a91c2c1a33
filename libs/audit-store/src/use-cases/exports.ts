import type { Readable } from 'node:stream';
import { AppError, environmentOf, isId, newId, parseByteRange, type ObjectStore } from '@secsvc/shared';
import { signExportManifest, type AuditChain, type ExportManifest } from '../chain';
import type { ExportFormat, ExportJob, ExportJobs, ExportSpec, Requester } from '../export-jobs';
import { exportCriteria, type RenderedPage } from '../export-source';
import { verifyDownloadToken } from '../export-token';
import type { LogStore } from '../store';
import { exportSpecOf, type ExportRequest } from './requests';

/** What the export use cases work with (the real adapters in the audit service, fakes in unit tests). */
export interface ExportPorts {
  /** The log, for the estimate of a new export. */
  store: Pick<LogStore, 'count'>;
  jobs: Pick<ExportJobs, 'create' | 'get' | 'byId' | 'recordDownload'>;
  /** Where the export files are (written by the worker, read for downloads). */
  objects: Pick<ObjectStore, 'stat' | 'read'>;
  /** The hash chain, whose key signs the manifests of completed exports; without it, none is signed. */
  chain?: Pick<AuditChain, 'key' | 'checkpointAt'>;
  /**
   * The rows of an export, newest first, rendered in its format, in keyset pages, each also cut into runs of
   * whole rows of at most ~maxRunBytes (exportPages over ClickHouse).
   */
  pages: (spec: ExportSpec, format: ExportFormat, pageSize: number, maxRunBytes: number) => AsyncIterable<{ runs: RenderedPage[] }>;
  /** SERVER_SECRET: checks download tokens. */
  secret: string;
  /** Longest from..to an export may span. */
  maxRangeDays: number;
  /** Rows per page when a request names none. */
  pageSize: number;
}

/** A completed export a download token opened, and the bytes of it to serve. */
export interface ExportDownload {
  job: ExportJob & { objectKey: string };
  size: number;
  /** Both inclusive: the one byte range asked for, or the whole file. */
  start: number;
  end: number;
  /** True when one byte range was asked for (and can be served). */
  partial: boolean;
  /** The range asked for lies past the end of the file. */
  unsatisfiable: boolean;
}

const refused = () => new AppError('forbidden', 'The download link is invalid');

/** The largest page a request may ask for. */
const MAX_PAGE_SIZE = 100_000;

/**
 * The export use cases: creating a job, its status (with the signed manifest once completed), the rows a
 * worker writes, and downloads of the file by link.
 */
export class ExportService {
  constructor(private readonly ports: ExportPorts) {}

  /**
   * Validates, counts the matching entries (the estimate: one count() over the table's key range and text
   * index) and stores the job, which a worker picks up (log.export.created).
   */
  async create(req: ExportRequest, by: { requestedBy: Requester; traceId: string }): Promise<ExportJob> {
    const spec = exportSpecOf(req, this.ports.maxRangeDays);
    const { filters, clause } = exportCriteria(spec);
    const estimatedRecords = await this.ports.store.count(filters, clause);
    return this.ports.jobs.create({
      ...spec,
      id: newId('exp'),
      format: req.format as ExportFormat,
      estimatedRecords,
      requestedBy: by.requestedBy,
      traceId: by.traceId,
    });
  }

  /** The job's current state, in the caller's environment only; completed, with its signed manifest. */
  async status(req: { environment: string; id: string }): Promise<{ job: ExportJob; manifest?: ExportManifest }> {
    const environment = environmentOf(req.environment);
    const job = isId('exp', req.id) ? await this.ports.jobs.get(environment, req.id) : undefined;
    if (!job) throw AppError.notFound('Export');
    const chain = this.ports.chain;
    if (job.status !== 'completed' || !chain || !job.completedAt) return { job };
    // Signed on each read from what the job recorded (Ed25519 is deterministic: the same manifest every time).
    const manifest = signExportManifest(chain.key, {
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
      checkpoint: (await chain.checkpointAt(environment, new Date(job.completedAt))) ?? null,
    });
    return { job, manifest };
  }

  /**
   * The rows of an export rendered in `format`, a keyset page at a time (`pageSize` rows; 0: the configured
   * size): each page as runs of whole rows of at most ~`maxBytes`, with their row counts. Pages are read as
   * they are taken (and the next one rendered meanwhile), so a slow taker holds two pages in memory.
   */
  async *rowChunks(req: ExportRequest & { pageSize: number; format: string }, maxBytes: number): AsyncGenerator<RenderedPage[]> {
    const spec = exportSpecOf(req); // format included: a worker must name one
    const format = req.format as ExportFormat;
    const pageSize = req.pageSize > 0 ? Math.min(req.pageSize, MAX_PAGE_SIZE) : this.ports.pageSize;
    for await (const page of this.ports.pages(spec, format, pageSize, maxBytes)) yield page.runs;
  }

  /**
   * The completed export a download token opens, with the bytes to serve (one byte range when asked), or a
   * 403 (invalid or expired link) / 404 (no such file). The token must be genuine, unexpired and bound to
   * this export, format and environment.
   */
  async openDownload(req: { id: string; format: string; token: string; range: string }): Promise<ExportDownload> {
    const job = await this.authorize(req);
    const stat = await this.ports.objects.stat(job.objectKey);
    if (!stat) throw AppError.notFound('Export file');
    const size = stat.size;
    const range = parseByteRange(req.range || undefined, size);
    const download: ExportDownload = { job, size, start: 0, end: size - 1, partial: false, unsatisfiable: range === 'unsatisfiable' };
    if (range && range !== 'unsatisfiable') Object.assign(download, { start: range.start, end: range.end, partial: true });
    return download;
  }

  /** The bytes of an opened download (its range, or the whole file). */
  read(download: ExportDownload): Promise<Readable> {
    return this.ports.objects.read(download.job.objectKey, download.partial ? { start: download.start, end: download.end } : undefined);
  }

  /** A download from the first byte is recorded as log.export.downloaded, by the link's (anonymous) holder. */
  async recordDownload(download: ExportDownload, holder: { ip: string; userAgent: string }, traceId: string): Promise<void> {
    if (download.start !== 0) return;
    await this.ports.jobs.recordDownload(download.job, { actor: { type: 'anonymous' }, context: holder, authMethod: 'download_token' }, traceId, {
      start: download.start,
      end: download.end,
      size: download.size,
    });
  }

  private async authorize(req: { id: string; format: string; token: string }): Promise<ExportJob & { objectKey: string }> {
    // An unknown id and a wrong token look the same: a link names no export unless it is genuine.
    const job = isId('exp', req.id) ? await this.ports.jobs.byId(req.id) : undefined;
    if (!job) throw refused();
    const check = verifyDownloadToken(req.token, { exportId: job.id, format: req.format, environment: job.environment }, this.ports.secret);
    if (!check.ok) throw check.reason === 'expired' ? new AppError('forbidden', 'The download link has expired') : refused();
    if (job.format !== req.format) throw refused();
    if (job.status === 'expired') throw new AppError('forbidden', 'The download link has expired');
    if (job.status !== 'completed' || !job.objectKey) throw AppError.notFound('Export file');
    return job as ExportJob & { objectKey: string };
  }
}
