import type { Pool, PoolClient } from '@secsvc/shared';

export interface ApiKeyRow {
  id: string;
  environment: string;
  type: 'secret' | 'public' | 'test';
  plan: string;
  key_hash: Buffer;
  expires_at: Date | null;
  revoked_at: Date | null;
}

type Db = Pool | PoolClient;

export const apiKeysRepository = {
  async insert(
    db: Db,
    key: { id: string; environment: string; type: string; name: string; plan: string; hash: Buffer; prefix: string; last4: string },
  ): Promise<void> {
    await db.query(
      `INSERT INTO api_keys (id, environment, type, name, plan, key_hash, prefix, last4)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [key.id, key.environment, key.type, key.name, key.plan, key.hash, key.prefix, key.last4],
    );
  },

  async findByHash(db: Db, hash: Buffer): Promise<ApiKeyRow | undefined> {
    const { rows } = await db.query<ApiKeyRow>(
      'SELECT id, environment, type, plan, key_hash, expires_at, revoked_at FROM api_keys WHERE key_hash = $1',
      [hash],
    );
    return rows[0];
  },

  async count(db: Db): Promise<number> {
    const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM api_keys');
    return Number(rows[0]!.n);
  },
};
