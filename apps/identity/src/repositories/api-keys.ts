import type { Pool, PoolClient } from '@secsvc/shared';

export interface ApiKeyRow {
  id: string;
  environment: string;
  type: 'secret' | 'public' | 'test';
  name: string;
  plan: string;
  rate_limit: number | null;
  key_hash: Buffer;
  prefix: string;
  last4: string;
  created_at: Date;
  last_used_at: Date | null;
  expires_at: Date | null;
  revoked_at: Date | null;
  previous_key_hash: Buffer | null;
  previous_expires_at: Date | null;
}

type Db = Pool | PoolClient;

const COLUMNS = `id, environment, type, name, plan, rate_limit, key_hash, prefix, last4, created_at, last_used_at,
  expires_at, revoked_at, previous_key_hash, previous_expires_at`;

/** Test callers see only test keys; live callers (secret keys) manage every key. */
const scope = (environment: string) => (environment === 'test' ? `environment = 'test'` : 'true');

export const apiKeysRepository = {
  async insert(
    db: Db,
    key: {
      id: string;
      environment: string;
      type: string;
      name: string;
      plan: string;
      hash: Buffer;
      prefix: string;
      last4: string;
      rateLimit?: number | null;
      expiresAt?: Date | null;
    },
  ): Promise<ApiKeyRow> {
    const { rows } = await db.query<ApiKeyRow>(
      `INSERT INTO api_keys (id, environment, type, name, plan, key_hash, prefix, last4, rate_limit, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
      [key.id, key.environment, key.type, key.name, key.plan, key.hash, key.prefix, key.last4, key.rateLimit ?? null, key.expiresAt ?? null],
    );
    return rows[0]!;
  },

  /** The key whose current secret, or previous secret still in its grace period, has this hash. */
  async findByHash(db: Db, hash: Buffer): Promise<ApiKeyRow | undefined> {
    const { rows } = await db.query<ApiKeyRow>(
      `SELECT ${COLUMNS} FROM api_keys WHERE key_hash = $1
       UNION ALL
       SELECT ${COLUMNS} FROM api_keys WHERE previous_key_hash = $1 AND previous_expires_at > now()
       LIMIT 1`,
      [hash],
    );
    return rows[0];
  },

  async get(db: Db, callerEnvironment: string, id: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1 AND ${scope(callerEnvironment)}`, [id]);
    return rows[0];
  },

  async list(db: Db, callerEnvironment: string, limit: number, afterId?: string): Promise<ApiKeyRow[]> {
    const { rows } = await db.query<ApiKeyRow>(
      `SELECT ${COLUMNS} FROM api_keys WHERE ${scope(callerEnvironment)} AND ($1::text IS NULL OR id < $1)
       ORDER BY id DESC LIMIT $2`,
      [afterId ?? null, limit + 1],
    );
    return rows;
  },

  async revoke(db: Db, callerEnvironment: string, id: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await db.query<ApiKeyRow>(
      `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()), previous_key_hash = NULL, previous_expires_at = NULL
       WHERE id = $1 AND ${scope(callerEnvironment)} RETURNING ${COLUMNS}`,
      [id],
    );
    return rows[0];
  },

  /** New secret now; the current one becomes the previous, valid until `previousUntil` (none when null). */
  async rotate(db: Db, id: string, hash: Buffer, last4: string, previousUntil: Date | null): Promise<ApiKeyRow> {
    const { rows } = await db.query<ApiKeyRow>(
      `UPDATE api_keys SET previous_key_hash = CASE WHEN $4::timestamptz IS NULL THEN NULL ELSE key_hash END,
         previous_expires_at = $4, key_hash = $2, last4 = $3
       WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, hash, last4, previousUntil],
    );
    return rows[0]!;
  },

  /** Records a use at most once a minute per key (does not notify caches: see migration 0003). */
  async touch(db: Db, id: string): Promise<void> {
    await db.query(
      `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
      [id],
    );
  },

  async count(db: Db): Promise<number> {
    const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM api_keys');
    return Number(rows[0]!.n);
  },
};
