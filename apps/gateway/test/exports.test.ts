/**
 * Log export routes and the download host over fakes of the audit service (its createExport/getExport and
 * its DownloadExport stream): shapes, validation, states, headers, Range, HEAD and refused links.
 */
import type { ClientReadableStream } from '@grpc/grpc-js';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Readable } from 'node:stream';
import type { audit } from '@secsvc/proto';
import { AppError, createLogger, Metrics, parseByteRange } from '@secsvc/shared';
import { createApp } from '../src/app';
import type { DownloadSource } from '../src/downloads';
import { FakeIdentity, type IdentityPort } from './support/fake-identity';
import { call, detailsOf, expectError, type TestGateway } from './support/gateway';

const FILE = Buffer.from('id,event\r\n' + Array.from({ length: 500 }, (_, i) => `log_${i},user.login\r\n`).join(''));
const EXP = 'exp_01jd0000000000000000000001';
const base: audit.Export = {
  id: EXP,
  environment: 'live',
  status: 'processing',
  format: 'csv',
  estimatedRecords: 400,
  processedRecords: 100,
  totalRecords: 0,
  fileSizeBytes: 0,
  sha256: '',
  createdAt: '2026-11-01T12:00:00.000Z',
  completedAt: undefined,
  error: undefined,
  expiresAt: undefined,
  downloadToken: '',
  manifestJson: '',
};
let current: audit.Export = base;
const created: audit.CreateExportRequest[] = [];
const downloads: audit.DownloadExportRequest[] = [];

const fakeAudit = {
  async createExport(req: audit.CreateExportRequest) {
    created.push(req);
    if (req.query === 'a*b') throw AppError.field('query', '"*" may only end a term');
    if (Date.parse(req.to!) <= Date.parse(req.from!)) throw AppError.field('to', 'must be after from');
    return { ...base, format: req.format, estimatedRecords: 1234, processedRecords: 0 };
  },
  async getExport(req: audit.GetExportRequest) {
    if (req.id !== EXP || req.environment !== 'live') throw AppError.notFound('Export');
    return current;
  },
};

/** The audit side of a download, as the real service answers: refusals, then head, then bytes. */
const openDownload: DownloadSource = (req) => {
  downloads.push(req);
  const messages = async function* (): AsyncGenerator<audit.DownloadChunk> {
    if (req.token !== 'good.token') throw new AppError('forbidden', 'The download link is invalid');
    const range = parseByteRange(req.range || undefined, FILE.length);
    const [start, end] = range && range !== 'unsatisfiable' ? [range.start, range.end] : [0, FILE.length - 1];
    yield { head: { size: FILE.length, start, end, partial: !!range && range !== 'unsatisfiable', contentType: 'text/csv; charset=utf-8', filename: `${req.id}.${req.format}`, sha256: 'ab'.repeat(32), unsatisfiable: range === 'unsatisfiable' } };
    if (req.headOnly || range === 'unsatisfiable') return;
    for (let i = start; i <= end; i += 1000) yield { data: FILE.subarray(i, Math.min(i + 1000, end + 1)) };
  };
  const stream = Readable.from(messages()) as unknown as ClientReadableStream<audit.DownloadChunk>;
  (stream as unknown as { cancel: () => void }).cancel = () => undefined;
  return stream;
};

let gw: TestGateway;
let server: Server;
beforeAll(async () => {
  const fake = new FakeIdentity();
  const deps = {
    config: { GRPC_DEADLINE_MS: 1000, TRUST_PROXY: ['loopback'], HOST: '127.0.0.1', PORT: 0 },
    clients: { identity: fake as unknown as IdentityPort, policy: {} as never, audit: fakeAudit as never },
    logger: createLogger('test', 'silent'),
    metrics: new Metrics('test'),
    ready: async () => true,
    downloads: { baseUrl: 'https://files.example.com/downloads', open: openDownload },
  };
  server = await new Promise<Server>((resolve, reject) => {
    const s = createApp(deps).listen(0, '127.0.0.1', (err?: Error) => (err ? reject(err) : resolve(s)));
  });
  gw = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, fake, deps: deps as never, close: async () => undefined };
});
afterAll(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));

const body = { from: '2026-11-01T00:00:00Z', to: '2026-11-02T00:00:00Z', format: 'csv' };

describe('POST /v1/logs/export', () => {
  it('answers 202 with exportId, status processing, format, estimatedRecords and createdAt', async () => {
    const res = await call(gw, 'POST', '/v1/logs/export', { json: { ...body, events: ['user.login'], query: 'alice' } });
    expect(res.status).toBe(202);
    expect(res.body.data).toEqual({ exportId: EXP, status: 'processing', format: 'csv', estimatedRecords: 1234, createdAt: '2026-11-01T12:00:00.000Z' });
    expect(created.at(-1)).toMatchObject({ environment: 'live', from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z', format: 'csv', events: ['user.login'], query: 'alice' });
  });

  it.each([
    [{ ...body, format: 'xml' }, 'format'],
    [{ ...body, from: 'yesterday' }, 'from'],
    [{ ...body, to: undefined }, 'to'],
    [{ ...body, events: 'user.login' }, 'events'],
    [{ ...body, query: '' }, 'query'],
    [{ ...body, extra: 1 }, 'extra'],
    [{ ...body, from: '2026-11-03T00:00:00Z' }, 'to'],
    [{ ...body, query: 'a*b' }, 'query'],
  ])('refuses %j naming %s', async (json, field) => {
    const res = await call(gw, 'POST', '/v1/logs/export', { json });
    expect(detailsOf(res).map((d) => d.field)).toContain(field);
  });
});

describe('GET /v1/logs/export/{id}', () => {
  it('while processing: progress against the estimate', async () => {
    current = base;
    const res = await call(gw, 'GET', `/v1/logs/export/${EXP}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({ exportId: EXP, status: 'processing', format: 'csv', estimatedRecords: 400, createdAt: base.createdAt, processedRecords: 100, percent: 25 });
  });

  it('completed: totals, digest, the download link on DOWNLOAD_BASE_URL and its expiry', async () => {
    current = { ...base, status: 'completed', processedRecords: 401, totalRecords: 401, fileSizeBytes: 9876, sha256: 'cd'.repeat(32), completedAt: '2026-11-01T12:00:05.000Z', expiresAt: '2026-11-01T13:00:05.000Z', downloadToken: 'x1.a+b/c' };
    const res = await call(gw, 'GET', `/v1/logs/export/${EXP}`);
    expect(res.body.data).toEqual({
      exportId: EXP,
      status: 'completed',
      format: 'csv',
      estimatedRecords: 400,
      createdAt: base.createdAt,
      completedAt: '2026-11-01T12:00:05.000Z',
      totalRecords: 401,
      fileSizeBytes: 9876,
      sha256: 'cd'.repeat(32),
      downloadUrl: `https://files.example.com/downloads/${EXP}.csv?token=x1.a%2Bb%2Fc`,
      expiresAt: '2026-11-01T13:00:05.000Z',
    });
  });

  it('failed: the error', async () => {
    current = { ...base, status: 'failed', completedAt: '2026-11-01T12:01:00.000Z', error: { code: 'source_unavailable', message: 'The log store was unavailable' } };
    const res = await call(gw, 'GET', `/v1/logs/export/${EXP}`);
    expect(res.body.data).toMatchObject({ status: 'failed', error: { code: 'source_unavailable', message: 'The log store was unavailable' } });
    expect(res.body.data.downloadUrl).toBeUndefined();
  });

  it('an unknown or malformed id is 404', async () => {
    expectError(await call(gw, 'GET', '/v1/logs/export/exp_01jd0000000000000000000009'), 404, 'not_found');
    expectError(await call(gw, 'GET', '/v1/logs/export/nope'), 404, 'not_found');
  });
});

describe('download host', () => {
  const url = (q = '?token=good.token') => `/downloads/${EXP}.csv${q}`;

  it('streams the file with Content-Length, Content-Type, Content-Disposition and Accept-Ranges; no API key needed', async () => {
    const res = await call(gw, 'GET', url(), { auth: false, headers: { 'user-agent': 'curl/8' } });
    expect(res.status).toBe(200);
    expect(res.text).toBe(FILE.toString());
    expect(res.headers.get('content-length')).toBe(String(FILE.length));
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="${EXP}.csv"`);
    expect(res.headers.get('accept-ranges')).toBe('bytes');
    expect(downloads.at(-1)).toMatchObject({ id: EXP, format: 'csv', token: 'good.token', range: '', headOnly: false, clientIp: '127.0.0.1', userAgent: 'curl/8' });
  });

  it('serves a Range with 206 and Content-Range, a suffix range too; HEAD has the headers and no body', async () => {
    const part = await call(gw, 'GET', url(), { auth: false, headers: { range: 'bytes=10-2009' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 10-2009/${FILE.length}`);
    expect(part.headers.get('content-length')).toBe('2000');
    expect(part.text).toBe(FILE.subarray(10, 2010).toString());
    const tail = await call(gw, 'GET', url(), { auth: false, headers: { range: 'bytes=-7' } });
    expect(tail.text).toBe(FILE.subarray(FILE.length - 7).toString());
    const head = await call(gw, 'HEAD', url(), { auth: false });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(FILE.length));
    expect(head.text).toBe('');
  });

  it('a range beyond the end is 416 with Content-Range bytes */size in the error shape', async () => {
    const res = await call(gw, 'GET', url(), { auth: false, headers: { range: `bytes=${FILE.length}-` } });
    expectError(res, 416, 'range_not_satisfiable');
    expect(res.headers.get('content-range')).toBe(`bytes */${FILE.length}`);
  });

  it('a wrong or missing token is 403 in the error shape with no file bytes; a malformed name is 404', async () => {
    for (const q of ['?token=tampered.token', '', '?token=']) {
      const res = await call(gw, 'GET', url(q), { auth: false });
      expectError(res, 403, 'forbidden');
      expect(res.text).not.toContain('log_1,');
    }
    expectError(await call(gw, 'GET', '/downloads/../../etc/passwd?token=good.token', { auth: false }), 404, 'not_found');
    expectError(await call(gw, 'GET', `/downloads/${EXP}.exe?token=good.token`, { auth: false }), 404, 'not_found');
  });
});
