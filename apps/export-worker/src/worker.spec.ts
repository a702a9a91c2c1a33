/** The worker's domain logic over in-memory fakes of its ports (job queue, log source) and a temp-dir object store. */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { rowFromEvent, type ClaimedJob, type CompletedFile, type ExportJob, type LogRow } from '@secsvc/audit-store';
import { AppError, createLocalObjectStore, createLogger, type ObjectStore } from '@secsvc/shared';
import type { LogSource } from './log-source';
import { ExportWorker, objectKeyOf, type JobQueue, type WorkerSettings } from './worker';

const logger = createLogger('worker-spec', 'silent');

/** Jobs in memory, with the repository's rules: one holder per job, writes only under the current lease. */
class FakeQueue implements JobQueue {
  jobs = new Map<string, ExportJob & { lease?: string; leaseUntil?: number }>();
  completed: string[] = [];
  heartbeats = 0;
  private n = 0;
  add(over: Partial<ExportJob> = {}) {
    const id = `exp_01jd00000000000000000000${String(++this.n).padStart(2, '0')}`;
    this.jobs.set(id, { id, environment: 'live', status: 'processing', format: 'csv', from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z', events: [], query: '', estimatedRecords: 0, processedRecords: 0, attempts: 0, requestedBy: { actor: { type: 'api_key' }, context: { ip: '', userAgent: '' }, authMethod: 'api_key' }, traceId: 'req_1', createdAt: new Date().toISOString(), ...over });
    return id;
  }
  async claim(_w: string, leaseMs: number, max: number) {
    for (const j of this.jobs.values()) {
      if (j.status === 'processing' && j.attempts < max && (!j.leaseUntil || j.leaseUntil < Date.now())) {
        j.attempts++;
        j.lease = `t${j.attempts}`;
        j.leaseUntil = Date.now() + leaseMs;
        return { ...j, leaseToken: j.lease } as ClaimedJob;
      }
    }
    return undefined;
  }
  async heartbeat(job: ClaimedJob, processed: number) {
    this.heartbeats++;
    const j = this.jobs.get(job.id)!;
    if (j.lease !== job.leaseToken) return false;
    j.processedRecords = processed;
    return true;
  }
  async complete(job: ClaimedJob, file: CompletedFile) {
    const j = this.jobs.get(job.id)!;
    if (j.lease !== job.leaseToken || j.status !== 'processing') return false;
    Object.assign(j, { status: 'completed', totalRecords: file.totalRecords, fileSizeBytes: file.fileSizeBytes, sha256: file.sha256, objectKey: file.objectKey, expiresAt: new Date(Date.now() + file.linkTtlMs).toISOString(), lease: undefined });
    this.completed.push(job.id);
    return true;
  }
  async attemptFailed(job: ClaimedJob, error: { code: string; message: string }, max: number, _retryInMs: number, notCounted = false) {
    const j = this.jobs.get(job.id)!;
    if (j.lease !== job.leaseToken) return undefined;
    if (notCounted) j.attempts--;
    Object.assign(j, { errorCode: error.code, errorMessage: error.message, lease: undefined, leaseUntil: undefined, status: j.attempts >= max ? 'failed' : 'processing' });
    return j.status;
  }
  async release(job: ClaimedJob) {
    const j = this.jobs.get(job.id)!;
    if (j.lease === job.leaseToken) Object.assign(j, { lease: undefined, leaseUntil: undefined, attempts: j.attempts - 1 });
  }
  async failExhausted() {
    return 0;
  }
  async expireDue(remove: (k: string) => Promise<void>) {
    let n = 0;
    for (const j of this.jobs.values()) {
      if (j.status === 'completed' && Date.parse(j.expiresAt!) <= Date.now()) {
        await remove(j.objectKey!);
        j.status = 'expired';
        n++;
      }
    }
    return n;
  }
  async deleteEnded() {
    return 0;
  }
  /** Another worker takes the job over (as if this one's lease had lapsed). */
  steal(id: string) {
    this.jobs.get(id)!.lease = 'stolen';
  }
}

const rows = (n: number): LogRow[] =>
  Array.from({ length: n }, (_, i) =>
    rowFromEvent({ id: `log_${i}`, environment: 'live', type: 'user.login', timestamp: '2026-11-01T12:00:00.000Z', actor: { id: 'user_1', type: 'user' }, context: { ip: '10.0.0.1', userAgent: 'jest' }, result: 'success', traceId: 'req', metadataJson: '{}' }, undefined),
  );

/** A source of `n` rows in batches of 100, whose behaviour between batches a test may change. */
function source(n: number, between: (batch: number) => Promise<void> = async () => undefined): LogSource {
  return {
    kind: 'clickhouse',
    async *rows(_spec, signal) {
      const all = rows(n);
      for (let b = 0; b * 100 < n; b++) {
        await between(b);
        signal.throwIfAborted();
        yield all.slice(b * 100, (b + 1) * 100);
      }
    },
  };
}

let dir: string;
let objects: ObjectStore;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-worker-spec-'));
  objects = createLocalObjectStore(dir);
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

const settings: WorkerSettings = { workerId: 'w1', leaseMs: 60_000, heartbeatMs: 5, maxAttempts: 3, retryDelayMs: 0, linkTtlMs: 3_600_000, concurrency: 1, pollMs: 10, cleanupIntervalMs: 60_000, sweepAfterMs: 3_600_000, jobRetentionDays: 30 };

test('a job is claimed, written with its row count, size and digest, and completed with a link lifetime', async () => {
  const q = new FakeQueue();
  const id = q.add({ estimatedRecords: 250 });
  const worker = new ExportWorker(q, source(250, () => new Promise((r) => setTimeout(r, 10))), objects, settings, logger);
  expect(await worker.runOnce()).toBe(true);
  expect(await worker.runOnce()).toBe(false);
  const job = q.jobs.get(id)!;
  expect(job).toMatchObject({ status: 'completed', totalRecords: 250, objectKey: `live/${id}/1.csv` });
  expect(q.heartbeats).toBeGreaterThan(0);
  expect(await objects.stat(job.objectKey!)).toEqual({ size: job.fileSizeBytes });
  expect(Date.parse(job.expiresAt!) - Date.now()).toBeGreaterThan(3_500_000);
});

test('a failing source is retried; after maxAttempts the job is failed with a public error, and no file is left', async () => {
  const q = new FakeQueue();
  const id = q.add();
  const broken = source(500, async (b) => {
    if (b === 2) throw new Error('socket hang up: SELECT secret FROM internals');
  });
  const worker = new ExportWorker(q, broken, objects, settings, logger);
  for (let i = 0; i < 3; i++) expect(await worker.runOnce()).toBe(true);
  expect(await worker.runOnce()).toBe(false);
  expect(q.jobs.get(id)).toMatchObject({ status: 'failed', attempts: 3, errorCode: 'export_failed', errorMessage: 'The export could not be written' });
  expect(await objects.sweep(-60_000)).toBe(0); // every partial file was dropped
});

test('a log store that is unavailable uses no attempt: the job waits for it however often it is down, then completes', async () => {
  const q = new FakeQueue();
  const id = q.add();
  let outages = 5;
  const flaky = source(300, async (b) => {
    if (b === 1 && outages-- > 0) throw new AppError('unavailable', 'A backing service is unavailable');
  });
  const worker = new ExportWorker(q, flaky, objects, settings, logger);
  for (let i = 0; i < 6; i++) expect(await worker.runOnce()).toBe(true);
  expect(q.jobs.get(id)).toMatchObject({ status: 'completed', attempts: 1, totalRecords: 300 });
});

test('a query the log store refuses fails the job at once (no retries)', async () => {
  const q = new FakeQueue();
  const id = q.add();
  const refusing: LogSource = { kind: 'audit-rpc', rows: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(AppError.field('query', 'unclosed quote')) }) }) };
  await new ExportWorker(q, refusing, objects, settings, logger).runOnce();
  expect(q.jobs.get(id)).toMatchObject({ status: 'failed', attempts: 1, errorCode: 'invalid_request' });
});

test('a worker that loses its lease stops writing and never completes; the new holder completes once', async () => {
  const q = new FakeQueue();
  const id = q.add();
  const slow = source(1_000, async (b) => {
    if (b === 3) q.steal(id);
    await new Promise((r) => setTimeout(r, 15));
  });
  await new ExportWorker(q, slow, objects, settings, logger).runOnce();
  expect(q.completed).toEqual([]);
  expect(q.jobs.get(id)!.status).toBe('processing');
  // The other worker's turn:
  q.jobs.get(id)!.lease = undefined;
  q.jobs.get(id)!.leaseUntil = undefined;
  await new ExportWorker(q, source(1_000), objects, { ...settings, workerId: 'w2' }, logger).runOnce();
  expect(q.completed).toEqual([id]);
});

test('a file finished after the lease was lost is deleted (the job counts the other attempt)', async () => {
  const q = new FakeQueue();
  const id = q.add();
  let claimed: ClaimedJob | undefined;
  const origClaim = q.claim.bind(q);
  q.claim = async (...a) => (claimed = await origClaim(...a));
  const stealAtEnd = source(200, async (b) => void (b === 1 && q.steal(id)));
  await new ExportWorker(q, stealAtEnd, objects, { ...settings, heartbeatMs: 60_000 }, logger).runOnce();
  expect(q.completed).toEqual([]);
  expect(await objects.stat(objectKeyOf(claimed!))).toBeUndefined();
});

test('stop() aborts a running export and releases the job without using an attempt', async () => {
  const q = new FakeQueue();
  const id = q.add();
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const endless = source(1_000_000, async () => {
    started();
    await new Promise((r) => setTimeout(r, 5));
  });
  const worker = new ExportWorker(q, endless, objects, { ...settings, pollMs: 10 }, logger);
  worker.start();
  await running;
  await worker.stop();
  expect(q.jobs.get(id)).toMatchObject({ status: 'processing', attempts: 0 });
  expect(q.jobs.get(id)!.lease).toBeUndefined();
});

test('cleanup deletes expired files and marks their jobs expired', async () => {
  const q = new FakeQueue();
  const id = q.add();
  const worker = new ExportWorker(q, source(10), objects, { ...settings, linkTtlMs: -1 }, logger);
  await worker.runOnce();
  const key = q.jobs.get(id)!.objectKey!;
  expect(await objects.stat(key)).toBeDefined();
  expect(await worker.cleanupOnce()).toMatchObject({ expired: 1 });
  expect(await objects.stat(key)).toBeUndefined();
  expect(q.jobs.get(id)!.status).toBe('expired');
});
