/**
 * The object-store port's contract, run against the local-directory adapter and the S3 adapter on a real
 * S3-compatible server (versitygw over a posix directory, started by the test harness).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { createLocalObjectStore, createObjectStore, createS3ObjectStore, parseByteRange, unsignedPayload, type ObjectStore, type PayloadSigning } from '../src/object-store';
import { loadConfig } from '../src/config';
import { objectStoreConfig } from '../src/object-store/config';
import { s3SkipReason, startTestS3, type TestS3 } from '@secsvc/dev/testing';

async function bytes(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

async function put(store: ObjectStore, key: string, data: Buffer, chunk = 64 * 1024): Promise<number> {
  const w = await store.create(key, 'application/octet-stream');
  for (let i = 0; i < data.length; i += chunk) await w.write(data.subarray(i, i + chunk));
  return (await w.finish()).size;
}

function contract(name: string, open: () => Promise<{ store: ObjectStore; partSize: number; cleanup: () => Promise<void> }>) {
  describe(name, () => {
    let store: ObjectStore;
    let partSize: number;
    let cleanup: () => Promise<void>;
    beforeAll(async () => ({ store, partSize, cleanup } = await open()), 60_000);
    afterAll(async () => {
      await store?.close();
      await cleanup?.();
    });

    it('writes a small object in one piece and reads it back whole and by ranges', async () => {
      const data = Buffer.from('id,event\nlog_1,user.login\n');
      expect(await put(store, 'live/exp_small/1.csv', data, 5)).toBe(data.length);
      expect(await store.stat('live/exp_small/1.csv')).toEqual({ size: data.length });
      expect(await bytes(await store.read('live/exp_small/1.csv'))).toEqual(data);
      expect((await bytes(await store.read('live/exp_small/1.csv', { start: 3, end: 7 }))).toString()).toBe('event');
      expect((await bytes(await store.read('live/exp_small/1.csv', { start: data.length - 1, end: data.length - 1 }))).toString()).toBe('\n');
    });

    it('writes an object larger than several parts (multipart) with the same bytes and digest', async () => {
      const data = randomBytes(partSize * 2 + 12_345);
      expect(await put(store, 'live/exp_big/1.json', data, 1024 * 1024)).toBe(data.length);
      expect(await store.stat('live/exp_big/1.json')).toEqual({ size: data.length });
      const back = await bytes(await store.read('live/exp_big/1.json'));
      expect(createHash('sha256').update(back).digest('hex')).toBe(createHash('sha256').update(data).digest('hex'));
      const mid = await bytes(await store.read('live/exp_big/1.json', { start: partSize - 10, end: partSize + 9 }));
      expect(mid).toEqual(data.subarray(partSize - 10, partSize + 10));
    });

    it('shows nothing under the key before finish, and an aborted write leaves nothing', async () => {
      const w = await store.create('live/exp_abort/1.csv', 'text/csv');
      await w.write(randomBytes(partSize + 1));
      expect(await store.stat('live/exp_abort/1.csv')).toBeUndefined();
      await w.abort();
      expect(await store.stat('live/exp_abort/1.csv')).toBeUndefined();
    });

    it('an empty object is an object of size 0', async () => {
      const w = await store.create('test/exp_empty/1.csv', 'text/csv');
      expect(await w.finish()).toEqual({ size: 0 });
      expect(await store.stat('test/exp_empty/1.csv')).toEqual({ size: 0 });
    });

    it('deletes (a missing object too), and refuses unsafe keys', async () => {
      await put(store, 'live/exp_del/1.csv', Buffer.from('x'));
      await store.delete('live/exp_del/1.csv');
      await store.delete('live/exp_del/1.csv');
      expect(await store.stat('live/exp_del/1.csv')).toBeUndefined();
      await expect(store.read('live/exp_del/1.csv')).rejects.toBeDefined();
      for (const bad of ['../x', 'a/../../x', '/abs', 'a//b', '', 'a b']) await expect(store.create(bad, 'text/csv')).rejects.toThrow('invalid object key');
    });

    it('sweep removes what a killed writer left behind', async () => {
      const w = await store.create('live/exp_killed/1.csv', 'text/csv');
      await w.write(randomBytes(partSize + 10)); // a part is uploaded (S3) / the partial file exists (local)
      // Never finished nor aborted: the writer "died". Sweeps with a future cutoff remove what it left (its
      // last part may still be arriving, which can leave the upload listed once more: sweep until clean).
      let removed = 0;
      for (let round = 0; round < 50; round++) {
        const n = await store.sweep(-60_000);
        removed += n;
        if (n === 0 && removed > 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(removed).toBeGreaterThanOrEqual(1);
      expect(await store.sweep(-60_000)).toBe(0);
      expect(await store.stat('live/exp_killed/1.csv')).toBeUndefined();
      await w.abort(); // releases the writer's file handle (local) once the test is done with the "dead" writer
    });
  });
}

contract('local directory store', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-objects-'));
  return { store: createLocalObjectStore(dir), partSize: 1024 * 1024, cleanup: () => rm(dir, { recursive: true, force: true }) };
});

test('local store: a fresh partial file survives a sweep with a cutoff in the past', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-objects-'));
  try {
    const store = createLocalObjectStore(dir);
    const w = await store.create('a/b.csv', 'text/csv');
    await w.write(Buffer.from('x'));
    expect(await store.sweep(60_000)).toBe(0);
    const [partial] = await readdir(path.join(dir, 'a'));
    const old = new Date(Date.now() - 120_000);
    await utimes(path.join(dir, 'a', partial!), old, old);
    expect(await store.sweep(60_000)).toBe(1);
    await writeFile(path.join(dir, 'a', 'b.csv'), 'kept');
    expect(await store.sweep(0)).toBe(0);
    await w.abort();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

const skip = s3SkipReason();
if (skip) process.stderr.write(`SKIPPED "S3 store (versitygw)": ${skip}\n`);
const describeS3 = skip ? describe.skip : describe; // skip reason: no versitygw outside CI (CI=true throws instead)

describeS3('S3 store (versitygw)', () => {
  let s3: TestS3;
  beforeAll(async () => void (s3 = await startTestS3()), 30_000);
  afterAll(async () => s3?.stop());

  contract('S3 adapter, multipart with 5 MiB parts', async () => {
    const bucket = await s3.createBucket();
    const store = createS3ObjectStore({ bucket, endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true, prefix: 'exports/', partSize: 5 * 1024 * 1024 });
    return { store, partSize: 5 * 1024 * 1024, cleanup: async () => undefined };
  });

  contract('S3 adapter, signed payloads (SigV4 over the SHA-256 of each part)', async () => {
    const bucket = await s3.createBucket();
    const store = createS3ObjectStore({ bucket, endpoint: s3.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true, partSize: 5 * 1024 * 1024, payloadSigning: 'signed' });
    return { store, partSize: 5 * 1024 * 1024, cleanup: async () => undefined };
  });

  /** A loopback HTTP proxy in front of versitygw that records each upload's x-amz-content-sha256 (by query). */
  async function recordingProxy(): Promise<{ endpoint: string; seen: { op: string; sha: string }[]; close: () => Promise<void> }> {
    const target = new URL(s3.endpoint);
    const seen: { op: string; sha: string }[] = [];
    const server: Server = createServer((req, res) => {
      if (req.method === 'PUT') seen.push({ op: /[?&]partNumber=/.test(req.url ?? '') ? 'UploadPart' : 'PutObject', sha: String(req.headers['x-amz-content-sha256']) });
      // Headers as received (the signature covers the Host the client addressed: this proxy's).
      const up = httpRequest({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      up.on('error', () => res.destroy());
      req.pipe(up);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    return { endpoint: `http://127.0.0.1:${port}`, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  it.each<[PayloadSigning, 'UNSIGNED-PAYLOAD' | 'sha256']>([
    ['auto', 'UNSIGNED-PAYLOAD'],
    ['unsigned', 'UNSIGNED-PAYLOAD'],
    ['signed', 'sha256'],
  ])('payloadSigning %s on a loopback http endpoint sends %s bodies, and the server stores the same bytes', async (payloadSigning, expected) => {
    const bucket = await s3.createBucket();
    const proxy = await recordingProxy();
    const store = createS3ObjectStore({ bucket, endpoint: proxy.endpoint, region: s3.region, accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey, forcePathStyle: true, partSize: 5 * 1024 * 1024, payloadSigning });
    try {
      const big = randomBytes(5 * 1024 * 1024 + 777);
      expect(await put(store, 'p/big.json', big, 1024 * 1024)).toBe(big.length);
      await put(store, 'p/small.json', Buffer.from('[]'));
      expect((await bytes(await store.read('p/big.json'))).equals(big)).toBe(true);
      expect((await bytes(await store.read('p/small.json'))).toString()).toBe('[]');
      expect(proxy.seen.map((s) => s.op).sort()).toEqual(['PutObject', 'UploadPart', 'UploadPart']);
      for (const s of proxy.seen) expect(s.sha).toMatch(expected === 'sha256' ? /^[0-9a-f]{64}$/ : /^UNSIGNED-PAYLOAD$/);
    } finally {
      await store.close();
      await proxy.close();
    }
  });

  it('is chosen by configuration (S3_BUCKET) and writes through to the server', async () => {
    const bucket = await s3.createBucket();
    const store = createObjectStore(loadConfig(objectStoreConfig, s3.env(bucket)));
    expect(store.kind).toBe('s3');
    await put(store, 'x/1.csv', Buffer.from('hello'));
    expect(await store.stat('x/1.csv')).toEqual({ size: 5 });
    await store.close();
  });
});

test('configuration: local by default; s3 needs a bucket; credentials come in pairs', () => {
  expect(createObjectStore(loadConfig(objectStoreConfig, {})).kind).toBe('local');
  expect(() => createObjectStore(loadConfig(objectStoreConfig, { EXPORT_STORE: 's3' }))).toThrow('S3_BUCKET');
  expect(() => createObjectStore(loadConfig(objectStoreConfig, { S3_BUCKET: 'exports', S3_ACCESS_KEY_ID: 'a' }))).toThrow('set both or neither');
  expect(() => loadConfig(objectStoreConfig, { S3_PART_SIZE_MB: '4' })).toThrow('S3_PART_SIZE_MB');
  expect(() => loadConfig(objectStoreConfig, { S3_BUCKET: 'Bad_Bucket' })).toThrow('S3_BUCKET');
  expect(loadConfig(objectStoreConfig, {}).S3_PAYLOAD_SIGNING).toBe('auto');
  expect(() => loadConfig(objectStoreConfig, { S3_PAYLOAD_SIGNING: 'none' })).toThrow('S3_PAYLOAD_SIGNING');
});

test('payload signing: auto leaves bodies unsigned only on an http endpoint on this machine', () => {
  for (const endpoint of ['http://127.0.0.1:7070', 'http://127.1.2.3:7070/', 'http://localhost:7070', 'http://[::1]:7070']) expect(unsignedPayload({ endpoint })).toBe(true);
  // AWS (no endpoint), TLS, and plain http across a network keep signed bodies unless configured otherwise.
  for (const endpoint of [undefined, 'https://127.0.0.1:7070', 'https://s3.example.com', 'http://10.0.0.5:7070', 'http://s3.internal:7070', 'http://127.0.0.1.example.com', 'not a url']) {
    expect(unsignedPayload({ endpoint })).toBe(false);
    expect(unsignedPayload({ endpoint, payloadSigning: 'unsigned' })).toBe(true);
  }
  expect(unsignedPayload({ endpoint: 'http://127.0.0.1:7070', payloadSigning: 'signed' })).toBe(false);
});

test('HTTP Range header: one range served, others ignored, unsatisfiable ones named', () => {
  expect(parseByteRange(undefined, 100)).toBeUndefined();
  expect(parseByteRange('bytes=0-9', 100)).toEqual({ start: 0, end: 9 });
  expect(parseByteRange('bytes=90-', 100)).toEqual({ start: 90, end: 99 });
  expect(parseByteRange('bytes=90-500', 100)).toEqual({ start: 90, end: 99 });
  expect(parseByteRange('bytes=-10', 100)).toEqual({ start: 90, end: 99 });
  expect(parseByteRange('bytes=-500', 100)).toEqual({ start: 0, end: 99 });
  expect(parseByteRange('bytes=100-', 100)).toBe('unsatisfiable');
  expect(parseByteRange('bytes=-0', 100)).toBe('unsatisfiable');
  expect(parseByteRange('bytes=0-0', 0)).toBe('unsatisfiable');
  for (const ignored of ['bytes=0-1,5-6', 'items=0-1', 'bytes=5-1', 'bytes=-', 'bytes=x-1', 'garbage']) expect(parseByteRange(ignored, 100)).toBeUndefined();
});
