/** The worker's domain logic over in-memory fakes of its ports (job queue, log source) and a temp-dir object store. */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CSV_COLUMNS, type ClaimedJob, type CompletedFile, type ExportFormat, type ExportJob, type RenderedPage } from '@secsvc/audit-store';
import { AppError, createLocalObjectStore, createLogger, type ObjectStore } from '@secsvc/shared';
import { parseCsv } from '../test/support/csv';
import { rowBinary, type FakeRendered } from '../../../libs/audit-store/test/support/row-binary';
import type { LogSource } from './log-source';
import { ExportWorker, objectKeyOf, type JobQueue, type WorkerSettings } from './worker';

const logger = createLogger('worker-spec', 'silent');

/** Jobs in memory, with the repository's rules: one holder per job, writes only under the current lease. */
class FakeQueue implements JobQueue {
  jobs = new Map<string, ExportJob & { lease?: string; leaseUntil?: number }>();
  completed: string[] = [];
  /** What each completion recorded (the file, its chain positions). */
  files = new Map<string, CompletedFile>();
  heartbeats = 0;
  /** The row counts heartbeats reported, in order. */
  progress: number[] = [];
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
    this.progress.push(processed);
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
    this.files.set(job.id, file);
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

/** Entry i as ClickHouse renders it in `format` (a stand-in: the worker copies entries, it does not read them). */
function entryOf(format: ExportFormat, i: number): FakeRendered {
  const id = `log_${i}`;
  if (format === 'csv') return { id, entry: `${id},2026-11-01T12:00:00.000Z,user.login,user_1,,user,,,,10.0.0.1,"jest, ""quoted""",,,,,,success,req,`, meta: i % 2 ? '{"authMethod":"password","mfaUsed":true,"n":1}' : '{}' };
  // JSON: the entry up to its metadata; the worker ends it with the metadata (or {}) and the closing brace.
  return { id, entry: `{"id":"${id}","n":${i},"metadata":`, meta: i % 2 ? '{"authMethod":"password"}' : 'not json' };
}

/** Chain position of row i: 0 (unchained) for every seventh, else out of order around 1000 + i. */
const seqOf = (i: number) => (i % 7 === 0 ? 0 : 1_000 + (i % 2 ? i : -i));

/** Pages of rows in RowBinary, as exportPages and StreamLogs hand them over. */
const pageOf = (format: ExportFormat, from: number, n: number): RenderedPage => ({
  bytes: rowBinary(Array.from({ length: n }, (_, k) => ({ seq: seqOf(from + k), ms: 1_000 + from + k, ...entryOf(format, from + k) }))),
  count: n,
});

/** A source of `n` rows in batches of 100, whose behaviour between batches a test may change. */
function source(n: number, between: (batch: number) => Promise<void> = async () => undefined, formats: ExportFormat[] = []): LogSource {
  return {
    kind: 'clickhouse',
    async *pages(_spec, format, signal) {
      formats.push(format);
      for (let b = 0; b * 100 < n; b++) {
        await between(b);
        signal.throwIfAborted();
        yield pageOf(format, b * 100, Math.min(100, n - b * 100));
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
  const formats: ExportFormat[] = [];
  const worker = new ExportWorker(q, source(250, () => new Promise((r) => setTimeout(r, 10)), formats), objects, settings, logger);
  expect(await worker.runOnce()).toBe(true);
  expect(await worker.runOnce()).toBe(false);
  const job = q.jobs.get(id)!;
  expect(job).toMatchObject({ status: 'completed', totalRecords: 250, objectKey: `live/${id}/1.csv` });
  expect(formats).toEqual(['csv']); // the source renders in the job's format
  expect(q.heartbeats).toBeGreaterThan(0);
  // progress: whole batches, never backwards, never past the total
  expect(q.progress.length).toBeGreaterThan(0);
  expect(q.progress.every((n, i) => [0, 100, 200, 250].includes(n) && (i === 0 || n >= q.progress[i - 1]!))).toBe(true);
  expect(q.progress.some((n) => n > 0)).toBe(true);
  expect(await objects.stat(job.objectKey!)).toEqual({ size: job.fileSizeBytes });
  expect(Date.parse(job.expiresAt!) - Date.now()).toBeGreaterThan(3_500_000);
  // The file: the header, then each entry as the source rendered it, completed by its metadata cells.
  const body = Buffer.concat(await (await objects.read(job.objectKey!)).toArray()).toString();
  expect(createHash('sha256').update(body).digest('hex')).toBe(job.sha256);
  const [header, ...records] = parseCsv(body);
  expect(header).toEqual([...CSV_COLUMNS]);
  expect(records.map((r) => r[0])).toEqual(Array.from({ length: 250 }, (_, i) => `log_${i}`));
  expect(records.every((r) => r.length === CSV_COLUMNS.length && r[CSV_COLUMNS.indexOf('context.userAgent')] === 'jest, "quoted"')).toBe(true);
  expect(records[1]!.slice(-3)).toEqual(['password', 'true', '{"n":1}']);
  expect(records[0]!.slice(-3)).toEqual(['', '', '']);
});

test('JSON and NDJSON files: the source entries, each ended with its metadata (or {}) and brace, between the frame, in order', async () => {
  const q = new FakeQueue();
  const json = q.add({ format: 'json' });
  const ndjson = q.add({ format: 'ndjson' });
  const empty = q.add({ format: 'json' });
  const formats: ExportFormat[] = [];
  const sizes: Record<string, number> = { [json]: 230, [ndjson]: 230, [empty]: 0 };
  let current = '';
  const origClaim = q.claim.bind(q);
  q.claim = async (...a) => {
    const j = await origClaim(...a);
    if (j) current = j.id;
    return j;
  };
  const perJob: LogSource = { kind: 'clickhouse', pages: (spec, format, signal) => source(sizes[current]!, undefined, formats).pages(spec, format, signal) };
  const worker = new ExportWorker(q, perJob, objects, settings, logger);
  while (await worker.runOnce());
  expect(formats).toEqual(['json', 'ndjson', 'json']);
  const read = async (id: string) => Buffer.concat(await (await objects.read(q.jobs.get(id)!.objectKey!)).toArray()).toString();
  const want = Array.from({ length: 230 }, (_, i) => ({ id: `log_${i}`, n: i, metadata: i % 2 ? { authMethod: 'password' } : {} }));
  const j = await read(json);
  expect(JSON.parse(j)).toEqual(want);
  expect(j.startsWith('[\n{"id":"log_0"')).toBe(true);
  expect(j.endsWith('}\n]\n')).toBe(true);
  const nd = await read(ndjson);
  expect(nd.endsWith('\n')).toBe(true);
  expect(nd.split('\n').slice(0, -1).map((l) => JSON.parse(l) as unknown)).toEqual(want);
  expect(JSON.parse(await read(empty))).toEqual([]);
  expect(q.jobs.get(empty)).toMatchObject({ status: 'completed', totalRecords: 0 });
});

test('the file records the lowest and highest chain positions of its entries (unchained ones aside), 0 when none is chained', async () => {
  const q = new FakeQueue();
  const id = q.add();
  await new ExportWorker(q, source(250), objects, settings, logger).runOnce();
  const chained = Array.from({ length: 250 }, (_, i) => seqOf(i)).filter((p) => p > 0);
  expect(q.files.get(id)).toMatchObject({ totalRecords: 250, firstPosition: Math.min(...chained), lastPosition: Math.max(...chained) });
  expect(q.files.get(id)!.firstPosition).toBeLessThan(1_000); // out of order: the lowest is not the first written
  const unchained = q.add();
  const none: LogSource = {
    kind: 'clickhouse',
    async *pages() {
      yield { bytes: rowBinary([{ seq: 0, id: 'log_a', entry: 'a,', meta: '{}' }, { seq: 0, id: 'log_b', entry: 'b,', meta: '{}' }]), count: 2 };
    },
  };
  await new ExportWorker(q, none, objects, settings, logger).runOnce();
  expect(q.files.get(unchained)).toMatchObject({ totalRecords: 2, firstPosition: 0, lastPosition: 0 });
});

test('a batch whose count is not the rows it holds, or that is cut short, fails the attempt and leaves no file', async () => {
  for (const bad of [
    (p: RenderedPage) => ({ ...p, count: p.count + 1 }),
    (p: RenderedPage) => ({ ...p, count: p.count - 1 }),
    (p: RenderedPage) => ({ ...p, bytes: p.bytes.subarray(0, p.bytes.length - 3) }),
  ]) {
    const q = new FakeQueue();
    const id = q.add();
    const lying: LogSource = {
      kind: 'audit-rpc',
      async *pages(_spec, format) {
        yield pageOf(format, 0, 100);
        yield bad(pageOf(format, 100, 100));
      },
    };
    await new ExportWorker(q, lying, objects, { ...settings, maxAttempts: 1 }, logger).runOnce();
    expect(q.jobs.get(id)).toMatchObject({ status: 'failed', attempts: 1, errorCode: 'export_failed' });
    expect(q.completed).toEqual([]);
    expect(await objects.sweep(-60_000)).toBe(0);
  }
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
  const refusing: LogSource = { kind: 'audit-rpc', pages: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(AppError.field('query', 'unclosed quote')) }) }) };
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
