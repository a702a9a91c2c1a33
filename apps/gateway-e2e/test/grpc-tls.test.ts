/**
 * GRPC_TLS=mtls end to end: the built policy service (runGrpcService) serves mutual TLS with certificates this
 * test makes, and the gateway's own configuration and client code (loadGatewayConfig, GrpcTls, createClient,
 * promiseClient, checkHealth) call it; clients without a certificate from the CA are refused.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { policy } from '@secsvc/proto';
import { checkHealth, createClient, GrpcTls, promiseClient, AppError } from '@secsvc/shared';
import { createTestCa, stopTestPostgres, testDatabase, writeKeyPair, type TestDatabase } from '@secsvc/dev/testing';
import { freePort } from '@secsvc/dev';
import { loadGatewayConfig } from '../../gateway/src/config';

const rootDir = path.resolve(__dirname, '../../..');

interface Started {
  child: ChildProcess;
  lines: Record<string, unknown>[];
  stderr: () => string;
  exited: Promise<number | null>;
}

function startPolicy(env: Record<string, string>): Started {
  const child = spawn(process.execPath, [path.join(rootDir, 'apps/policy/dist/main.js')], {
    env: { PATH: process.env.PATH, ADMIN_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  let partial = '';
  child.stdout!.on('data', (d: Buffer) => {
    const parts = (partial + d.toString()).split('\n');
    partial = parts.pop()!;
    for (const l of parts) if (l.startsWith('{')) lines.push(JSON.parse(l) as Record<string, unknown>);
  });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, lines, stderr: () => stderr, exited };
}

async function logged(p: Started, msg: string, ms = 60_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const line = p.lines.find((l) => l.msg === msg);
    if (line) return line;
    if (p.child.exitCode !== null || Date.now() > deadline) throw new Error(`no "${msg}" line; stderr: ${p.stderr()}; stdout: ${JSON.stringify(p.lines)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('gRPC with GRPC_TLS=mtls between the gateway and a service', () => {
  let db: TestDatabase;
  let dir: string;
  let policyProcess: Started | undefined;
  let tlsEnv: Record<string, string>;
  let base: Record<string, string>;
  let port: number;
  let adminPort: number;

  beforeAll(async () => {
    db = await testDatabase();
    dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-e2e-grpc-tls-'));
    const ca = await createTestCa();
    await writeFile(path.join(dir, 'ca.crt'), ca.cert);
    // As cert-manager issues them: one certificate per service, for serverAuth and clientAuth.
    const served = await writeKeyPair(dir, 'policy', await ca.issue('policy', { dns: ['localhost', 'policy'] }));
    const gateway = await writeKeyPair(dir, 'gateway', await ca.issue('gateway', { dns: ['gateway'] }));
    const other = await createTestCa('another CA');
    await writeKeyPair(dir, 'stranger', await other.issue('gateway'));
    tlsEnv = { GRPC_TLS: 'mtls', GRPC_TLS_CA_FILE: path.join(dir, 'ca.crt'), GRPC_TLS_CERT_FILE: gateway.certFile, GRPC_TLS_KEY_FILE: gateway.keyFile };
    port = await freePort();
    base = { DATABASE_URL: db.url, SERVER_SECRET: 'grpc-tls-test-secret-0123456789abcdef', GRPC_PORT: String(port) };
    policyProcess = startPolicy({ ...base, GRPC_TLS: 'mtls', GRPC_TLS_CA_FILE: path.join(dir, 'ca.crt'), GRPC_TLS_CERT_FILE: served.certFile, GRPC_TLS_KEY_FILE: served.keyFile });
    expect(await logged(policyProcess, 'policy gRPC listening')).toMatchObject({ grpcPort: port, grpcTls: 'mtls' });
    adminPort = (await logged(policyProcess, 'policy started')).adminPort as number;
  }, 120_000);

  afterAll(async () => {
    if (policyProcess && policyProcess.child.exitCode === null) {
      policyProcess.child.kill('SIGTERM');
      await policyProcess.exited;
    }
    await db?.drop();
    await stopTestPostgres();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("the gateway's client code calls the service; its readiness check passes", async () => {
    const config = loadGatewayConfig({ ...tlsEnv, POLICY_ADDR: `localhost:${port}` });
    const tls = GrpcTls.fromConfig(config);
    const raw = createClient(policy.PolicyServiceClient, config.POLICY_ADDR, undefined, tls);
    try {
      const res = await promiseClient(raw, { deadlineMs: 5000 }).listPolicies({ environment: 'live', limit: 10, cursor: '' });
      expect(res).toMatchObject({ hasMore: false });
      expect(await checkHealth(config.POLICY_ADDR, '', 2000, tls)).toBe(true);
      // GRPC_TLS_SERVER_NAME: the address names no host of the certificate, the override does.
      const byIp = GrpcTls.fromConfig(loadGatewayConfig({ ...tlsEnv, GRPC_TLS_SERVER_NAME: 'policy' }));
      expect(await checkHealth(`127.0.0.1:${port}`, '', 2000, byIp)).toBe(true);
      byIp.close();
    } finally {
      raw.close();
      tls.close();
    }
  });

  it('refuses a client without a certificate, with one of another CA, and plain gRPC', async () => {
    const address = `localhost:${port}`;
    const noCert = GrpcTls.fromConfig(loadGatewayConfig({ GRPC_TLS: 'tls', GRPC_TLS_CA_FILE: tlsEnv.GRPC_TLS_CA_FILE }));
    const stranger = GrpcTls.fromConfig(
      loadGatewayConfig({ ...tlsEnv, GRPC_TLS_CERT_FILE: path.join(dir, 'stranger.crt'), GRPC_TLS_KEY_FILE: path.join(dir, 'stranger.key') }),
    );
    for (const tls of [noCert, stranger, GrpcTls.off]) {
      expect(await checkHealth(address, '', 2000, tls)).toBe(false);
      const raw = createClient(policy.PolicyServiceClient, address, undefined, tls);
      const err = await promiseClient(raw, { deadlineMs: 3000 })
        .listPolicies({ environment: 'live', limit: 10, cursor: '' })
        .catch((e: unknown) => e);
      raw.close();
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('unavailable');
    }
    noCert.close();
    stranger.close();
  });

  it('exposes the certificate expiry on /metrics', async () => {
    const text = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
    expect(text).toMatch(/^tls_certificate_expiry_timestamp_seconds\{use="grpc",service="policy"\} \d{10}$/m);
  });

  it('does not start with GRPC_TLS=mtls and no CA bundle, or an unreadable file, naming the variable', async () => {
    const p = startPolicy({ ...base, GRPC_PORT: '0', GRPC_TLS: 'mtls', GRPC_TLS_CERT_FILE: path.join(dir, 'policy.crt'), GRPC_TLS_KEY_FILE: path.join(dir, 'policy.key') });
    expect(await p.exited).toBe(1);
    expect(p.stderr()).toContain('GRPC_TLS_CA_FILE: required with GRPC_TLS=mtls');
    const unreadable = startPolicy({ ...base, GRPC_PORT: '0', GRPC_TLS: 'tls', GRPC_TLS_CERT_FILE: path.join(dir, 'absent.crt'), GRPC_TLS_KEY_FILE: path.join(dir, 'policy.key') });
    expect(await unreadable.exited).toBe(1);
    const fatal = unreadable.lines.find((l) => l.msg === 'policy failed to start') as { err?: { message?: string } } | undefined;
    expect(fatal?.err?.message).toContain(`GRPC_TLS_CERT_FILE: cannot be read (ENOENT) (got "${path.join(dir, 'absent.crt')}")`);
  });
});
