/**
 * `npm run start:distributed`'s launcher as a user runs it (`node scripts/start-distributed.js`, after the build),
 * without BOOTSTRAP_API_KEY: the key it prints works through the load balancer; the ports asked for are the ports
 * used and printed; export links name the load balancer; on Ctrl-C it stops everything and keeps the data
 * directory, so a second start serves the same users with the same key (and prints no new one).
 */
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { descendantsOf, stillRunning } from './processes';
import { apiClient, eventually } from './support';

jest.setTimeout(420_000);

const root = path.resolve(__dirname, '../../..');
let tmp: string;
const leftovers: { pid: number; command: string }[] = [];

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
const free = async (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
/** `count` consecutive free ports from a random start in 20000..59999. */
async function freeRun(count: number): Promise<number> {
  for (;;) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const all = await Promise.all(Array.from({ length: count }, (_, i) => free(base + i)));
    if (all.every(Boolean)) return base;
  }
}

/** One run of the launcher: its output, a wait for a printed pattern, and Ctrl-C. */
function launch(env: Record<string, string>) {
  const output: string[] = [];
  const child = spawn(process.execPath, [path.join(root, 'scripts/start-distributed.js')], {
    cwd: root,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout!, child.stderr!]) stream.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const printed = (pattern: RegExp) =>
    eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`the launcher exited ${child.exitCode}:\n${output.join('').slice(-4000)}`);
        return output.join('').match(pattern);
      },
      (m) => m !== null,
      300_000,
    );
  const stop = async () => {
    const running = await descendantsOf(child.pid!);
    leftovers.push(...running);
    child.kill('SIGINT');
    const code = await exited;
    return { code, running };
  };
  return { child, output, printed, stop };
}

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'secsvc-e2e-launcher-distributed-'));
  await chmod(tmp, 0o711);
});

afterAll(async () => {
  for (const p of await stillRunning(leftovers)) process.kill(p.pid, 'SIGKILL');
  await rm(tmp, { recursive: true, force: true });
});

it('prints a working key without BOOTSTRAP_API_KEY, honours the ports asked for, links exports through the load balancer, and keeps its data for the next start', async () => {
  const pgPort = await freeRun(1);
  const identityPort = await freeRun(1);
  const adminBase = await freeRun(5);
  const env = {
    DATA_DIR: path.join(tmp, 'data'),
    PORT: '0',
    REPLICAS: '1',
    PG_PORT: String(pgPort),
    IDENTITY_GRPC_PORT: String(identityPort),
    ADMIN_PORT_BASE: String(adminBase),
    LOG_LEVEL: 'warn',
  };

  const first = launch(env);
  const key = (await first.printed(/Admin API key \(generated now[^)]*\): (svc_sk_\S+)/))![1]!;
  const baseUrl = (await first.printed(/running behind (http:\/\/\S+\/v1)/))![1]!;
  const out = first.output.join('');
  expect(out).toContain(`PostgreSQL port ${pgPort}`);
  expect(out).toContain(`identity 127.0.0.1:${identityPort}`);
  const offsets = { 'gateway-1': 0, 'identity-1': 1, 'policy-1': 2, 'audit-1': 3, 'export-worker-1': 4 };
  for (const [name, offset] of Object.entries(offsets)) expect(out).toMatch(new RegExp(`admin: .*\\b${name} ${adminBase + offset}\\b`));
  expect(out).toContain(`data: ${env.DATA_DIR} (kept across restarts`);
  for (let i = 0; i < 5; i++) expect(await listening(adminBase + i)).toBe(true);
  expect(await listening(pgPort)).toBe(true);

  const api = apiClient(baseUrl, key);
  expect((await api('GET', '/users?limit=1')).status).toBe(200);
  const created = await api('POST', '/users', { email: 'kept@example.com', name: 'Kept' });
  expect(created.status).toBe(201);

  // An export's link names the load balancer (the public origin), not one gateway's own port, and works there.
  const origin = new URL(baseUrl).origin;
  const exp = await api('POST', '/logs/export', { format: 'json', from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 60_000).toISOString() });
  expect(exp.status).toBe(202);
  const done = await eventually(
    async () => (await api('GET', `/logs/export/${exp.body.data.exportId}`)).body.data,
    (d) => d.status === 'completed' || d.status === 'failed',
    120_000,
  );
  expect(done.status).toBe('completed');
  expect(done.downloadUrl.startsWith(`${origin}/downloads/`)).toBe(true);
  expect((await fetch(done.downloadUrl)).status).toBe(200);

  const firstRun = await first.stop();
  expect(firstRun.code).toBe(0);
  expect(await eventually(() => stillRunning(firstRun.running), (left) => left.length === 0, 15_000)).toEqual([]);
  expect((await stat(path.join(env.DATA_DIR, 'postgres'))).isDirectory()).toBe(true);

  // Second start on the same data directory: no new key, the first one works, the user is still there.
  const second = launch(env);
  const again = (await second.printed(/running behind (http:\/\/\S+\/v1)/))![1]!;
  expect(second.output.join('')).toContain(`Admin API key: the one printed when ${env.DATA_DIR} was first used`);
  expect(second.output.join('')).not.toContain('generated now');
  const user = await apiClient(again, key)('GET', `/users/${created.body.data.id}`);
  expect(user.status).toBe(200);
  expect(user.body.data.email).toBe('kept@example.com');

  const secondRun = await second.stop();
  expect(secondRun.code).toBe(0);
  expect(await eventually(() => stillRunning(secondRun.running), (left) => left.length === 0, 15_000)).toEqual([]);
});
