import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createPool, type Pool } from '../src/db';
import { migrate, readMigrations, type Migration } from '../src/migrate';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';

let db: TestDatabase;
let pool: Pool;
const dirs: string[] = [];
let schemaCounter = 0;
const freshSchema = () => `mig_${++schemaCounter}_${process.pid}`;

async function migrationDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-migrations-'));
  dirs.push(dir);
  for (const [name, sql] of Object.entries(files)) await writeFile(path.join(dir, name), sql);
  return dir;
}

async function tableExists(schema: string, table: string): Promise<boolean> {
  const { rows } = await pool.query<{ t: string | null }>('SELECT to_regclass($1)::text AS t', [`${schema}.${table}`]);
  return rows[0]!.t !== null;
}

async function applied(schema: string): Promise<{ version: number; name: string }[]> {
  const { rows } = await pool.query<{ version: number; name: string }>(
    `SELECT version, name FROM ${schema}.schema_migrations ORDER BY version`,
  );
  return rows;
}

// 0002 only works after 0001, 0003 only after 0002: applying out of order fails.
const ordered = {
  '0001_create_items.sql': 'CREATE TABLE items (id integer PRIMARY KEY);',
  '0002_add_name.sql': 'ALTER TABLE items ADD COLUMN name text NOT NULL DEFAULT \'\';',
  '0003_seed.sql': "INSERT INTO items (id, name) VALUES (1, 'one'), (2, 'two');",
  'README.md': 'not a migration',
};

beforeAll(async () => {
  db = await testDatabase();
  pool = createPool(db.url, 4);
});

afterAll(async () => {
  await pool?.end();
  await db?.drop();
  await stopTestPostgres();
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

describe('readMigrations', () => {
  it('reads NNNN_name.sql files in version order and ignores other files', async () => {
    const dir = await migrationDir({ '0002_b.sql': 'SELECT 2;', '0001_a.sql': 'SELECT 1;', 'notes.txt': 'x' });
    expect(await readMigrations(dir)).toEqual([
      { version: 1, name: 'a', sql: 'SELECT 1;' },
      { version: 2, name: 'b', sql: 'SELECT 2;' },
    ]);
  });

  it.each(['1_a.sql', '001_a.sql', '0001-a.sql', '0001_A.sql', '0001_.sql', '0001_a b.sql', 'a_0001.sql'])(
    'rejects the file name %s',
    async (bad) => {
      const dir = await migrationDir({ [bad]: 'SELECT 1;' });
      await expect(readMigrations(dir)).rejects.toThrow(/file name must look like 0001_name\.sql/);
    },
  );

  it('rejects a gap in the versions', async () => {
    const dir = await migrationDir({ '0001_a.sql': 'SELECT 1;', '0003_c.sql': 'SELECT 3;' });
    await expect(readMigrations(dir)).rejects.toThrow(/0003_c\.sql: expected version 2/);
  });

  it('rejects a first version other than 1', async () => {
    const dir = await migrationDir({ '0002_b.sql': 'SELECT 2;' });
    await expect(readMigrations(dir)).rejects.toThrow(/expected version 1/);
  });

  it('rejects a duplicate version', async () => {
    const dir = await migrationDir({ '0001_a.sql': 'SELECT 1;', '0001_b.sql': 'SELECT 1;' });
    await expect(readMigrations(dir)).rejects.toThrow(/expected version 2/);
  });
});

describe('migrate', () => {
  it('applies the files in order into the schema and records them', async () => {
    const schema = freshSchema();
    const migrations = await readMigrations(await migrationDir(ordered));
    expect(await migrate(pool, schema, migrations)).toBe(3);
    expect(await applied(schema)).toEqual([
      { version: 1, name: 'create_items' },
      { version: 2, name: 'add_name' },
      { version: 3, name: 'seed' },
    ]);
    const { rows } = await pool.query(`SELECT id, name FROM ${schema}.items ORDER BY id`);
    expect(rows).toEqual([
      { id: 1, name: 'one' },
      { id: 2, name: 'two' },
    ]);
    // created in the schema, not in public
    expect(await tableExists('public', 'items')).toBe(false);
  });

  it('applies nothing on a second run', async () => {
    const schema = freshSchema();
    const migrations = await readMigrations(await migrationDir(ordered));
    expect(await migrate(pool, schema, migrations)).toBe(3);
    expect(await migrate(pool, schema, migrations)).toBe(0);
    expect(await applied(schema)).toHaveLength(3);
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.items`);
    expect(rows[0].n).toBe(2);
  });

  it('applies only the new migrations of a later release', async () => {
    const schema = freshSchema();
    const all = await readMigrations(await migrationDir(ordered));
    expect(await migrate(pool, schema, all.slice(0, 1))).toBe(1);
    expect(await migrate(pool, schema, all)).toBe(2);
    expect((await applied(schema)).map((r) => r.version)).toEqual([1, 2, 3]);
  });

  it('refuses a migration edited after it was applied', async () => {
    const schema = freshSchema();
    const migrations = await readMigrations(await migrationDir(ordered));
    await migrate(pool, schema, migrations);
    const edited: Migration[] = migrations.map((m) => (m.version === 2 ? { ...m, sql: m.sql + ' -- tweak' } : m));
    await expect(migrate(pool, schema, edited)).rejects.toThrow(/add_name was edited/);
  });

  it('rolls a failing migration back and names it', async () => {
    const schema = freshSchema();
    const migrations = await readMigrations(
      await migrationDir({
        '0001_ok.sql': 'CREATE TABLE ok (id integer);',
        '0002_boom.sql': 'CREATE TABLE partial (id integer);\nINSERT INTO ok VALUES (1);\nSELECT 1 / 0;',
        '0003_after.sql': 'CREATE TABLE after_boom (id integer);',
      }),
    );
    await expect(migrate(pool, schema, migrations)).rejects.toThrow(/migration .*2_boom failed: division by zero/);
    expect(await tableExists(schema, 'ok')).toBe(true);
    expect(await tableExists(schema, 'partial')).toBe(false);
    expect(await tableExists(schema, 'after_boom')).toBe(false);
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.ok`);
    expect(rows[0].n).toBe(0);
    expect(await applied(schema)).toEqual([{ version: 1, name: 'ok' }]);
  });

  it('leaves the connection usable after a failure (lock released, no open transaction)', async () => {
    const schema = freshSchema();
    const bad: Migration[] = [{ version: 1, name: 'bad', sql: 'SELECT * FROM no_such_table;' }];
    await expect(migrate(pool, schema, bad)).rejects.toThrow(/1_bad failed/);
    const good: Migration[] = [{ version: 1, name: 'bad', sql: 'CREATE TABLE fixed (id integer);' }];
    expect(await migrate(pool, schema, good)).toBe(1);
    const { rows } = await pool.query(
      `SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    );
    expect(rows[0].n).toBe(0);
  });

  it('rejects an invalid schema name', async () => {
    await expect(migrate(pool, 'bad-schema; DROP TABLE x', [])).rejects.toThrow(/invalid schema name/);
  });

  it('applies each migration exactly once when two replicas migrate at once', async () => {
    const schema = freshSchema();
    const migrations = await readMigrations(
      await migrationDir({
        // not idempotent: a second application would fail or double the rows
        '0001_create.sql': 'CREATE TABLE runs (n integer);',
        '0002_slow.sql': 'SELECT pg_sleep(0.2); INSERT INTO runs VALUES (2);',
        '0003_more.sql': 'INSERT INTO runs VALUES (3);',
      }),
    );
    const other = createPool(db.url, 2);
    try {
      const counts = await Promise.all([migrate(pool, schema, migrations), migrate(other, schema, migrations)]);
      expect(counts.sort()).toEqual([0, 3]);
    } finally {
      await other.end();
    }
    const { rows } = await pool.query(`SELECT n FROM ${schema}.runs ORDER BY n`);
    expect(rows).toEqual([{ n: 2 }, { n: 3 }]);
    expect((await applied(schema)).map((r) => r.version)).toEqual([1, 2, 3]);
  });
});
