/**
 * Export RPCs against real components: PostgreSQL (jobs, outbox), embedded ClickHouse (rows), a local object
 * store, served by a real gRPC server and called with the generated client (streams included).
 */
import * as grpc from '@grpc/grpc-js';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { audit, AuditServiceBulk, descriptorSets, serviceNames } from '@secsvc/proto';
import { ExportJobs, LogStore, migrateAuditSchema, migrateClickHouse, openClickHouse, RenderedRows, rowFromEvent, type ClickHouseClient, type LogRow } from '@secsvc/audit-store';
import { AppError, createLocalObjectStore, createLogger, createPool, fromGrpcError, Metrics, startGrpcServer, type ObjectStore, type Pool, type RunningGrpcServer } from '@secsvc/shared';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';
import type { ExportContext } from '../src/export-context';
import { createExport } from '../src/rpc/create-export';
import { downloadExport } from '../src/rpc/download-export';
import { getExport } from '../src/rpc/get-export';
import { streamLogs } from '../src/rpc/stream-logs';
import { entryEnd } from '../../export-worker/src/formats';

const logger = createLogger('audit-exports-test', 'silent');
const SECRET = 'test-secret-test-secret-test-secret-0123';
let db: TestDatabase;
let pool: Pool;
let dir: string;
let ch: ClickHouseClient;
let objects: ObjectStore;
let jobs: ExportJobs;
let server: RunningGrpcServer;
let client: audit.AuditServiceClient;
const rows: LogRow[] = [];

beforeAll(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 6, logger, 'audit');
  await migrateAuditSchema(pool);
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-audit-exports-'));
  ch = await openClickHouse({ path: path.join(dir, 'ch') });
  await migrateClickHouse(ch);
  for (let i = 0; i < 1_000; i++) {
    rows.push(
      rowFromEvent(
        {
          id: `log_01jd${String(i).padStart(22, '0')}`,
          environment: 'live',
          type: i % 2 ? 'user.login' : 'user.logout',
          timestamp: new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString(),
          actor: { id: `user_${i % 3}`, email: `u${i % 3}@example.com`, type: 'user' },
          context: { ip: '10.0.0.1', userAgent: 'jest' },
          result: 'success',
          traceId: `req_${i}`,
          metadataJson: '{"authMethod":"password","mfaUsed":false}',
        },
        undefined,
      ),
    );
  }
  await new LogStore(ch).insert(rows);
  objects = createLocalObjectStore(path.join(dir, 'exports'));
  jobs = new ExportJobs(pool);
  const ctx: ExportContext = { store: new LogStore(ch), secret: SECRET, logger, ch, exports: { jobs, objects, maxRangeDays: 31, pageSize: 300 } };
  server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger,
    metrics: new Metrics('audit-exports-test'),
    descriptorSets,
    services: [
      {
        name: serviceNames.audit,
        definition: AuditServiceBulk,
        implementation: { createExport: createExport(ctx), getExport: getExport(ctx), streamLogs: streamLogs(ctx), downloadExport: downloadExport(ctx) },
        notYetImplemented: ['listLogs', 'getLog', 'searchLogs', 'countLogs', 'verifyLogs', 'getChainKeys'],
      },
    ],
  });
  client = new audit.AuditServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
}, 60_000);
afterAll(async () => {
  client?.close();
  await server?.close();
  await ch?.close();
  await pool?.end();
  await db?.drop();
  await stopTestPostgres();
  await rm(dir, { recursive: true, force: true });
});

const md = () => {
  const m = new grpc.Metadata();
  m.set('x-actor-id', 'key_1');
  m.set('x-actor-type', 'api_key');
  m.set('x-auth-method', 'api_key');
  m.set('x-client-ip', '10.9.9.9');
  return m;
};
const unary = <Req, Res>(fn: (req: Req, m: grpc.Metadata, cb: (err: grpc.ServiceError | null, res: Res) => void) => unknown, req: Req) =>
  new Promise<Res>((resolve, reject) => fn.call(client, req, md(), (err, res) => (err ? reject(fromGrpcError(err)) : resolve(res))));
const create = (req: Partial<audit.CreateExportRequest>) =>
  unary<audit.CreateExportRequest, audit.Export>(client.createExport, { environment: 'live', from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z', format: 'csv', events: [], query: '', ...req });

async function fieldOf(p: Promise<unknown>): Promise<string | undefined> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('invalid_request');
  return (err as AppError).details[0]?.field;
}

test('CreateExport refuses bad input naming the field', async () => {
  expect(await fieldOf(create({ format: 'xml' }))).toBe('format');
  expect(await fieldOf(create({ from: '2026-11-02T00:00:00.000Z', to: '2026-11-01T00:00:00.000Z' }))).toBe('to');
  expect(await fieldOf(create({ to: '2026-12-15T00:00:00.000Z' }))).toBe('to'); // over 31 days
  expect(await fieldOf(create({ from: undefined }))).toBe('from');
  expect(await fieldOf(create({ query: '"unclosed' }))).toBe('query');
  expect(await fieldOf(create({ events: ['Not An Event'] }))).toBe('events[0]');
  expect(await fieldOf(create({ environment: 'prod' }))).toBe('environment');
  // every fault at once, and an event kind the product does not emit is refused like a malformed one
  const all = await create({ format: 'xml', from: '2026-11-02T00:00:00.000Z', to: '2026-11-01T00:00:00.000Z', events: ['user.login', 'user.nonsense'], query: '"unclosed' }).catch((e: AppError) => e);
  expect((all as AppError).details.map((d) => d.field)).toEqual(['format', 'events[1]', 'to', 'query']);
});

test('CreateExport stores a processing job with a fast count as the estimate; GetExport is scoped to the environment', async () => {
  const exp = await create({ format: 'json', events: ['user.login'], query: 'u1' });
  expect(exp).toMatchObject({ status: 'processing', format: 'json', estimatedRecords: rows.filter((r) => r.event === 'user.login' && r.actor_id === 'user_1').length, downloadToken: '' });
  expect(exp.id).toMatch(/^exp_[0-9a-z]{26}$/);
  expect(await unary(client.getExport, { environment: 'live', id: exp.id })).toEqual(exp);
  await expect(unary(client.getExport, { environment: 'test', id: exp.id })).rejects.toMatchObject({ code: 'not_found' });
  await expect(unary(client.getExport, { environment: 'live', id: 'exp_nope' })).rejects.toMatchObject({ code: 'not_found' });
  const events = (await pool.query<{ event_type: string; payload: { actor: { id: string }; context: { ip: string } } }>('SELECT event_type, payload FROM outbox')).rows;
  expect(events.find((e) => e.event_type === 'log.export.created')?.payload).toMatchObject({ actor: { id: 'key_1' }, context: { ip: '10.9.9.9' } });
});

function collect<T>(stream: grpc.ClientReadableStream<T>): Promise<T[]> {
  return new Promise((resolve, reject) => {
    const out: T[] = [];
    stream.on('data', (m: T) => out.push(m));
    stream.on('error', (e) => reject(fromGrpcError(e)));
    stream.on('end', () => resolve(out));
  });
}

/** The rows of one StreamLogs chunk (RowBinary), as a worker reads them. */
function rowsOf(chunk: audit.LogRowsChunk) {
  const r = new RenderedRows(chunk.rows);
  const out: { seq: number; ms: number; id: string; entry: string; meta: string }[] = [];
  const text = (a: number, b: number) => chunk.rows.toString('utf8', a, b);
  while (r.next()) out.push({ seq: r.seq, ms: r.ms, id: text(r.idStart, r.idEnd), entry: text(r.entryStart, r.entryEnd), meta: text(r.metaStart, r.metaEnd) });
  return out;
}

const streamRequest = (over: Partial<audit.StreamLogsRequest> = {}): audit.StreamLogsRequest => ({
  environment: 'live',
  from: '2026-11-01T00:00:00.000Z',
  to: '2026-11-02T00:00:00.000Z',
  events: [],
  query: '',
  pageSize: 0,
  format: 'ndjson',
  ...over,
});

test('StreamLogs sends every row of the window newest first, rendered in the format asked, as RowBinary chunks with their counts', async () => {
  const newest = [...rows].reverse();
  const chunks = await collect(client.streamLogs(streamRequest()));
  expect(chunks.length).toBe(4); // 1,000 rows in pages of 300
  const got = chunks.flatMap((c) => {
    const read = rowsOf(c);
    expect(read).toHaveLength(c.count);
    return read;
  });
  expect(got.map((x) => x.id)).toEqual(newest.map((r) => r.id));
  expect(got.map((x) => x.ms)).toEqual(newest.map((r) => Date.parse(r.timestamp)));
  // Unchained rows; each JSON entry up to its metadata, and the metadata text the worker ends it with.
  expect(got.every((x) => x.seq === 0 && x.entry.endsWith(',"metadata":') && x.meta === '{"authMethod":"password","mfaUsed":false}')).toBe(true);
  const end = entryEnd('ndjson');
  const whole = got.map((x) => x.entry + end(Buffer.from(x.meta), 0, Buffer.byteLength(x.meta)).toString());
  expect(whole.every((line) => line.endsWith('}\n') && line.indexOf('\n') === line.length - 1)).toBe(true);
  expect(whole.map((line) => (JSON.parse(line) as { id: string }).id)).toEqual(newest.map((r) => r.id));
  expect(JSON.parse(whole[0]!)).toMatchObject({ id: newest[0]!.id, event: newest[0]!.event, timestamp: newest[0]!.timestamp, metadata: { authMethod: 'password', mfaUsed: false } });
  // CSV: records up to the metadata cells, and the metadata text for them; a page size the request names
  const csv = (await collect(client.streamLogs(streamRequest({ format: 'csv', pageSize: 400 })))).map((c) => {
    const read = rowsOf(c);
    expect(read).toHaveLength(c.count);
    return read;
  });
  expect(csv.map((c) => c.length)).toEqual([400, 400, 200]);
  const flat = csv.flat();
  expect(flat.map((x) => x.id)).toEqual(newest.map((r) => r.id));
  const r0 = newest[0]!;
  expect(flat[0]!.entry).toBe(`${r0.id},${r0.timestamp},${r0.event},${r0.actor_id},${r0.actor_email},user,,,,10.0.0.1,jest,,,,,,success,${r0.trace_id},`);
  expect(flat.every((x) => x.meta === '{"authMethod":"password","mfaUsed":false}')).toBe(true);
});

test('StreamLogs refuses a request without a format, or with one it does not render, or a bad query, naming the field', async () => {
  for (const format of ['', 'xml']) await expect(collect(client.streamLogs(streamRequest({ format })))).rejects.toMatchObject({ code: 'invalid_request', details: [{ field: 'format' }] });
  await expect(collect(client.streamLogs(streamRequest({ query: 'a*b' })))).rejects.toMatchObject({ code: 'invalid_request', details: [{ field: 'query' }] });
});

describe('DownloadExport', () => {
  let content: Buffer;
  let exp: audit.Export;

  beforeAll(async () => {
    content = Buffer.from('id,event\n' + rows.map((r) => `${r.id},${r.event}\n`).join(''));
    await pool.query('UPDATE export_jobs SET attempts = 99'); // older jobs: out of the way
    const created = await create({ format: 'csv' });
    const job = (await jobs.claim('w', 60_000, 3))!;
    expect(job.id).toBe(created.id);
    const w = await objects.create(`live/${job.id}/1.csv`, 'text/csv');
    await w.write(content);
    await w.finish();
    await jobs.complete(job, { objectKey: `live/${job.id}/1.csv`, totalRecords: rows.length, fileSizeBytes: content.length, sha256: createHash('sha256').update(content).digest('hex'), linkTtlMs: 60_000 });
    exp = await unary<audit.GetExportRequest, audit.Export>(client.getExport, { environment: 'live', id: job.id });
  });

  const download = async (req: Partial<audit.DownloadExportRequest>) => {
    const msgs = await collect(client.downloadExport({ id: exp.id, format: 'csv', token: exp.downloadToken, range: '', headOnly: false, clientIp: '10.1.1.1', userAgent: 'jest', ...req }));
    return { head: msgs[0]!.head!, body: Buffer.concat(msgs.slice(1).map((m) => m.data!)) };
  };

  it('serves the whole file with its head, and records log.export.downloaded', async () => {
    expect(exp).toMatchObject({ status: 'completed', totalRecords: 1000, fileSizeBytes: content.length });
    expect(exp.downloadToken).toMatch(/^[0-9a-z]+\.[A-Za-z0-9_-]{43}$/);
    const { head, body } = await download({});
    expect(head).toMatchObject({ size: content.length, start: 0, end: content.length - 1, partial: false, contentType: 'text/csv; charset=utf-8', filename: `${exp.id}.csv`, sha256: exp.sha256 });
    expect(body).toEqual(content);
    const ev = (await pool.query<{ payload: { actor: { type: string }; context: { ip: string }; target: { id: string } } }>(`SELECT payload FROM outbox WHERE event_type = 'log.export.downloaded'`)).rows;
    expect(ev).toHaveLength(1);
    expect(ev[0]!.payload).toMatchObject({ actor: { type: 'anonymous' }, context: { ip: '10.1.1.1' }, target: { id: exp.id, type: 'export' } });
  });

  it('serves one byte range, a head alone, and names an unsatisfiable range', async () => {
    const part = await download({ range: 'bytes=9-29' });
    expect(part.head).toMatchObject({ partial: true, start: 9, end: 29, size: content.length });
    expect(part.body).toEqual(content.subarray(9, 30));
    const tail = await download({ range: 'bytes=-5' });
    expect(tail.body).toEqual(content.subarray(content.length - 5));
    const headOnly = await download({ headOnly: true });
    expect(headOnly.body.length).toBe(0);
    expect((await download({ range: `bytes=${content.length}-` })).head).toMatchObject({ unsatisfiable: true, size: content.length });
  });

  it('refuses tampered, foreign-format and expired links with 403 and no bytes', async () => {
    const t = exp.downloadToken;
    const tampered = t.slice(0, -2) + (t.endsWith('A') ? 'BB' : 'AA');
    for (const req of [{ token: tampered }, { token: '' }, { format: 'json' }, { id: 'exp_01jd0000000000000000000000' }]) {
      const err = await collect(client.downloadExport({ id: exp.id, format: 'csv', token: t, range: '', headOnly: false, clientIp: '', userAgent: '', ...req })).then(() => undefined, (e: unknown) => e);
      expect(err).toMatchObject({ code: 'forbidden', message: 'The download link is invalid' });
    }
    await pool.query(`UPDATE export_jobs SET expires_at = now() - interval '1 second' WHERE id = $1`, [exp.id]);
    const expired = await unary<audit.GetExportRequest, audit.Export>(client.getExport, { environment: 'live', id: exp.id });
    const err = await collect(client.downloadExport({ id: exp.id, format: 'csv', token: expired.downloadToken, range: '', headOnly: false, clientIp: '', userAgent: '' })).then(() => undefined, (e: unknown) => e);
    expect(err).toMatchObject({ code: 'forbidden', message: 'The download link has expired' });
  });
});
