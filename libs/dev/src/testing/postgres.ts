import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from '../stack/ports';
import { startEmbeddedPostgres, type EmbeddedPostgresServer } from '../stack/postgres';

/**
 * PostgreSQL for tests, in the harness order of DESIGN.md: a server URL from TEST_DATABASE_URL when set
 * (a maintenance database such as postgres://.../postgres), else a real embedded server started for this
 * test process and stopped by stopTestPostgres(). Each call of testDatabase() makes a fresh database.
 */
let embedded: Promise<{ server: EmbeddedPostgresServer; dir: string }> | undefined;

async function adminUrl(): Promise<string> {
  const fromEnv = process.env.TEST_DATABASE_URL;
  if (fromEnv) return fromEnv;
  embedded ??= (async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-pg-'));
    await chmod(dir, 0o711);
    const server = await startEmbeddedPostgres({
      dataDir: path.join(dir, 'data'),
      port: await freePort(),
      password: randomBytes(12).toString('hex'),
    });
    return { server, dir };
  })();
  // A failed start is not cached: the next call tries again.
  embedded.catch(() => (embedded = undefined));
  return (await embedded).server.url();
}

export interface TestDatabase {
  url: string;
  drop: () => Promise<void>;
}

export async function testDatabase(): Promise<TestDatabase> {
  const admin = await adminUrl();
  const name = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`CREATE DATABASE ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** Stops the embedded server this process started (call from afterAll). */
export async function stopTestPostgres(): Promise<void> {
  if (!embedded) return;
  const { server, dir } = await embedded;
  embedded = undefined;
  await server.stop();
  await rm(dir, { recursive: true, force: true });
}
