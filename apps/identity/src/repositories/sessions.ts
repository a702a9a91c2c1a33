import type { Pool, PoolClient } from '@secsvc/shared';

export interface SessionRow {
  id: string;
  environment: string;
  user_id: string;
  token_hash: Buffer;
  metadata: string;
  created_at: Date;
  expires_at: Date;
  revoked_at: Date | null;
}

type Db = Pool | PoolClient;
export const SESSION_COLUMNS = 'id, environment, user_id, token_hash, metadata::text AS metadata, created_at, expires_at, revoked_at';
const COLUMNS = SESSION_COLUMNS;

export const sessionsRepository = {
  async insert(
    db: Db,
    s: { id: string; environment: string; userId: string; hash: Buffer; metadata: string; expiresInSeconds: number },
  ): Promise<SessionRow> {
    const { rows } = await db.query<SessionRow>(
      `INSERT INTO sessions (id, environment, user_id, token_hash, metadata, expires_at)
       VALUES ($1, $2, $3, $4, $5::json, now() + make_interval(secs => $6)) RETURNING ${COLUMNS}`,
      [s.id, s.environment, s.userId, s.hash, s.metadata, s.expiresInSeconds],
    );
    return rows[0]!;
  },

  /** The active (not revoked, not expired) session with this token hash (in `environment` when given). */
  async findActiveByHash(db: Db, environment: string | null, hash: Buffer): Promise<SessionRow | undefined> {
    const { rows } = await db.query<SessionRow>(
      `SELECT ${COLUMNS} FROM sessions
       WHERE token_hash = $1 AND ($2::text IS NULL OR environment = $2) AND revoked_at IS NULL AND expires_at > now()`,
      [hash, environment],
    );
    return rows[0];
  },

  /** The active session with this id (for introspection of its access tokens). */
  async findActiveById(db: Db, id: string): Promise<SessionRow | undefined> {
    const { rows } = await db.query<SessionRow>(`SELECT ${COLUMNS} FROM sessions WHERE id = $1 AND revoked_at IS NULL AND expires_at > now()`, [id]);
    return rows[0];
  },

  async revokeByHash(db: Db, environment: string, hash: Buffer): Promise<SessionRow | undefined> {
    const { rows } = await db.query<SessionRow>(
      `UPDATE sessions SET revoked_at = now()
       WHERE token_hash = $1 AND environment = $2 AND revoked_at IS NULL AND expires_at > now() RETURNING ${COLUMNS}`,
      [hash, environment],
    );
    return rows[0];
  },

  async listActive(db: Db, environment: string, userId: string): Promise<SessionRow[]> {
    const { rows } = await db.query<SessionRow>(
      `SELECT ${COLUMNS} FROM sessions
       WHERE user_id = $1 AND environment = $2 AND revoked_at IS NULL AND expires_at > now() ORDER BY id DESC LIMIT 1000`,
      [userId, environment],
    );
    return rows;
  },

  async revokeAllOfUser(db: Db, environment: string, userId: string): Promise<SessionRow[]> {
    const { rows } = await db.query<SessionRow>(
      `UPDATE sessions SET revoked_at = now()
       WHERE user_id = $1 AND environment = $2 AND revoked_at IS NULL AND expires_at > now() RETURNING ${COLUMNS}`,
      [userId, environment],
    );
    return rows;
  },
};
