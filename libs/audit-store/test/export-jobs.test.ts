/** The export-job repository against a real PostgreSQL: claims, leases, completion once, retries, failure, expiry, events. */
import { createLogger, createPool, parseTraceparent, requestContext, type Pool } from '@secsvc/shared';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';
import { ExportJobs, migrateAuditSchema, type ClaimedJob, type NewExport } from '../src/export-jobs';

const logger = createLogger('export-jobs-test', 'silent');
let db: TestDatabase;
let pool: Pool;
let jobs: ExportJobs;
let n = 0;

beforeAll(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 8, logger, 'audit');
  expect(await migrateAuditSchema(pool, logger)).toBe(7);
  expect(await migrateAuditSchema(pool, logger)).toBe(0);
  jobs = new ExportJobs(pool);
}, 60_000);
afterAll(async () => {
  await pool.end();
  await db.drop();
  await stopTestPostgres();
});
beforeEach(async () => void (await pool.query('TRUNCATE export_jobs, outbox')));

const requester = { actor: { id: 'key_1', type: 'api_key' }, context: { ip: '10.0.0.1', userAgent: 'jest' }, authMethod: 'api_key' };
function newExport(over: Partial<NewExport> = {}): NewExport {
  n++;
  return {
    id: `exp_01jd0000000000000000000${String(n).padStart(3, '0')}`,
    environment: 'live',
    format: 'csv',
    from: '2026-11-01T00:00:00.000Z',
    to: '2026-11-02T00:00:00.000Z',
    events: ['user.login'],
    query: 'alice',
    estimatedRecords: 42,
    requestedBy: requester,
    traceId: 'req_create',
    ...over,
  };
}
const outbox = async () => (await pool.query<{ event_type: string; payload: { target: { id: string }; actor: { id?: string }; metadataJson: string } }>('SELECT event_type, payload FROM outbox ORDER BY seq')).rows;
const file = (over = {}) => ({ objectKey: 'live/x/1.csv', totalRecords: 40, fileSizeBytes: 1234, sha256: 'ab'.repeat(32), linkTtlMs: 3_600_000, ...over });

test('create stores the job as processing and writes log.export.created in the same transaction', async () => {
  const job = await jobs.create(newExport());
  expect(job).toMatchObject({ status: 'processing', format: 'csv', estimatedRecords: 42, processedRecords: 0, attempts: 0, events: ['user.login'], query: 'alice' });
  expect(await jobs.get('live', job.id)).toEqual(job);
  expect(await jobs.get('test', job.id)).toBeUndefined();
  const [ev] = await outbox();
  expect(ev!.event_type).toBe('log.export.created');
  expect(ev!.payload.target).toEqual({ id: job.id, type: 'export' });
  expect(ev!.payload.actor).toEqual({ id: 'key_1', type: 'api_key' });
  expect(JSON.parse(ev!.payload.metadataJson)).toMatchObject({ format: 'csv', estimatedRecords: 42, authMethod: 'api_key' });
  await expect(jobs.create(newExport({ from: '2026-11-02T00:00:00.000Z' }))).rejects.toThrow();
});

test("a job created in a request's trace keeps its traceparent (for the worker's run), as does its event; outside a trace neither has one", async () => {
  const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
  const traceparent = `00-${traceId}-00f067aa0ba902b7-01`;
  const traced = await requestContext.run({ trace: parseTraceparent(traceparent) }, () => jobs.create(newExport({ traceId })));
  expect(traced.traceparent).toBe(traceparent);
  expect((await jobs.get('live', traced.id))?.traceparent).toBe(traceparent);
  const plain = await jobs.create(newExport());
  expect(plain).not.toHaveProperty('traceparent');
  const rows = (await pool.query<{ traceparent: string | null }>('SELECT traceparent FROM outbox ORDER BY seq')).rows;
  expect(rows.map((r) => r.traceparent)).toEqual([traceparent, null]);
});

test('concurrent claimers never get the same job (FOR UPDATE SKIP LOCKED)', async () => {
  const created = [];
  for (let i = 0; i < 10; i++) created.push(await jobs.create(newExport()));
  const claims = await Promise.all(Array.from({ length: 16 }, (_, i) => jobs.claim(`w${i}`, 60_000, 3)));
  const got = claims.filter((c): c is ClaimedJob => !!c);
  expect(got).toHaveLength(10);
  expect(new Set(got.map((c) => c.id)).size).toBe(10);
  expect(await jobs.claim('late', 60_000, 3)).toBeUndefined();
});

test('a lapsed lease is claimed again by another worker; the first one can then neither heartbeat nor complete', async () => {
  const job = await jobs.create(newExport());
  const a = (await jobs.claim('a', 200, 3))!;
  expect(a.attempts).toBe(1);
  expect(await jobs.heartbeat(a, 10, 200)).toBe(true);
  expect(await jobs.claim('b', 60_000, 3)).toBeUndefined(); // still held
  await new Promise((r) => setTimeout(r, 300));
  const b = (await jobs.claim('b', 60_000, 3))!;
  expect(b.id).toBe(job.id);
  expect(b.attempts).toBe(2);
  expect(await jobs.heartbeat(a, 20, 60_000)).toBe(false);
  expect(await jobs.complete(a, file())).toBe(false);
  expect(await jobs.complete(b, file())).toBe(true);
  expect(await jobs.complete(b, file())).toBe(false);
  const done = (await jobs.get('live', job.id))!;
  expect(done).toMatchObject({ status: 'completed', totalRecords: 40, processedRecords: 40, fileSizeBytes: 1234, objectKey: 'live/x/1.csv', attempts: 2 });
  expect(done.completedAt).toBeDefined();
  expect((await outbox()).map((e) => e.event_type)).toEqual(['log.export.created', 'log.export.completed']);
});

test('a failing attempt is retried later; the last allowed attempt ends the job as failed with log.export.failed', async () => {
  const job = await jobs.create(newExport());
  const first = (await jobs.claim('a', 60_000, 2))!;
  expect(await jobs.attemptFailed(first, { code: 'source_unavailable', message: 'audit is down' }, 2, 0)).toBe('processing');
  const second = (await jobs.claim('a', 60_000, 2))!;
  expect(second.attempts).toBe(2);
  expect(await jobs.attemptFailed(second, { code: 'source_unavailable', message: 'audit is down' }, 2, 0)).toBe('failed');
  expect(await jobs.claim('a', 60_000, 2)).toBeUndefined();
  expect(await jobs.get('live', job.id)).toMatchObject({ status: 'failed', errorCode: 'source_unavailable', errorMessage: 'audit is down' });
  expect((await outbox()).map((e) => e.event_type)).toEqual(['log.export.created', 'log.export.failed']);
});

test('an attempt not counted (the log store was unavailable) is given back, while the job is younger than an hour', async () => {
  const job = await jobs.create(newExport());
  for (let i = 0; i < 3; i++) {
    const claimed = (await jobs.claim('a', 60_000, 2))!;
    expect(claimed.attempts).toBe(1);
    expect(await jobs.attemptFailed(claimed, { code: 'source_unavailable', message: 'audit is down' }, 2, 0, true)).toBe('processing');
  }
  expect((await jobs.get('live', job.id))!.attempts).toBe(0);
  // An hour on, the log store's outages count like any failure.
  await pool.query(`UPDATE audit.export_jobs SET created_at = now() - interval '61 minutes' WHERE id = $1`, [job.id]);
  const late = (await jobs.claim('a', 60_000, 2))!;
  expect(await jobs.attemptFailed(late, { code: 'source_unavailable', message: 'audit is down' }, 2, 0, true)).toBe('processing');
  const last = (await jobs.claim('a', 60_000, 2))!;
  expect(await jobs.attemptFailed(last, { code: 'source_unavailable', message: 'audit is down' }, 2, 0, true)).toBe('failed');
});

test('a retry waits for its backoff', async () => {
  await jobs.create(newExport());
  const first = (await jobs.claim('a', 60_000, 3))!;
  await jobs.attemptFailed(first, { code: 'x', message: 'y' }, 3, 60_000);
  expect(await jobs.claim('a', 60_000, 3)).toBeUndefined();
});

test('a job whose worker died on every attempt ends as failed (worker_lost)', async () => {
  const job = await jobs.create(newExport());
  await jobs.claim('a', 1, 1);
  await new Promise((r) => setTimeout(r, 20));
  expect(await jobs.claim('b', 60_000, 1)).toBeUndefined();
  expect(await jobs.failExhausted(1)).toBe(1);
  expect(await jobs.failExhausted(1)).toBe(0);
  expect(await jobs.get('live', job.id)).toMatchObject({ status: 'failed', errorCode: 'worker_lost' });
  expect((await outbox()).map((e) => e.event_type)).toEqual(['log.export.created', 'log.export.failed']);
});

test('expired and failed jobs are deleted once they ended longer ago than the retention; others stay', async () => {
  const old = await jobs.create(newExport());
  await jobs.complete((await jobs.claim('a', 60_000, 3))!, file({ objectKey: 'live/old/1.csv', linkTtlMs: -1000 }));
  await jobs.expireDue(async () => undefined);
  const recent = await jobs.create(newExport());
  await jobs.complete((await jobs.claim('a', 60_000, 3))!, file({ objectKey: 'live/recent/1.csv', linkTtlMs: -1000 }));
  await jobs.expireDue(async () => undefined);
  const live = await jobs.create(newExport());
  await jobs.complete((await jobs.claim('a', 60_000, 3))!, file({ objectKey: 'live/live/1.csv' }));
  const pending = await jobs.create(newExport());
  // The first one ended 31 days ago.
  await pool.query(`UPDATE export_jobs SET expires_at = now() - interval '31 days', completed_at = now() - interval '32 days' WHERE id = $1`, [old.id]);
  expect(await jobs.deleteEnded(30, 1)).toBe(1);
  expect(await jobs.get('live', old.id)).toBeUndefined();
  for (const j of [recent, live, pending]) expect(await jobs.get('live', j.id)).toBeDefined();
  expect(await jobs.deleteEnded(30)).toBe(0);
});

test('expired exports lose their file and become expired; downloads are recorded as events', async () => {
  const job = await jobs.create(newExport());
  const c = (await jobs.claim('a', 60_000, 3))!;
  await jobs.complete(c, file({ linkTtlMs: -1000 }));
  const other = await jobs.create(newExport());
  await jobs.complete((await jobs.claim('a', 60_000, 3))!, file({ objectKey: 'live/y/1.csv' }));
  const removed: string[] = [];
  expect(await jobs.expireDue(async (k) => void removed.push(k))).toBe(1);
  expect(removed).toEqual(['live/x/1.csv']);
  expect((await jobs.get('live', job.id))!.status).toBe('expired');
  expect((await jobs.get('live', other.id))!.status).toBe('completed');
  await jobs.recordDownload((await jobs.byId(other.id))!, { actor: { type: 'anonymous' }, context: { ip: '10.1.1.1', userAgent: 'curl' }, authMethod: 'none' }, 'req_dl', { start: 0, end: 1233, size: 1234 });
  const last = (await outbox()).at(-1)!;
  expect(last.event_type).toBe('log.export.downloaded');
  expect(JSON.parse(last.payload.metadataJson)).toMatchObject({ range: 'full', requestedBy: 'key_1', format: 'csv' });
});

test('queueStats: queued (unheld, retries and lapsed leases included) and running jobs, and the oldest queued job’s age', async () => {
  expect(await jobs.queueStats()).toEqual({ queued: 0, running: 0, oldestQueuedSeconds: 0 });
  const first = await jobs.create(newExport());
  await jobs.create(newExport());
  await jobs.create(newExport());
  await pool.query(`UPDATE export_jobs SET created_at = now() - interval '5 minutes' WHERE id = $1`, [first.id]);
  // the oldest is held by a worker (running); a second one's lease lapsed (queued again)
  const held = (await jobs.claim('a', 60_000, 3))!;
  expect(held.id).toBe(first.id);
  const lapsed = (await jobs.claim('b', 60_000, 3))!;
  await pool.query(`UPDATE export_jobs SET lease_expires_at = now() - interval '1 second', created_at = now() - interval '2 minutes' WHERE id = $1`, [lapsed.id]);
  const stats = await jobs.queueStats();
  expect({ queued: stats.queued, running: stats.running }).toEqual({ queued: 2, running: 1 });
  expect(stats.oldestQueuedSeconds).toBeGreaterThanOrEqual(120);
  expect(stats.oldestQueuedSeconds).toBeLessThan(180);
  await jobs.complete(held, file());
  expect((await jobs.queueStats()).running).toBe(0);
});
