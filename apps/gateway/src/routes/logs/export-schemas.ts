import type { audit } from '@secsvc/proto';
import { z } from 'zod';

const timestamp = z.string().describe('ISO 8601 UTC');

export const exportStatus = z.enum(['processing', 'completed', 'failed', 'expired']);

/** The SPEC "Log export" resource, as far as its state shows it. */
export const logExport = z.object({
  exportId: z.string().describe('exp_<id>'),
  status: exportStatus,
  format: z.enum(['json', 'csv', 'ndjson']),
  estimatedRecords: z.number().int().describe('a fast count of the matching entries when the export was created'),
  createdAt: timestamp,
  processedRecords: z.number().int().optional().describe('processing: entries written so far'),
  percent: z.number().int().min(0).max(100).optional().describe('processing: progress against the estimate (at most 99 until completed)'),
  completedAt: timestamp.optional().describe('completed (or failed): when it ended'),
  totalRecords: z.number().int().optional(),
  fileSizeBytes: z.number().int().optional(),
  sha256: z.string().optional().describe('hex SHA-256 of the file'),
  downloadUrl: z.string().optional().describe('{DOWNLOAD_BASE_URL}/<exportId>.<format>?token=<signed token>'),
  expiresAt: timestamp.optional().describe('when the link and the file expire'),
  error: z.object({ code: z.string(), message: z.string() }).optional().describe('failed: why'),
  manifest: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('completed: the file\'s manifest (sha256, size, records, filters, the last signed checkpoint), signed with the key of GET /v1/logs/keys; check it offline with scripts/verify-export.js'),
});

export type LogExport = z.infer<typeof logExport>;

/** The creation answer: the SPEC's five fields. */
export function createdForm(e: audit.Export): LogExport {
  return { exportId: e.id, status: e.status as LogExport['status'], format: e.format as LogExport['format'], estimatedRecords: e.estimatedRecords, createdAt: e.createdAt! };
}

/** The current state: progress while processing; file, digest and link once completed; the error once failed. */
export function stateForm(e: audit.Export, downloadBaseUrl: string): LogExport {
  const base = createdForm(e);
  switch (e.status) {
    case 'processing':
      return { ...base, processedRecords: e.processedRecords, percent: e.estimatedRecords > 0 ? Math.min(99, Math.floor((e.processedRecords * 100) / e.estimatedRecords)) : 0 };
    case 'completed':
      return {
        ...base,
        completedAt: e.completedAt,
        totalRecords: e.totalRecords,
        fileSizeBytes: e.fileSizeBytes,
        sha256: e.sha256,
        downloadUrl: `${downloadBaseUrl}/${e.id}.${e.format}?token=${encodeURIComponent(e.downloadToken)}`,
        expiresAt: e.expiresAt,
        ...(e.manifestJson && { manifest: JSON.parse(e.manifestJson) as Record<string, unknown> }),
      };
    case 'failed':
      return { ...base, completedAt: e.completedAt, error: e.error ?? { code: 'export_failed', message: 'The export failed' } };
    default:
      // expired: the file is gone; the totals stay for the record.
      return { ...base, completedAt: e.completedAt, totalRecords: e.totalRecords, fileSizeBytes: e.fileSizeBytes, expiresAt: e.expiresAt };
  }
}
