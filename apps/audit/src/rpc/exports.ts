import type { audit } from '@secsvc/proto';
import { signDownloadToken, type ExportJob, type ExportManifest } from '@secsvc/audit-store';

/** A job as the Export message: progress while processing, the file, its signed link and manifest once completed. */
export function toExport(job: ExportJob, secret: string, manifest?: ExportManifest): audit.Export {
  const completed = job.status === 'completed';
  return {
    id: job.id,
    environment: job.environment,
    status: job.status,
    format: job.format,
    estimatedRecords: job.estimatedRecords,
    processedRecords: job.processedRecords,
    totalRecords: job.totalRecords ?? 0,
    fileSizeBytes: job.fileSizeBytes ?? 0,
    sha256: job.sha256 ?? '',
    createdAt: job.createdAt,
    completedAt: job.completedAt,
    error: job.status === 'failed' ? { code: job.errorCode ?? 'export_failed', message: job.errorMessage ?? 'The export failed' } : undefined,
    expiresAt: job.expiresAt,
    downloadToken:
      completed && job.expiresAt
        ? signDownloadToken({ exportId: job.id, format: job.format, environment: job.environment, expiresAt: new Date(job.expiresAt) }, secret)
        : '',
    manifestJson: completed && manifest ? JSON.stringify(manifest) : '',
  };
}
