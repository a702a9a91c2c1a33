// What the console shows of an export (GET /v1/logs/export/{id}, docs/api/exports.md): its progress, its
// download link, and the exports started in this tab (the API has no list of exports). Pure parts
// unit-tested in Node (export-state.spec.ts).
import type { Schemas } from '@secsvc/client';

export type LogExport = Schemas['LogExport'];

/** Polling interval while an export is processing. */
export const POLL_MS = 1000;

/** The progress to show: 0–100 (completed is 100; a running export at most 99, as the API says), and a sentence. */
export function progressOf(e: LogExport): { value: number; text: string } {
  switch (e.status) {
    case 'completed':
      return { value: 100, text: `Completed: ${count(e.totalRecords ?? 0)} written` };
    case 'failed':
      return { value: 0, text: `Failed${e.error ? `: ${e.error.message}` : ''}` };
    case 'expired':
      return { value: 100, text: 'Expired: the file was deleted when its link expired' };
    default: {
      const done = e.processedRecords ?? 0;
      const estimate = e.estimatedRecords;
      const value = e.percent ?? (estimate > 0 ? Math.min(99, Math.floor((done / estimate) * 100)) : 0);
      return { value: Math.max(0, Math.min(99, value)), text: `Processing: ${count(done)} of about ${count(estimate)} written` };
    }
  }
}

const count = (n: number) => `${n.toLocaleString('en-US')} ${n === 1 ? 'entry' : 'entries'}`;

/** The download link to put in an href: http(s) only (never javascript: or data:), else undefined. */
export function downloadHref(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const u = new URL(url);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : undefined;
  } catch {
    return undefined;
  }
}

/** The file's name: `<exportId>.<format>`. */
export const fileName = (e: Pick<LogExport, 'exportId' | 'format'>) => `${e.exportId}.${e.format}`;

/** 1234567 → `1.2 MB` (decimal units), 512 → `512 bytes`. */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} ${n === 1 ? 'byte' : 'bytes'}`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let v = n;
  let u = -1;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v.toFixed(v < 10 ? 1 : 0)} ${units[u]}`;
}

/** An export started in this tab: its id and what it was made of. */
export interface StartedExport {
  exportId: string;
  format: string;
  description: string;
  createdAt: string;
}

/** The exports started in this tab, newest first (kept in memory only, like everything of the session). */
export class StartedExports {
  private list: StartedExport[] = [];
  private readonly listeners = new Set<() => void>();
  add(e: StartedExport): void {
    this.list = [e, ...this.list.filter((x) => x.exportId !== e.exportId)];
    this.listeners.forEach((l) => l());
  }
  get(id: string): StartedExport | undefined {
    return this.list.find((e) => e.exportId === id);
  }
  readonly all = (): readonly StartedExport[] => this.list;
  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  };
}

export const startedExports = new StartedExports();
