import { createPool, isUniqueViolation, pingDatabase, withTransaction, type Pool } from '../src/db';
import { stopTestPostgres, testDatabase, type TestDatabase } from '../src/testing';

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
