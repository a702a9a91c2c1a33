import { createLogger, createPool, migrate, readMigrations, type Pool } from '@secsvc/shared';
import { stopTestPostgres, testDatabase, type TestDatabase } from '@secsvc/dev/testing';
import type { IdentityConfig } from '../../src/config';
import type { IdentityContext } from '../../src/context';
import { migrationsDir } from '../../src/migrations';

export const logger = createLogger('test', 'silent');

export interface IdentityTestDb {
  db: TestDatabase;
  pool: Pool;
  ctx: IdentityContext;
}

/** A fresh database with the identity schema migrated, and a context over it. */
export async function identityTestDb(config: Partial<IdentityConfig> = {}, extra: Partial<IdentityContext> = {}): Promise<IdentityTestDb> {
  const db = await testDatabase();
  const pool = createPool(db.url, 5, logger, 'identity');
  await migrate(pool, 'identity', await readMigrations(migrationsDir), logger);
  return { db, pool, ctx: { pool, logger, config: { SERVER_SECRET: 's'.repeat(40), ISSUER: 'http://127.0.0.1:8080', WEBAUTHN_RP_NAME: 'Security Service', ...config } as IdentityConfig, ...extra } };
}

export async function closeIdentityTestDb(t: IdentityTestDb | undefined): Promise<void> {
  await t?.pool.end();
  await t?.db.drop();
  await stopTestPostgres();
}
