import * as grpc from '@grpc/grpc-js';
import { identity, descriptorSets, serviceNames } from '@secsvc/proto';
import { createTestCa, writeKeyPair, type TestCa, type TestKeyPair } from '@secsvc/dev/testing';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { ConfigError } from '../config';
import { AppError } from '../errors';
import { createLogger } from '../logger';
import { Metrics } from '../metrics';
import { checkHealth, createClient, promiseClient } from './client';
import { startGrpcServer, type RunningGrpcServer } from './server';
import { GrpcTls, grpcTlsProblems, type GrpcTlsSettings } from './tls';
import { WatchedCertificates } from './tls-files';

const logger = createLogger('test', 'silent');
let dir: string;
let ca: TestCa;
let otherCa: TestCa;
/** Files: ca.crt (the CA), other-ca.crt, server.*, client.*, stranger.* (a client certificate of the other CA). */
const file = (name: string) => path.join(dir, name);
let serverPair: TestKeyPair;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-grpc-tls-'));
  ca = await createTestCa();
  otherCa = await createTestCa('another CA');
  await writeFile(file('ca.crt'), ca.cert);
  await writeFile(file('other-ca.crt'), otherCa.cert);
  serverPair = await ca.issue('policy');
  await writeKeyPair(dir, 'server', serverPair);
  await writeKeyPair(dir, 'client', await ca.issue('gateway'));
  await writeKeyPair(dir, 'stranger', await otherCa.issue('gateway'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

const settings = (mode: GrpcTlsSettings['GRPC_TLS'], pair: string | undefined, caFile: string | undefined, serverName?: string): GrpcTlsSettings => ({
  GRPC_TLS: mode,
  ...(pair && { GRPC_TLS_CERT_FILE: file(`${pair}.crt`), GRPC_TLS_KEY_FILE: file(`${pair}.key`) }),
  ...(caFile && { GRPC_TLS_CA_FILE: file(caFile) }),
  ...(serverName && { GRPC_TLS_SERVER_NAME: serverName }),
});

/** Everything a test made, closed after it. */
const opened: { close: () => unknown }[] = [];
afterEach(async () => {
  for (const o of opened.splice(0).reverse()) await o.close();
});

function transport(s: GrpcTlsSettings, metrics?: Metrics, refreshMs?: number): GrpcTls {
  const t = GrpcTls.fromConfig(s, { logger, metrics, refreshMs });
  opened.push(t);
  return t;
}

/** identity's service definition with getUser answering (a real unary RPC through our server and client code). */
async function serve(t: GrpcTls): Promise<RunningGrpcServer> {
  const notHere = async () => {
    throw AppError.notFound('RPC in this test');
  };
  const implementation: Record<string, () => Promise<unknown>> = Object.fromEntries(Object.keys(identity.IdentityServiceService).map((k) => [k, notHere]));
  implementation.getUser = async (): Promise<identity.User> => ({ id: 'usr_1', email: 'ada@example.com', name: 'Ada', environment: 'live', roles: [], emailVerified: false, metadataJson: '{}', createdAt: '2024-05-01T10:00:00.000Z', updatedAt: '2024-05-01T10:00:00.000Z' });
  const server = await startGrpcServer({
    host: '127.0.0.1',
    port: 0,
    logger,
    metrics: new Metrics('test'),
    descriptorSets,
    services: [{ name: serviceNames.identity, definition: identity.IdentityServiceService, implementation }],
    tls: t,
  });
  opened.push({ close: () => server.close(0) });
  return server;
}

/** One getUser call through createClient + promiseClient (what the gateway does); the error code when refused. */
async function getUser(address: string, t: GrpcTls): Promise<string> {
  const raw = createClient(identity.IdentityServiceClient, address, undefined, t);
  try {
    const user = await promiseClient(raw, { deadlineMs: 3000 }).getUser({ id: 'usr_1', environment: 'live' });
    return `ok:${user.id}`;
  } catch (err) {
    return `refused:${(err as AppError).code}`;
  } finally {
    raw.close();
  }
}

/** The certificate a server presents to a new TLS connection (SHA-256 fingerprint). */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca.cert, ALPNProtocols: ['h2'] }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.destroy();
    });
    socket.on('error', reject);
  });
}

const fingerprint = (pem: string) => new X509Certificate(pem).fingerprint256;

async function eventually(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('grpcTlsProblems', () => {
  it('accepts off without files, and complete tls / mtls settings', () => {
    expect(grpcTlsProblems({ GRPC_TLS: 'off', GRPC_TLS_CA_FILE: '/nowhere' }, 'server')).toEqual([]);
    expect(grpcTlsProblems(settings('tls', 'server', undefined), 'server')).toEqual([]);
    expect(grpcTlsProblems(settings('tls', undefined, 'ca.crt'), 'client')).toEqual([]);
    expect(grpcTlsProblems(settings('mtls', 'client', 'ca.crt'), 'client')).toEqual([]);
    expect(grpcTlsProblems(settings('mtls', 'server', 'ca.crt'), 'server')).toEqual([]);
  });

  it('names what a role lacks', () => {
    expect(grpcTlsProblems(settings('tls', undefined, 'ca.crt'), 'server')).toEqual([
      expect.stringMatching(/^GRPC_TLS_CERT_FILE: required with GRPC_TLS=tls/),
      expect.stringMatching(/^GRPC_TLS_KEY_FILE: required with GRPC_TLS=tls/),
    ]);
    expect(grpcTlsProblems(settings('tls', undefined, undefined), 'client')).toEqual([expect.stringMatching(/^GRPC_TLS_CA_FILE: required with GRPC_TLS=tls/)]);
    expect(grpcTlsProblems(settings('mtls', 'server', undefined), 'server')).toEqual([expect.stringMatching(/^GRPC_TLS_CA_FILE: required with GRPC_TLS=mtls/)]);
    expect(grpcTlsProblems(settings('mtls', undefined, 'ca.crt'), 'client')).toHaveLength(2);
    expect(grpcTlsProblems({ GRPC_TLS: 'tls', GRPC_TLS_CERT_FILE: file('client.crt'), GRPC_TLS_CA_FILE: file('ca.crt') }, 'client')).toEqual([
      'GRPC_TLS_CERT_FILE, GRPC_TLS_KEY_FILE: both or neither',
    ]);
  });

  it('reads nothing: the files are checked when the process starts', () => {
    expect(grpcTlsProblems({ GRPC_TLS: 'mtls', GRPC_TLS_CERT_FILE: '/absent/tls.crt', GRPC_TLS_KEY_FILE: '/absent/tls.key', GRPC_TLS_CA_FILE: '/absent/ca.crt' }, 'server')).toEqual([]);
  });
});

describe('GrpcTls.fromConfig', () => {
  /** The ConfigError line of settings whose files cannot be used. */
  const problem = (s: GrpcTlsSettings) => {
    try {
      transport(s);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
    throw new Error('expected a ConfigError');
  };

  it('names an unreadable or unusable file, never showing a key', () => {
    expect(problem({ ...settings('mtls', 'server', 'ca.crt'), GRPC_TLS_CA_FILE: file('absent.crt') })).toEqual([`GRPC_TLS_CA_FILE: cannot be read (ENOENT) (got "${file('absent.crt')}")`]);
    expect(problem({ ...settings('tls', 'server', undefined), GRPC_TLS_KEY_FILE: file('client.key') })).toEqual([`GRPC_TLS_KEY_FILE: is not the key of the certificate (got "${file('client.key')}")`]);
    expect(problem({ ...settings('tls', 'server', undefined), GRPC_TLS_CERT_FILE: file('server.key') })).toEqual([`GRPC_TLS_CERT_FILE: holds no PEM certificate (got "${file('server.key')}")`]);
    const [caIsKey] = problem(settings('tls', undefined, 'client.key'));
    expect(caIsKey).toMatch(/^GRPC_TLS_CA_FILE: holds no PEM certificate/);
    expect(caIsKey).not.toContain('PRIVATE KEY');
    expect(problem({ ...settings('tls', 'server', undefined), GRPC_TLS_KEY_FILE: file('server.crt') })).toEqual([`GRPC_TLS_KEY_FILE: holds no unencrypted PEM private key (got "${file('server.crt')}")`]);
  });

  it('reads no file with GRPC_TLS=off', () => {
    expect(GrpcTls.fromConfig({ GRPC_TLS: 'off', GRPC_TLS_CA_FILE: file('absent.crt') })).toBe(GrpcTls.off);
  });
});

describe('gRPC over TLS', () => {
  it('tls: a client trusting the CA calls the server (name from the address, or GRPC_TLS_SERVER_NAME); plain and other-CA clients are refused', async () => {
    // The server has no CA file: with tls it neither needs nor asks for client certificates.
    const server = await serve(transport(settings('tls', 'server', undefined)));
    const client = transport(settings('tls', undefined, 'ca.crt'));
    expect(await getUser(`localhost:${server.port}`, client)).toBe('ok:usr_1');
    expect(await getUser(`127.0.0.1:${server.port}`, transport(settings('tls', undefined, 'ca.crt', 'localhost')))).toBe('ok:usr_1');
    expect(await checkHealth(`localhost:${server.port}`, serviceNames.identity, 3000, client)).toBe(true);
    // The certificate names localhost and 127.0.0.1, not this.
    expect(await getUser(`127.0.0.1:${server.port}`, transport(settings('tls', undefined, 'ca.crt', 'policy.other')))).toBe('refused:unavailable');
    expect(await getUser(`localhost:${server.port}`, transport(settings('tls', undefined, 'other-ca.crt')))).toBe('refused:unavailable');
    expect(await getUser(`localhost:${server.port}`, GrpcTls.off)).toBe('refused:unavailable');
    expect(await checkHealth(`localhost:${server.port}`)).toBe(false);
  });

  it('mtls: only a client presenting a certificate from the CA is served', async () => {
    const server = await serve(transport(settings('mtls', 'server', 'ca.crt')));
    const address = `localhost:${server.port}`;
    expect(await getUser(address, transport(settings('mtls', 'client', 'ca.crt')))).toBe('ok:usr_1');
    // Trusts the server but has no certificate to present.
    expect(await getUser(address, transport(settings('tls', undefined, 'ca.crt')))).toBe('refused:unavailable');
    // Presents a certificate of another CA.
    expect(await getUser(address, transport({ ...settings('mtls', 'stranger', 'ca.crt') }))).toBe('refused:unavailable');
    // Has a good certificate but does not trust the server's CA.
    expect(await getUser(address, transport(settings('mtls', 'client', 'other-ca.crt')))).toBe('refused:unavailable');
    expect(await checkHealth(address, '', 3000, transport(settings('tls', undefined, 'ca.crt')))).toBe(false);
  });

  it('a server certificate replaced on disk is served to new connections without a restart; the expiry gauge follows', async () => {
    const sub = await mkdtemp(path.join(dir, 'reload-'));
    const first = await ca.issue('policy', { notAfter: new Date('2031-01-01T00:00:00Z') });
    const { certFile, keyFile } = await writeKeyPair(sub, 'tls', first);
    const metrics = new Metrics('test');
    const serverTls = transport({ GRPC_TLS: 'mtls', GRPC_TLS_CERT_FILE: certFile, GRPC_TLS_KEY_FILE: keyFile, GRPC_TLS_CA_FILE: file('ca.crt') }, metrics, 50);
    const server = await serve(serverTls);
    const gauge = async () => (await metrics.registry.getSingleMetric('tls_certificate_expiry_timestamp_seconds')!.get()).values;
    expect(await servedFingerprint(server.port)).toBe(fingerprint(first.cert));
    expect(await gauge()).toEqual([{ labels: { use: 'grpc' }, value: Date.parse('2031-01-01T00:00:00Z') / 1000 }]);

    const second = await ca.issue('policy', { notAfter: new Date('2032-01-01T00:00:00Z') });
    // The key first: for a moment the files do not match, and the old pair stays in use.
    await writeFile(keyFile, second.key);
    await new Promise((r) => setTimeout(r, 150));
    expect(await servedFingerprint(server.port)).toBe(fingerprint(first.cert));
    await writeFile(certFile, second.cert);
    await eventually(async () => (await servedFingerprint(server.port)) === fingerprint(second.cert));
    expect(await gauge()).toEqual([{ labels: { use: 'grpc' }, value: Date.parse('2032-01-01T00:00:00Z') / 1000 }]);
    expect(await getUser(`localhost:${server.port}`, transport(settings('mtls', 'client', 'ca.crt')))).toBe('ok:usr_1');
  });

  it('a client certificate replaced on disk is presented on new connections', async () => {
    // A bare grpc-js server answering with the SHA-256 fingerprint of the client certificate it saw.
    const server = new grpc.Server();
    const method = {
      path: '/test.Peer/Who',
      requestStream: false,
      responseStream: false,
      requestSerialize: (b: Buffer) => b,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: (s: string) => Buffer.from(s),
      responseDeserialize: (b: Buffer) => b.toString(),
    };
    server.addService({ who: method }, { who: (call: grpc.ServerUnaryCall<Buffer, string>, cb: grpc.sendUnaryData<string>) => cb(null, call.getAuthContext().sslPeerCertificate?.fingerprint256 ?? '') });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', transport(settings('mtls', 'server', 'ca.crt')).serverCredentials(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    opened.push({ close: () => server.forceShutdown() });
    const sub = await mkdtemp(path.join(dir, 'client-reload-'));
    const first = await ca.issue('gateway');
    const { certFile, keyFile } = await writeKeyPair(sub, 'tls', first);
    const clientTls = transport({ GRPC_TLS: 'mtls', GRPC_TLS_CERT_FILE: certFile, GRPC_TLS_KEY_FILE: keyFile, GRPC_TLS_CA_FILE: file('ca.crt') }, undefined, 50);
    // A fresh channel per call (its own subchannel pool), so each call is a new connection.
    const who = () =>
      new Promise<string>((resolve, reject) => {
        const client = new grpc.Client(`localhost:${port}`, clientTls.channelCredentials(), { ...clientTls.channelOptions(), 'grpc.use_local_subchannel_pool': 1 });
        client.makeUnaryRequest(method.path, method.requestSerialize, method.responseDeserialize, Buffer.alloc(0), { deadline: Date.now() + 3000 }, (err, res) => {
          client.close();
          return err ? reject(err) : resolve(res!);
        });
      });
    expect(await who()).toBe(fingerprint(first.cert));
    const second = await ca.issue('gateway');
    await writeKeyPair(sub, 'tls', second);
    await eventually(async () => (await who()) === fingerprint(second.cert));
  });
});

describe('WatchedCertificates', () => {
  it('keeps the last good material while the files are unusable, and reports each problem once', async () => {
    const sub = await mkdtemp(path.join(dir, 'watch-'));
    const { certFile, keyFile } = await writeKeyPair(sub, 'tls', serverPair);
    const errors: string[] = [];
    const loads: string[] = [];
    const watched = new WatchedCertificates(
      { certFile, keyFile },
      { refreshMs: 60_000, onLoad: (m) => loads.push(m.leaf!.fingerprint256), onError: (e) => errors.push(`${e.which}: ${e.message}`) },
    );
    opened.push(watched);
    expect(loads).toEqual([fingerprint(serverPair.cert)]);
    expect(watched.refresh()).toBe(false);
    await rm(keyFile);
    expect(watched.refresh()).toBe(false);
    expect(watched.refresh()).toBe(false);
    expect(errors).toEqual(['keyFile: cannot be read (ENOENT)']);
    expect(watched.current.cert!.toString()).toBe(serverPair.cert);
    const next = await ca.issue('policy');
    await writeKeyPair(sub, 'tls', next);
    expect(watched.refresh()).toBe(true);
    expect(loads).toEqual([fingerprint(serverPair.cert), fingerprint(next.cert)]);
    expect(() => new WatchedCertificates({ certFile: file('absent.crt') })).toThrow('cannot be read (ENOENT)');
  });
});
