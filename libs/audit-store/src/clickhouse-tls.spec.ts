/**
 * TLS to a ClickHouse server, against an HTTPS stand-in (no ClickHouse server runs here): it answers `/ping` and
 * queries as ClickHouse's HTTP interface does and records the client certificate and credentials it saw.
 */
import { createTestCa, writeKeyPair, type TestCa } from '@secsvc/dev/testing';
import { createLogger, Metrics } from '@secsvc/shared';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { openClickHouse, type ClickHouseClient } from './clickhouse';
import { clickHouseServer, clickHouseTlsProblems, type ClickHouseServerSettings } from './clickhouse-tls';

let dir: string;
let ca: TestCa;
const file = (name: string) => path.join(dir, name);

interface Seen {
  path: string;
  clientCert?: string;
  authorization?: string;
}

/** An HTTPS server with the CA's certificate for localhost; `mutual` requires a client certificate from the CA. */
async function fakeClickHouse(mutual: boolean): Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }> {
  const pair = await ca.issue('clickhouse');
  const seen: Seen[] = [];
  const server = https.createServer({ cert: pair.cert, key: pair.key, ca: ca.cert, requestCert: mutual, rejectUnauthorized: mutual }, (req, res) => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    seen.push({ path: req.url!.split('?')[0]!, clientCert: peer?.fingerprint256, authorization: req.headers.authorization });
    // Every answer closes its connection, so each request is a new TLS handshake.
    res.setHeader('Connection', 'close');
    if (req.url === '/ping') return void res.end('Ok.\n');
    req.resume();
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/x-ndjson; charset=UTF-8');
      res.end('{"answer":42}\n');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://localhost:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const opened: { close: () => Promise<unknown> }[] = [];
beforeEach(() => {
  // @clickhouse/client logs each refused connection on the console.
  jest.spyOn(console, 'warn').mockImplementation(() => undefined);
  jest.spyOn(console, 'error').mockImplementation(() => undefined);
});
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
  jest.restoreAllMocks();
});

async function open(settings: ClickHouseServerSettings & { CLICKHOUSE_URL: string }, metrics?: Metrics, refreshMs?: number): Promise<ClickHouseClient> {
  expect(clickHouseTlsProblems(settings)).toEqual([]);
  const ch = await openClickHouse(clickHouseServer(settings, { logger: createLogger('test', 'silent'), metrics, refreshMs }));
  opened.push(ch);
  return ch;
}

async function answer(ch: ClickHouseClient): Promise<unknown> {
  const rs = await ch.query({ query: 'SELECT 42 AS answer', format: 'JSONEachRow' });
  return rs.json();
}

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-clickhouse-tls-'));
  ca = await createTestCa();
  await writeFile(file('ca.crt'), ca.cert);
  await writeFile(file('other-ca.crt'), (await createTestCa('another CA')).cert);
  await writeKeyPair(dir, 'client', await ca.issue('audit'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('ClickHouse over HTTPS', () => {
  it('verifies the server with CLICKHOUSE_CA_FILE and keeps password authentication', async () => {
    const server = await fakeClickHouse(false);
    opened.push(server);
    const ch = await open({ CLICKHOUSE_URL: server.url, CLICKHOUSE_USER: 'audit', CLICKHOUSE_PASSWORD: 'pw', CLICKHOUSE_CA_FILE: file('ca.crt') });
    expect(await ch.ping()).toEqual({ success: true });
    expect(await answer(ch)).toEqual([{ answer: 42 }]);
    expect(server.seen.map((s) => s.path)).toEqual(['/ping', '/']);
    expect(server.seen[1]!.authorization).toBe(`Basic ${Buffer.from('audit:pw').toString('base64')}`);
  });

  it('refuses a server whose certificate is not from the CA', async () => {
    const server = await fakeClickHouse(false);
    opened.push(server);
    const ch = await open({ CLICKHOUSE_URL: server.url, CLICKHOUSE_CA_FILE: file('other-ca.crt') });
    const ping = await ch.ping();
    expect(ping.success).toBe(false);
    expect(String((ping as { error: Error }).error)).toMatch(/self[- ]signed|unable to (get|verify)/i);
    await expect(answer(ch)).rejects.toThrow(/self[- ]signed|unable to (get|verify)/i);
    expect(server.seen).toEqual([]);
  });

  it('mutual TLS: presents CLICKHOUSE_CERT_FILE; without it the server refuses', async () => {
    const server = await fakeClickHouse(true);
    opened.push(server);
    const ch = await open({ CLICKHOUSE_URL: server.url, CLICKHOUSE_CA_FILE: file('ca.crt'), CLICKHOUSE_CERT_FILE: file('client.crt'), CLICKHOUSE_KEY_FILE: file('client.key') });
    expect(await answer(ch)).toEqual([{ answer: 42 }]);
    expect(server.seen[0]!.clientCert).toBe(fingerprint(readFileSync(file('client.crt'), 'utf8')));
    const anonymous = await open({ CLICKHOUSE_URL: server.url, CLICKHOUSE_CA_FILE: file('ca.crt') });
    expect((await anonymous.ping()).success).toBe(false);
    expect(server.seen).toHaveLength(1);
  });

  it('a client certificate replaced on disk is presented on new connections; its expiry is in the gauge', async () => {
    const server = await fakeClickHouse(true);
    opened.push(server);
    const sub = await mkdtemp(path.join(dir, 'reload-'));
    const first = await ca.issue('audit', { notAfter: new Date('2031-01-01T00:00:00Z') });
    const { certFile, keyFile } = await writeKeyPair(sub, 'tls', first);
    const metrics = new Metrics('test');
    const ch = await open({ CLICKHOUSE_URL: server.url, CLICKHOUSE_CA_FILE: file('ca.crt'), CLICKHOUSE_CERT_FILE: certFile, CLICKHOUSE_KEY_FILE: keyFile }, metrics, 50);
    const gauge = async () => (await metrics.registry.getSingleMetric('tls_certificate_expiry_timestamp_seconds')!.get()).values;
    expect(await ch.ping()).toEqual({ success: true });
    expect(server.seen.at(-1)!.clientCert).toBe(fingerprint(first.cert));
    expect(await gauge()).toEqual([{ labels: { use: 'clickhouse' }, value: Date.parse('2031-01-01T00:00:00Z') / 1000 }]);
    const second = await ca.issue('audit', { notAfter: new Date('2032-01-01T00:00:00Z') });
    await writeKeyPair(sub, 'tls', second);
    const deadline = Date.now() + 5000;
    while (server.seen.at(-1)!.clientCert !== fingerprint(second.cert) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      expect(await ch.ping()).toEqual({ success: true });
    }
    expect(server.seen.at(-1)!.clientCert).toBe(fingerprint(second.cert));
    expect(await gauge()).toEqual([{ labels: { use: 'clickhouse' }, value: Date.parse('2032-01-01T00:00:00Z') / 1000 }]);
  });
});

describe('clickHouseTlsProblems', () => {
  it('names files without an https URL and a certificate without its key (the files are read by clickHouseServer)', () => {
    expect(clickHouseTlsProblems({})).toEqual([]);
    expect(clickHouseTlsProblems({ CLICKHOUSE_URL: 'https://ch:8443' })).toEqual([]);
    expect(clickHouseTlsProblems({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CA_FILE: file('ca.crt') })).toEqual([
      'CLICKHOUSE_CA_FILE: only used with an https:// CLICKHOUSE_URL (value hidden)',
    ]);
    expect(clickHouseTlsProblems({ CLICKHOUSE_CERT_FILE: file('client.crt') })).toEqual(['CLICKHOUSE_CERT_FILE: only used with an https:// CLICKHOUSE_URL (not set)']);
    expect(clickHouseTlsProblems({ CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_CERT_FILE: file('client.crt') })).toEqual(['CLICKHOUSE_CERT_FILE, CLICKHOUSE_KEY_FILE: both or neither']);
    expect(clickHouseTlsProblems({ CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_CA_FILE: file('absent.crt') })).toEqual([]);
  });

  it('clickHouseServer names an unusable file', () => {
    expect(() => clickHouseServer({ CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_CA_FILE: file('absent.crt') })).toThrow(
      `CLICKHOUSE_CA_FILE: cannot be read (ENOENT) (got "${file('absent.crt')}")`,
    );
    expect(() => clickHouseServer({ CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_CERT_FILE: file('client.crt'), CLICKHOUSE_KEY_FILE: file('client.crt') })).toThrow(
      `CLICKHOUSE_KEY_FILE: holds no unencrypted PEM private key (got "${file('client.crt')}")`,
    );
    expect(clickHouseServer({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_USER: 'u' })).toEqual({ url: 'http://ch:8123', username: 'u', password: undefined, database: undefined });
  });
});
