import type { audit } from '@secsvc/proto';
import { eventFromRow, signDownloadToken, type ChainVerdict, type Checkpoint, type ExportJob, type ExportManifest, type LogRow } from '@secsvc/audit-store';

// The answers of the audit RPCs as their protobuf messages.

export function toLogEntry(row: LogRow, highlights: Record<string, string> = {}): audit.LogEntry {
  const { event, location } = eventFromRow(row);
  return { event, location, highlights };
}

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

export function toLogsVerdict(verdict: ChainVerdict, last: Checkpoint | undefined): audit.LogsVerdict {
  return {
    intact: verdict.intact,
    from: verdict.from,
    to: verdict.to,
    entriesChecked: verdict.entriesChecked,
    checkpointsChecked: verdict.checkpointsChecked,
    headPosition: verdict.head.position,
    headHash: verdict.head.hash,
    firstBreak: verdict.firstBreak && { position: verdict.firstBreak.position, id: verdict.firstBreak.id ?? '', reason: verdict.firstBreak.reason },
    lastCheckpoint: last && { position: last.position, hash: last.hash, signedAt: last.signedAt, kid: last.kid, signature: last.signature },
  };
}
