import { verify } from 'node:crypto';
import { Readable } from 'node:stream';
import { newId, type AppError, type ByteRange } from '@secsvc/shared';
import { ChainKey, manifestSignedText, type Checkpoint } from '../chain';
import type { ExportFormat, ExportJob, NewExport, Requester } from '../export-jobs';
import { RenderedRows, scanRows, type RenderedPage } from '../export-source';
import { signDownloadToken } from '../export-token';
import type { Clause, LogFilters } from '../store';
import { rowBinary } from '../../test/support/row-binary';
import { ExportService, type ExportPorts } from './exports';

const SECRET = 'test-secret-test-secret-test-secret-0123';
const requester: Requester = { actor: { id: 'key_1', type: 'api_key' }, context: { ip: '10.9.9.9', userAgent: 'jest' }, authMethod: 'api_key' };
const request = { environment: 'live', from: '2026-11-01T00:00:00Z', to: '2026-11-02T00:00:00Z', format: 'csv', events: [] as string[], query: '' };

function job(over: Partial<ExportJob> = {}): ExportJob {
  return {
    id: newId('exp'),
    environment: 'live',
    from: '2026-11-01T00:00:00.000Z',
    to: '2026-11-02T00:00:00.000Z',
    events: [],
    query: '',
    status: 'processing',
    format: 'csv',
    estimatedRecords: 10,
    processedRecords: 0,
    attempts: 0,
    requestedBy: requester,
    traceId: 'req_1',
    createdAt: '2026-11-03T00:00:00.000Z',
    ...over,
  };
}

function completed(over: Partial<ExportJob> = {}): ExportJob {
  return job({
    status: 'completed',
    objectKey: 'live/exp/1.csv',
    totalRecords: 10,
    fileSizeBytes: 100,
    sha256: 'ab'.repeat(32),
    firstPosition: 3,
    lastPosition: 12,
    completedAt: '2026-11-03T00:01:00.000Z',
    expiresAt: new Date(Date.now() + 60_000).toISOString(),
    ...over,
  });
}

/** Fake ports recording what the use cases asked of them. */
function ports(over: Partial<ExportPorts> = {}, state: { jobs?: ExportJob[]; files?: Record<string, string>; pages?: RenderedPage[] } = {}) {
  const jobs = state.jobs ?? [];
  const files = state.files ?? {};
  const calls = {
    count: [] as [LogFilters, Clause | undefined][],
    created: [] as NewExport[],
    downloads: [] as [ExportJob, Requester, string, { start: number; end: number; size: number }][],
    reads: [] as [string, ByteRange | undefined][],
    pages: [] as [ExportFormat, number][],
    pagesRead: 0,
    pagesClosed: false,
  };
  const checkpoint: Checkpoint = { environment: 'live', position: 12, hash: 'cd'.repeat(32), signedAt: '2026-11-03T00:00:30.000Z', kid: 'ck_1', signature: 'sig' };
  const p: ExportPorts = {
    store: {
      count: async (filters, clause) => {
        calls.count.push([filters, clause]);
        return 42;
      },
    },
    jobs: {
      create: async (input) => {
        calls.created.push(input);
        return job({ ...input, status: 'processing', processedRecords: 0, attempts: 0, createdAt: '2026-11-03T00:00:00.000Z' });
      },
      get: async (environment, id) => jobs.find((j) => j.environment === environment && j.id === id),
      byId: async (id) => jobs.find((j) => j.id === id),
      recordDownload: async (j, by, traceId, bytes) => {
        calls.downloads.push([j, by, traceId, bytes]);
      },
    },
    objects: {
      stat: async (key) => (key in files ? { size: Buffer.byteLength(files[key]!) } : undefined),
      read: async (key, range) => {
        calls.reads.push([key, range]);
        const bytes = Buffer.from(files[key]!);
        return Readable.from([range ? bytes.subarray(range.start, range.end + 1) : bytes]);
      },
    },
    chain: { key: ChainKey.fromSecret(SECRET), checkpointAt: async (environment, at) => (environment === 'live' && at >= new Date(checkpoint.signedAt) ? checkpoint : undefined) },
    pages: async function* (_spec, format, pageSize, maxRunBytes): AsyncGenerator<{ runs: RenderedPage[] }> {
      calls.pages.push([format, pageSize]);
      try {
        for (const page of state.pages ?? []) {
          calls.pagesRead++;
          yield { runs: scanRows(page.bytes, maxRunBytes).runs }; // as exportPages cuts them
        }
      } finally {
        calls.pagesClosed = true;
      }
    },
    secret: SECRET,
    maxRangeDays: 31,
    pageSize: 300,
    ...over,
  };
  return { ports: p, calls, checkpoint };
}

const rejection = (p: Promise<unknown>) => p.then(() => undefined, (e: unknown) => e as AppError);

describe('create', () => {
  test('counts the matching entries as the estimate and stores the job with who asked', async () => {
    const { ports: p, calls } = ports();
    const created = await new ExportService(p).create({ ...request, events: ['user.login'], query: 'alice' }, { requestedBy: requester, traceId: 'req_9' });
    expect(calls.count).toHaveLength(1);
    expect(calls.count[0]![0]).toEqual({ environment: 'live', from: '2026-11-01T00:00:00.000Z', to: '2026-11-02T00:00:00.000Z', events: ['user.login'] });
    expect(calls.count[0]![1]).toMatchObject({ where: expect.any(String) });
    expect(calls.created).toEqual([
      {
        environment: 'live',
        from: '2026-11-01T00:00:00.000Z',
        to: '2026-11-02T00:00:00.000Z',
        events: ['user.login'],
        query: 'alice',
        id: expect.stringMatching(/^exp_[0-9a-z]{26}$/),
        format: 'csv',
        estimatedRecords: 42,
        requestedBy: requester,
        traceId: 'req_9',
      },
    ]);
    expect(created.id).toBe(calls.created[0]!.id);
  });

  test('refuses bad input naming every faulty field at once, before counting', async () => {
    const { ports: p, calls } = ports();
    const service = new ExportService(p);
    const by = { requestedBy: requester, traceId: 'req_1' };
    const all = await rejection(service.create({ ...request, format: 'xml', from: '2026-11-02T00:00:00Z', to: '2026-11-01T00:00:00Z', events: ['user.login', 'user.nonsense'], query: '"unclosed' }, by));
    expect(all!.details.map((d) => d.field)).toEqual(['format', 'events[1]', 'to', 'query']);
    expect((await rejection(service.create({ ...request, to: '2026-12-15T00:00:00Z' }, by)))!.details).toMatchObject([{ field: 'to', message: 'the range from..to must be at most 31 days' }]);
    expect((await rejection(service.create({ ...request, from: undefined }, by)))!.details).toMatchObject([{ field: 'from' }]);
    expect((await rejection(service.create({ ...request, environment: 'prod' }, by)))!.details).toMatchObject([{ field: 'environment' }]);
    expect(calls.count).toHaveLength(0);
    expect(calls.created).toHaveLength(0);
  });
});

describe('status', () => {
  test('a job of the caller environment only; unknown and malformed ids are 404', async () => {
    const running = job();
    const service = new ExportService(ports({}, { jobs: [running] }).ports);
    expect(await service.status({ environment: 'live', id: running.id })).toEqual({ job: running });
    for (const [environment, id] of [['test', running.id], ['live', newId('exp')], ['live', 'exp_nope']] as const) {
      expect(await rejection(service.status({ environment, id }))).toMatchObject({ code: 'not_found', message: 'Export not found' });
    }
  });

  test('a completed job comes with its manifest, signed with the chain key, naming the checkpoint of its completion', async () => {
    const done = completed();
    const { ports: p, checkpoint } = ports({}, { jobs: [done] });
    const { manifest } = await new ExportService(p).status({ environment: 'live', id: done.id });
    expect(manifest).toMatchObject({
      version: 1,
      exportId: done.id,
      file: { sha256: done.sha256, sizeBytes: 100, records: 10 },
      positions: { first: 3, last: 12 },
      completedAt: done.completedAt,
      checkpoint,
      kid: p.chain!.key.kid,
    });
    const { signature, ...unsigned } = manifest!;
    expect(verify(null, Buffer.from(manifestSignedText(unsigned)), p.chain!.key.publicKey, Buffer.from(signature, 'base64url'))).toBe(true);
    // without a chain, or chained positions, or a checkpoint before completion
    expect((await new ExportService({ ...p, chain: undefined }).status({ environment: 'live', id: done.id })).manifest).toBeUndefined();
    const early = completed({ firstPosition: undefined, lastPosition: undefined, completedAt: '2026-11-03T00:00:00.000Z' });
    expect((await new ExportService(ports({}, { jobs: [early] }).ports).status({ environment: 'live', id: early.id })).manifest).toMatchObject({ positions: null, checkpoint: null });
  });
});

describe('rowChunks', () => {
  /** A page of `n` rendered rows (ids log_<from>...), each entry `size` bytes, in RowBinary. */
  const page = (from: number, n: number, size = 10): RenderedPage => ({
    bytes: rowBinary(Array.from({ length: n }, (_, i) => ({ seq: from + i + 1, ms: 1_000 + from + i, id: `log_${from + i}`, entry: String(from + i).padEnd(size, '.'), meta: '{}' }))),
    count: n,
  });
  const ids = (p: RenderedPage) => {
    const r = new RenderedRows(p.bytes);
    const out: string[] = [];
    while (r.next()) out.push(p.bytes.toString('utf8', r.idStart, r.idEnd));
    return out;
  };
  /** One row's bytes: 16 fixed, then id, entry and metadata with one-byte lengths. */
  const ROW = 16 + 1 + 'log_0'.length + 1 + 10 + 1 + 2;

  test('each page as runs of whole rows of at most maxBytes, with their row counts, in the format asked', async () => {
    const { ports: p, calls } = ports({}, { pages: [page(0, 3), page(3, 1)] });
    const got: RenderedPage[][] = [];
    for await (const chunks of new ExportService(p).rowChunks({ ...request, format: 'ndjson', pageSize: 0 }, 2 * ROW)) got.push(chunks);
    expect(got.map((runs) => runs.map((r) => ({ ids: ids(r), count: r.count, size: r.bytes.length })))).toEqual([
      [
        { ids: ['log_0', 'log_1'], count: 2, size: 2 * ROW },
        { ids: ['log_2'], count: 1, size: ROW },
      ],
      [{ ids: ['log_3'], count: 1, size: ROW }],
    ]);
    // runs are views of the page, which passes through unparsed
    expect(Buffer.concat(got[0]!.map((r) => r.bytes))).toEqual(page(0, 3).bytes);
    expect(calls.pages).toEqual([['ndjson', 300]]);
  });

  test('a page that fits is passed on as it is; a row larger than maxBytes is a run of its own', async () => {
    const small = page(0, 5);
    const big = page(5, 3, 500);
    const { ports: p } = ports({}, { pages: [small, big] });
    const got: RenderedPage[][] = [];
    for await (const chunks of new ExportService(p).rowChunks({ ...request, pageSize: 0 }, 5 * ROW)) got.push(chunks);
    expect(got[0]).toEqual([small]);
    expect(got[0]![0]!.bytes).toBe(small.bytes);
    expect(got[1]!.map((r) => [ids(r), r.count])).toEqual([
      [['log_5'], 1],
      [['log_6'], 1],
      [['log_7'], 1],
    ]);
  });

  test('the page size a request names, at most 100,000', async () => {
    const { ports: p, calls } = ports();
    const service = new ExportService(p);
    for (const pageSize of [50, 1_000_000]) {
      for await (const _ of service.rowChunks({ ...request, format: 'json', pageSize }, 100)) {
        // no pages: only the size asked of the source counts
      }
    }
    expect(calls.pages).toEqual([
      ['json', 50],
      ['json', 100_000],
    ]);
  });

  test('a taker that stops ends the reading of pages; a bad request fails before any', async () => {
    const { ports: p, calls } = ports({}, { pages: [page(0, 1), page(1, 1), page(2, 1)] });
    const service = new ExportService(p);
    for await (const _ of service.rowChunks({ ...request, pageSize: 0 }, 100)) break;
    expect(calls.pagesRead).toBe(1);
    expect(calls.pagesClosed).toBe(true);
    const it = service.rowChunks({ ...request, query: 'a*b', pageSize: 0 }, 100);
    expect(await rejection(it.next())).toMatchObject({ details: [{ field: 'query' }] });
    expect(calls.pages).toEqual([['csv', 300]]);
  });

  test('a worker must name a format the service renders', async () => {
    const { ports: p, calls } = ports({}, { pages: [page(0, 1)] });
    const service = new ExportService(p);
    for (const format of ['', 'xml', 'CSV']) {
      expect(await rejection(service.rowChunks({ ...request, format, pageSize: 0 }, 100).next())).toMatchObject({ code: 'invalid_request', details: [{ field: 'format' }] });
    }
    expect(calls.pages).toEqual([]);
  });
});

describe('downloads', () => {
  const content = 'id,event\n' + 'log_1,user.login\n'.repeat(5);
  const tokenOf = (j: ExportJob, format = j.format) => signDownloadToken({ exportId: j.id, format, environment: j.environment, expiresAt: new Date(j.expiresAt!) }, SECRET);
  const setup = (j: ExportJob) => ports({}, { jobs: [j], files: { [j.objectKey ?? 'none']: content } });
  const ask = (j: ExportJob, over: Partial<{ id: string; format: string; token: string; range: string }> = {}) => ({ id: j.id, format: j.format, token: tokenOf(j), range: '', ...over });

  test('the whole file, one byte range, or an unsatisfiable one; read serves what was opened', async () => {
    const done = completed();
    const { ports: p, calls } = setup(done);
    const service = new ExportService(p);
    const size = content.length;
    const whole = await service.openDownload(ask(done));
    expect(whole).toEqual({ job: done, size, start: 0, end: size - 1, partial: false, unsatisfiable: false });
    const part = await service.openDownload(ask(done, { range: 'bytes=9-29' }));
    expect(part).toMatchObject({ start: 9, end: 29, partial: true, unsatisfiable: false });
    expect(await service.openDownload(ask(done, { range: `bytes=${size}-` }))).toMatchObject({ start: 0, end: size - 1, partial: false, unsatisfiable: true });
    expect((await (await service.read(part)).toArray()).join('')).toBe(content.slice(9, 30));
    await service.read(whole);
    expect(calls.reads).toEqual([
      [done.objectKey, { start: 9, end: 29 }],
      [done.objectKey, undefined],
    ]);
  });

  test('refuses links that are not genuine, of another format, expired, or of an unfinished or vanished export', async () => {
    const done = completed();
    const service = new ExportService(setup(done).ports);
    const invalid = { code: 'forbidden', message: 'The download link is invalid' };
    const expired = { code: 'forbidden', message: 'The download link has expired' };
    const t = tokenOf(done);
    expect(await rejection(service.openDownload(ask(done, { token: t.slice(0, -2) + (t.endsWith('A') ? 'BB' : 'AA') })))).toMatchObject(invalid);
    expect(await rejection(service.openDownload(ask(done, { token: '' })))).toMatchObject(invalid);
    expect(await rejection(service.openDownload(ask(done, { format: 'json', token: tokenOf(done, 'json') })))).toMatchObject(invalid);
    expect(await rejection(service.openDownload(ask(done, { id: newId('exp') })))).toMatchObject(invalid);
    expect(await rejection(service.openDownload(ask(done, { id: 'nope' })))).toMatchObject(invalid);
    const lapsed = completed({ expiresAt: new Date(Date.now() - 1000).toISOString() });
    expect(await rejection(new ExportService(setup(lapsed).ports).openDownload(ask(lapsed)))).toMatchObject(expired);
    const removed = completed({ status: 'expired' });
    expect(await rejection(new ExportService(setup(removed).ports).openDownload(ask(removed)))).toMatchObject(expired);
    const running = job({ expiresAt: new Date(Date.now() + 60_000).toISOString() });
    expect(await rejection(new ExportService(setup(running).ports).openDownload(ask(running)))).toMatchObject({ code: 'not_found', message: 'Export file not found' });
    const vanished = completed();
    const noFile = new ExportService(ports({}, { jobs: [vanished] }).ports);
    expect(await rejection(noFile.openDownload(ask(vanished)))).toMatchObject({ code: 'not_found', message: 'Export file not found' });
    expect(await rejection(service.openDownload(ask(done)))).toBeUndefined();
  });

  test('a download from the first byte is recorded, by the anonymous holder of the link; a later range is not', async () => {
    const done = completed();
    const { ports: p, calls } = setup(done);
    const service = new ExportService(p);
    await service.recordDownload(await service.openDownload(ask(done)), { ip: '10.1.1.1', userAgent: 'curl' }, 'req_7');
    await service.recordDownload(await service.openDownload(ask(done, { range: 'bytes=0-9' })), { ip: '10.1.1.1', userAgent: 'curl' }, 'req_8');
    await service.recordDownload(await service.openDownload(ask(done, { range: 'bytes=9-' })), { ip: '10.1.1.1', userAgent: 'curl' }, 'req_9');
    const holder: Requester = { actor: { type: 'anonymous' }, context: { ip: '10.1.1.1', userAgent: 'curl' }, authMethod: 'download_token' };
    expect(calls.downloads).toEqual([
      [done, holder, 'req_7', { start: 0, end: content.length - 1, size: content.length }],
      [done, holder, 'req_8', { start: 0, end: 9, size: content.length }],
    ]);
  });
});
