/**
 * MIGRATE_ONLY=true (the Kubernetes migrations Job, deploy/k8s/migrations): identity, policy and audit apply
 * their migrations against real PostgreSQL and ClickHouse (chdb), then exit 0 without serving anything.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';

const rootDir = path.resolve(__dirname, '../../..');

interface Run {
  code: number | null;
  lines: { msg?: string; applied?: number; schema?: string }[];
  stderr: string;
}

/** Runs an app's built main.js to its end (ADMIN_PORT/GRPC_PORT 0: a port it opened by mistake would be free). */
function run(app: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(rootDir, 'apps', app, 'dist', 'main.js')], {
      env: { PATH: process.env.PATH, ADMIN_PORT: '0', GRPC_PORT: '0', LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const lines = stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Run['lines'][number]);
      resolve({ code, lines, stderr });
    });
  });
}

const messages = (r: Run) => r.lines.map((l) => l.msg ?? '');
const migrationFiles = (dir: string) => readdirSync(path.join(rootDir, dir, 'migrations')).filter((f) => f.endsWith('.sql'));

describe('MIGRATE_ONLY=true', () => {
  let db: TestDatabase;
  let chDir: string;
  let client: pg.Client;
  let base: Record<string, string>;

  beforeAll(async () => {
    db = await testDatabase();
    chDir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-migrate-only-'));
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    base = { DATABASE_URL: db.url, SERVER_SECRET: 'migrate-only-test-secret-0123456789abcdef', MIGRATE_ONLY: 'true' };
  }, 120_000);

  afterAll(async () => {
    await client?.end();
    await db?.drop();
    await stopTestPostgres();
    if (chDir) await rm(chDir, { recursive: true, force: true });
  });

  it.each(['identity', 'policy'])('%s applies every migration of its schema, serves nothing and exits 0; a second run is a no-op', async (app) => {
    const first = await run(app, base);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(messages(first)).toContain(`${app} migrations applied (MIGRATE_ONLY), exiting`);
    expect(first.lines.filter((l) => l.msg === 'migration applied' && l.schema === app)).toHaveLength(migrationFiles(`apps/${app}`).length);
    // Nothing after the migrations ran: no gRPC server, no admin server.
    expect(messages(first).some((m) => /gRPC listening|started$/.test(m))).toBe(false);
    const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${app}.schema_migrations ORDER BY version`);
    expect(rows.map((r) => r.version)).toEqual(migrationFiles(`apps/${app}`).map((_, i) => i + 1));

    const second = await run(app, base);
    expect(second.code).toBe(0);
    expect(second.lines.filter((l) => l.msg === 'migration applied')).toHaveLength(0);
    expect(messages(second)).toContain(`${app} migrations applied (MIGRATE_ONLY), exiting`);
  }, 120_000);

  it('identity creates no bootstrap key in migrate-only mode', async () => {
    const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM identity.api_keys');
    expect(rows[0]!.n).toBe('0');
  });

  it('audit applies its Postgres schema and ClickHouse migrations, exits 0, and finds them applied on the next run', async () => {
    const env = { ...base, CLICKHOUSE_PATH: path.join(chDir, 'clickhouse') };
    const first = await run('audit', env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const applied = first.lines.find((l) => l.msg === 'ClickHouse migrations applied');
    expect(applied?.applied).toBeGreaterThan(0);
    expect(messages(first)).toContain('audit migrations applied (MIGRATE_ONLY), exiting');
    expect(messages(first).some((m) => /gRPC listening|started$/.test(m))).toBe(false);
    // The audit schema in Postgres (export jobs, outbox: libs/audit-store/migrations).
    const { rows } = await client.query<{ version: number }>('SELECT version FROM audit.schema_migrations ORDER BY version');
    expect(rows.map((r) => r.version)).toEqual(migrationFiles('libs/audit-store').map((_, i) => i + 1));

    const second = await run('audit', env);
    expect(second.code).toBe(0);
    expect(second.lines.find((l) => l.msg === 'ClickHouse migrations applied')).toBeUndefined();
    expect(messages(second)).toContain('audit migrations applied (MIGRATE_ONLY), exiting');
  }, 180_000);

  it('refuses a MIGRATE_ONLY that is not a boolean, naming it', async () => {
    const res = await run('policy', { ...base, MIGRATE_ONLY: 'yes' });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/MIGRATE_ONLY: .*got "yes"/);
  });
});
