/**
 * Export workers against real components: PostgreSQL (jobs, leases, outbox), embedded ClickHouse through the
 * ClickHouse log source, and both object stores (a local directory, and S3 on a real versitygw).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { CSV_COLUMNS, ExportJobs, LogStore, migrateAuditSchema, migrateClickHouse, openClickHouse, rowFromEvent, type ClickHouseClient, type ExportFormat, type LogRow } from '@secsvc/audit-store';
import { createLocalObjectStore, createLogger, createPool, createS3ObjectStore, type ObjectStore, type Pool } from '@secsvc/shared';
import { s3SkipReason, startTestS3, stopTestPostgres, testDatabase, type TestDatabase, type TestS3 } from '@secsvc/dev/testing';
import { clickHouseLogSource } from '../src/log-source';
import { ExportWorker, type WorkerSettings } from '../src/worker';
import { parseCsv } from './support/csv';
import { fullForm } from './support/full-form';

jest.setTimeout(120_000);
const logger = createLogger('worker-test', 'silent');
const ROWS = 20_000;
let db: TestDatabase;
let pool: Pool;
let dir: string;
let ch: ClickHouseClient;
let jobs: ExportJobs;
const stored: LogRow[] = [];

beforeAll(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 10, logger, 'audit');
  await migrateAuditSchema(pool);
  jobs = new ExportJobs(pool);
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-worker-'));
  ch = await openClickHouse({ path: path.join(dir, 'ch') });
  await migrateClickHouse(ch);
  const cities = [undefined, { city: 'Zürich', country: 'CH', region: 'Zurich', lat: 47.37, lng: 8.54 }, { city: 'São Paulo', country: 'BR', region: 'SP', lat: -23.55, lng: -46.63 }];
  for (let i = 0; i < ROWS; i++) {
    stored.push(
      rowFromEvent(
        {
          id: `log_01jd${String(i).padStart(22, '0')}`,
          environment: i % 50 === 0 ? 'test' : 'live',
          type: ['user.login', 'user.logout', 'api_key.created'][i % 3]!,
          timestamp: new Date(Date.UTC(2026, 10, 1) + i * 37).toISOString(),
          actor: i % 7 === 0 ? { type: 'anonymous' } : { id: `user_${i % 11}`, email: i % 13 === 0 ? '=cmd|"/c calc"!A1@x.com' : `u${i % 11}@example.com`, type: 'user' },
          target: i % 2 ? { id: `ses_${i}`, type: 'session' } : undefined,
          context: { ip: `81.2.69.${i % 250}`, userAgent: i % 17 === 0 ? 'Agent, "quoted"\nnext line' : 'Mozilla/5.0' },
          result: i % 5 ? 'success' : 'failure',
          traceId: `req_${i}`,
          metadataJson: JSON.stringify({ authMethod: 'password', mfaUsed: i % 2 === 0, ...(i % 9 === 0 ? { reason: 'x,y' } : {}) }),
        },
        cities[i % 3],
      ),
    );
  }
  const store = new LogStore(ch);
  for (let i = 0; i < stored.length; i += 5_000) await store.insert(stored.slice(i, i + 5_000));
}, 120_000);
afterAll(async () => {
  await ch?.close();
  await pool?.end();
  await db?.drop();
  await stopTestPostgres();
  await rm(dir, { recursive: true, force: true });
});

const settings: WorkerSettings = { workerId: 'w', leaseMs: 10_000, heartbeatMs: 200, maxAttempts: 3, retryDelayMs: 0, linkTtlMs: 3_600_000, concurrency: 2, pollMs: 50, cleanupIntervalMs: 60_000, sweepAfterMs: 3_600_000, jobRetentionDays: 30 };
const spec = { environment: 'live', from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z', events: [] as string[], query: '' };
const requestedBy = { actor: { id: 'key_1', type: 'api_key' }, context: { ip: '10.0.0.1', userAgent: 'jest' }, authMethod: 'api_key' };

async function text(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function until(cond: () => Promise<boolean>, ms = 90_000) {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Creates one job per format, runs two workers until all are completed, checks every file against the store. */
async function exportAll(objects: ObjectStore) {
  await pool.query('TRUNCATE export_jobs, outbox');
  const formats: ExportFormat[] = ['csv', 'json', 'ndjson', 'csv', 'json'];
  const ids: string[] = [];
  for (const [i, format] of formats.entries()) {
    const job = await jobs.create({ ...spec, ...(i >= 3 ? { events: ['user.logout'], query: 'u3' } : {}), id: `exp_01jd00000000000000000000${i}0`, format, estimatedRecords: 0, requestedBy, traceId: 'req_t' });
    ids.push(job.id);
  }
  const workers = [1, 2].map((n) => new ExportWorker(jobs, clickHouseLogSource(ch, 3_000), objects, { ...settings, workerId: `w${n}` }, logger));
  for (const w of workers) w.start();
  try {
    await until(async () => (await pool.query(`SELECT 1 FROM export_jobs WHERE status = 'processing'`)).rowCount === 0);
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
  }
  const live = stored.filter((r) => r.environment === 'live').reverse();
  const narrowed = live.filter((r) => r.event === 'user.logout' && r.actor_email === 'u3@example.com');
  for (const [i, id] of ids.entries()) {
    const job = (await jobs.get('live', id))!;
    const expected = i >= 3 ? narrowed : live;
    expect(job).toMatchObject({ status: 'completed', totalRecords: expected.length, attempts: 1 });
    const bytes = await text(await objects.read(job.objectKey!));
    expect(bytes.length).toBe(job.fileSizeBytes);
    expect(createHash('sha256').update(bytes).digest('hex')).toBe(job.sha256);
    const body = bytes.toString('utf8');
    if (job.format === 'csv') {
      const [header, ...records] = parseCsv(body);
      expect(header).toEqual([...CSV_COLUMNS]);
      expect(records).toHaveLength(expected.length);
      expect(records.map((r) => r[0])).toEqual(expected.map((r) => r.id));
      const col = (name: (typeof CSV_COLUMNS)[number]) => CSV_COLUMNS.indexOf(name);
      for (const [k, r] of records.entries()) {
        const row = expected[k]!;
        expect(r).toHaveLength(CSV_COLUMNS.length);
        expect(r[col('actor.email')]).toBe(row.actor_email.startsWith('=') ? `'${row.actor_email}` : row.actor_email);
        expect(r[col('timestamp')]).toBe(row.timestamp);
        expect(r[col('context.userAgent')]).toBe(row.user_agent);
        expect(r[col('target.type')]).toBe(row.target_id ? row.target_type : '');
        expect(r[col('context.location.city')]).toBe(row.lat === null ? '' : row.city);
        expect(r[col('context.location.coordinates.lng')]).toBe(row.lng === null ? '' : String(row.lng));
        expect(r.slice(col('metadata.authMethod'))).toEqual(['password', String(JSON.parse(row.metadata).mfaUsed), row.metadata.includes('reason') ? '{"reason":"x,y"}' : '']);
      }
    } else {
      const entries = job.format === 'json' ? (JSON.parse(body) as unknown[]) : body.trimEnd().split('\n').map((l) => JSON.parse(l) as unknown);
      expect(entries).toEqual(expected.map(fullForm));
    }
  }
  // Each job completed exactly once, whichever worker ran it.
  const events = (await pool.query<{ event_type: string; n: string }>(`SELECT event_type, count(*) AS n FROM outbox GROUP BY 1 ORDER BY 1`)).rows;
  expect(events).toEqual([
    { event_type: 'log.export.completed', n: String(formats.length) },
    { event_type: 'log.export.created', n: String(formats.length) },
  ]);
}

test(`two workers export ${ROWS.toLocaleString('en')} stored entries to a local directory in every format, each job once, files exact`, async () => {
  const objects = createLocalObjectStore(path.join(dir, 'exports'));
  await exportAll(objects);
});

const skip = s3SkipReason();
if (skip) process.stderr.write(`SKIPPED "worker with the S3 store": ${skip}\n`);
const testS3 = skip ? test.skip : test; // skip reason: no versitygw outside CI (CI=true throws instead)

testS3('the same exports to S3 (versitygw) with multipart uploads of 5 MiB parts', async () => {
  let s3: TestS3 | undefined;
  try {
    s3 = await startTestS3();
    const bucket = await s3.createBucket();
    const objects = createS3ObjectStore({ bucket, endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true, partSize: 5 * 1024 * 1024 });
    await exportAll(objects);
    await objects.close();
  } finally {
    await s3?.stop();
  }
});
