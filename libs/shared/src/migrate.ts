import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type pg from 'pg';
import type { Logger } from './logger';
import { connectWhenUp } from './db';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const FILE = /^(\d{4})_([a-z0-9_]+)\.sql$/;

/** Reads `NNNN_name.sql` files in version order; gaps, duplicates and stray files are errors. */
export async function readMigrations(dir: string): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const m = FILE.exec(file);
    if (!m) throw new Error(`migration file name must look like 0001_name.sql: ${file}`);
    const version = Number(m[1]);
    if (version !== migrations.length + 1) throw new Error(`migration ${file}: expected version ${migrations.length + 1}`);
    migrations.push({ version, name: m[2]!, sql: await readFile(path.join(dir, file), 'utf8') });
  }
  return migrations;
}

const checksum = (sql: string) => createHash('sha256').update(sql).digest('hex');

/**
 * Applies pending migrations of one schema, each in its own transaction, under a session advisory lock so
 * that several replicas may start at once. An applied migration whose file changed since is an error.
 */
export async function migrate(pool: pg.Pool, schema: string, migrations: Migration[], logger?: Logger): Promise<number> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const client = await connectWhenUp(pool, logger);
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`secsvc:migrate:${schema}`]);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ version: number; checksum: string }>(
      `SELECT version, checksum FROM ${schema}.schema_migrations`,
    );
    const applied = new Map(rows.map((r) => [r.version, r.checksum]));
    let count = 0;
    for (const m of migrations) {
      const sum = checksum(m.sql);
      const done = applied.get(m.version);
      if (done !== undefined) {
        if (done !== sum) throw new Error(`migration ${schema}/${m.version}_${m.name} was edited after it was applied`);
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(`SET LOCAL search_path TO ${schema}, public`);
        await client.query(m.sql);
        await client.query(`INSERT INTO ${schema}.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)`, [
          m.version,
          m.name,
          sum,
        ]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${schema}/${m.version}_${m.name} failed: ${(err as Error).message}`);
      }
      count++;
      logger?.info({ schema, version: m.version, name: m.name }, 'migration applied');
    }
    return count;
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [`secsvc:migrate:${schema}`]).catch(() => undefined);
    client.release();
  }
}
