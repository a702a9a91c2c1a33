/**
 * `npm start`'s launcher as a user runs it (`node scripts/start.js`, after the build): it prints where the
 * service is, a child killed with SIGKILL is restarted by it (and it says so), and Ctrl-C (SIGINT) stops
 * everything: the launcher exits 0 and no process of its data directory is left behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { descendantsOf, stillRunning } from './processes';
import { apiClient, eventually } from './support';

jest.setTimeout(180_000);

const root = path.resolve(__dirname, '../../..');
const KEY = 'svc_sk_' + 'launcherTests000'.repeat(3);
let tmp: string;
let launcher: ChildProcess;
let exited: Promise<number | null>;
/** The launcher's descendants seen while it ran. */
let children: { pid: number; command: string }[] = [];
const output: string[] = [];

const printed = (pattern: RegExp) => eventually(async () => output.join('').match(pattern), (m) => m !== null, 120_000);

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'secsvc-e2e-launcher-'));
  await chmod(tmp, 0o711);
  launcher = spawn(process.execPath, [path.join(root, 'scripts/start.js')], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATA_DIR: path.join(tmp, 'data'),
      PORT: '0',
      PG_PORT: '0',
      IDENTITY_GRPC_PORT: '0',
      POLICY_GRPC_PORT: '0',
      AUDIT_GRPC_PORT: '0',
      ADMIN_PORT_BASE: '0',
      LOG_LEVEL: 'warn',
      BOOTSTRAP_API_KEY: KEY,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [launcher.stdout!, launcher.stderr!]) stream.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  exited = new Promise((resolve) => launcher.once('exit', (code) => resolve(code)));
});

afterAll(async () => {
  if (launcher.exitCode === null && launcher.signalCode === null) {
    launcher.kill('SIGINT');
    await exited;
  }
  // Whatever a failed test left running.
  for (const p of await stillRunning(children)) process.kill(p.pid, 'SIGKILL');
  await rm(tmp, { recursive: true, force: true });
});

it('prints where the service runs; a child killed with SIGKILL is restarted and said so; SIGINT stops everything, leaving no process behind', async () => {
  const baseUrl = (await printed(/Security service is running: (http:\/\/\S+)/))![1]!;
  const api = apiClient(baseUrl, KEY);
  expect((await api('GET', '/users?limit=1')).status).toBe(200);

  const identity = (await descendantsOf(launcher.pid!)).find((p) => p.command.includes(path.join('apps', 'identity', 'dist', 'main.js')));
  expect(identity).toBeDefined();
  process.kill(identity!.pid, 'SIGKILL');
  await printed(/identity exited \(signal SIGKILL\); restarting it in \d+ ms/);
  await eventually(async () => (await api('POST', '/users', { email: 'after-restart@example.com', name: 'After' })).status, (s) => s === 201, 30_000);
  const running = await descendantsOf(launcher.pid!);
  children = running;
  // Five apps and PostgreSQL (its postmaster and its helpers) run for this data directory.
  for (const app of ['gateway', 'identity', 'policy', 'audit', 'export-worker']) {
    expect(running.filter((p) => p.command.includes(path.join('apps', app, 'dist', 'main.js')))).toHaveLength(1);
  }
  expect(running.some((p) => /postgres/.test(p.command))).toBe(true);

  launcher.kill('SIGINT');
  expect(await exited).toBe(0);
  expect(output.join('')).toContain('stopping...');
  // Nothing of it is left: no app, no PostgreSQL process.
  expect(await eventually(() => stillRunning(running), (left) => left.length === 0, 10_000)).toEqual([]);
});
