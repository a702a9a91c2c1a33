import net from 'node:net';
import { connectWhenUp, createPool, isUniqueViolation, pingDatabase, withTransaction, type Pool } from '../src/db';
import { isBackendUnavailable } from '../src/errors';
import { createLogger } from '../src/logger';
import { freePort } from '@secsvc/dev/stack';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';

/** The JSON lines of `logger`, for the tests that check what was logged. */
const lines: { msg?: string }[] = [];
const logger = createLogger('db-test', 'debug', { write: (line: string) => void lines.push(JSON.parse(line)) });

let db: TestDatabase;
let pool: Pool;

beforeAll(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 4);
  await pool.query('CREATE SCHEMA svc');
  await pool.query('CREATE TABLE svc.accounts (id integer PRIMARY KEY, email text CONSTRAINT accounts_email_key UNIQUE)');
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestPostgres();
});

describe('testDatabase', () => {
  it('makes a fresh, separate database on each call', async () => {
    const other = await testDatabase();
    try {
      expect(other.url).not.toBe(db.url);
      const otherPool = createPool(other.url, 1);
      try {
        const { rows } = await otherPool.query("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname = 'svc'");
        expect(rows[0].n).toBe(0);
      } finally {
        await otherPool.end();
      }
    } finally {
      await other.drop();
    }
  });
});

describe('createPool', () => {
  it('defaults the connections to the given schema', async () => {
    const scoped = createPool(db.url, 2, undefined, 'svc');
    try {
      await scoped.query("INSERT INTO accounts (id, email) VALUES (100, 'scoped@example.com')");
      const { rows } = await pool.query('SELECT email FROM svc.accounts WHERE id = 100');
      expect(rows).toEqual([{ email: 'scoped@example.com' }]);
      const { rows: path } = await scoped.query<{ search_path: string }>('SHOW search_path');
      expect(path[0]!.search_path).toBe('svc');
    } finally {
      await scoped.end();
    }
  });

  it('rejects an invalid schema name', () => {
    expect(() => createPool(db.url, 1, undefined, 'svc; DROP SCHEMA svc')).toThrow(/invalid schema name/);
    expect(() => createPool(db.url, 1, undefined, 'Svc')).toThrow(/invalid schema name/);
  });
});

describe('withTransaction', () => {
  it('commits when the function resolves', async () => {
    const result = await withTransaction(pool, async (client) => {
      await client.query("INSERT INTO svc.accounts (id, email) VALUES (1, 'a@example.com')");
      await client.query("INSERT INTO svc.accounts (id, email) VALUES (2, 'b@example.com')");
      return 'done';
    });
    expect(result).toBe('done');
    const { rows } = await pool.query('SELECT id FROM svc.accounts WHERE id IN (1, 2) ORDER BY id');
    expect(rows).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('rolls back everything and rethrows when the function throws', async () => {
    const failure = new Error('stop here');
    await expect(
      withTransaction(pool, async (client) => {
        await client.query("INSERT INTO svc.accounts (id, email) VALUES (3, 'c@example.com')");
        throw failure;
      }),
    ).rejects.toBe(failure);
    const { rows } = await pool.query('SELECT id FROM svc.accounts WHERE id = 3');
    expect(rows).toEqual([]);
  });

  it('releases its connection either way', async () => {
    const small = createPool(db.url, 1);
    try {
      await expect(withTransaction(small, async () => Promise.reject(new Error('x')))).rejects.toThrow('x');
      await withTransaction(small, async () => undefined);
      expect(small.totalCount).toBeLessThanOrEqual(1);
      expect(small.idleCount).toBe(small.totalCount);
      expect(small.waitingCount).toBe(0);
    } finally {
      await small.end();
    }
  });
});

describe('isUniqueViolation', () => {
  it('recognises a real unique violation and its constraint', async () => {
    await pool.query("INSERT INTO svc.accounts (id, email) VALUES (10, 'dup@example.com')");
    let caught: unknown;
    try {
      await pool.query("INSERT INTO svc.accounts (id, email) VALUES (11, 'dup@example.com')");
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeDefined();
    expect(isUniqueViolation(caught)).toBe(true);
    expect(isUniqueViolation(caught, 'accounts_email_key')).toBe(true);
    expect(isUniqueViolation(caught, 'accounts_pkey')).toBe(false);
  });

  it('is false for other errors', async () => {
    let caught: unknown;
    try {
      await pool.query('SELECT 1 / 0');
    } catch (err) {
      caught = err;
    }
    expect(isUniqueViolation(caught)).toBe(false);
    expect(isUniqueViolation(new Error('x'))).toBe(false);
    expect(isUniqueViolation(undefined)).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });
});

describe('pingDatabase', () => {
  it('is true while the database answers', async () => {
    expect(await pingDatabase(pool)).toBe(true);
  });

  it('is false when it cannot reach the database', async () => {
    const url = new URL(db.url);
    url.pathname = '/no_such_database_here';
    const broken = createPool(url.toString(), 1);
    try {
      expect(await pingDatabase(broken)).toBe(false);
    } finally {
      await broken.end();
    }
  });
});

describe('a connection PostgreSQL drops', () => {
  it('while checked out between queries: the process lives on, the next query fails as unavailable, the pool recovers', async () => {
    const own = createPool(db.url, 2, logger);
    try {
      const client = await own.connect();
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await pool.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      // Without a listener on the client the 'error' event would end this process here.
      await new Promise((r) => setTimeout(r, 200));
      const failed = await client.query('SELECT 1').then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(isBackendUnavailable(failed)).toBe(true);
      client.release(failed as Error);
      expect((await own.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      expect(lines.some((l) => l.msg === 'postgres connection lost')).toBe(true);
    } finally {
      await own.end();
    }
  });
});

describe('connectWhenUp (start-up while PostgreSQL restarts)', () => {
  /** A TCP relay to the test database that starts listening only when told. */
  async function lateRelay() {
    const target = new URL(db.url);
    const port = await freePort();
    const server = net.createServer((socket) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      socket.pipe(upstream).pipe(socket);
      socket.on('error', () => upstream.destroy());
      upstream.on('error', () => socket.destroy());
    });
    const url = new URL(db.url);
    url.port = String(port);
    return { url: url.toString(), listen: () => new Promise<void>((r) => server.listen(port, '127.0.0.1', r)), close: () => new Promise((r) => server.close(r)) };
  }

  it('waits, with one log line, until the database accepts connections', async () => {
    const relay = await lateRelay();
    const own = createPool(relay.url, 1, logger);
    lines.length = 0;
    try {
      setTimeout(() => void relay.listen(), 700);
      const client = await connectWhenUp(own, logger, 10_000);
      expect((await client.query('SELECT 1 AS one')).rows[0].one).toBe(1);
      client.release();
      expect(lines.filter((l) => l.msg === 'waiting for PostgreSQL')).toHaveLength(1);
    } finally {
      await own.end();
      await relay.close();
    }
  });

  it('gives up after its time limit, and throws other errors at once', async () => {
    const relay = await lateRelay(); // never listens
    const down = createPool(relay.url, 1);
    const url = new URL(db.url);
    url.pathname = '/no_such_database_here';
    const missing = createPool(url.toString(), 1);
    try {
      const started = Date.now();
      await expect(connectWhenUp(down, undefined, 600)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(600);
      const quick = Date.now();
      await expect(connectWhenUp(missing, undefined, 10_000)).rejects.toMatchObject({ code: '3D000' });
      expect(Date.now() - quick).toBeLessThan(2000);
    } finally {
      await down.end();
      await missing.end();
    }
  });
});
