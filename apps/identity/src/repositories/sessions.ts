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
  /** RFC 8176 authentication methods, the authentication context class, the latest completed MFA. */
  amr: string[];
  acr: string;
  mfa_at: Date | null;
}

/** How a session's user authenticated (absent: the application opened it; nothing is known). */
export interface SessionAuthentication {
  amr: string[];
  acr: string;
  /** A completed MFA: the session records it as done now. */
  mfa: boolean;
}

type Db = Pool | PoolClient;
export const SESSION_COLUMNS = 'id, environment, user_id, token_hash, metadata::text AS metadata, created_at, expires_at, revoked_at, amr, acr, mfa_at';
const COLUMNS = SESSION_COLUMNS;

export const sessionsRepository = {
  async insert(
    db: Db,
    s: { id: string; environment: string; userId: string; hash: Buffer; metadata: string; expiresInSeconds: number; auth?: SessionAuthentication },
  ): Promise<SessionRow> {
    const { rows } = await db.query<SessionRow>(
      `INSERT INTO sessions (id, environment, user_id, token_hash, metadata, expires_at, amr, acr, mfa_at)
       VALUES ($1, $2, $3, $4, $5::json, now() + make_interval(secs => $6), $7, $8, CASE WHEN $9::boolean THEN now() END) RETURNING ${COLUMNS}`,
      [s.id, s.environment, s.userId, s.hash, s.metadata, s.expiresInSeconds, s.auth?.amr ?? [], s.auth?.acr ?? '', s.auth?.mfa ?? false],
    );
    return rows[0]!;
  },

  /** The user's active session with this id, locked for the transaction (a step-up reads its amr, then writes it). */
  async lockActive(db: Db, environment: string, userId: string, id: string): Promise<SessionRow | undefined> {
    const { rows } = await db.query<SessionRow>(
      `SELECT ${COLUMNS} FROM sessions
       WHERE id = $1 AND environment = $2 AND user_id = $3 AND revoked_at IS NULL AND expires_at > now() FOR UPDATE`,
      [id, environment, userId],
    );
    return rows[0];
  },

  /** A step-up on the active session `id` of the user: its MFA done now, its amr and acr replaced. */
  async stepUp(db: Db, environment: string, userId: string, id: string, amr: string[], acr: string): Promise<SessionRow | undefined> {
    const { rows } = await db.query<SessionRow>(
      `UPDATE sessions SET mfa_at = now(), amr = $4, acr = $5
       WHERE id = $1 AND environment = $2 AND user_id = $3 AND revoked_at IS NULL AND expires_at > now() RETURNING ${COLUMNS}`,
      [id, environment, userId, amr, acr],
    );
    return rows[0];
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

  /** Ends the user's active sessions, or only the one named by `sessionId`: the rows ended. */
  async revokeAllOfUser(db: Db, environment: string, userId: string, sessionId?: string): Promise<SessionRow[]> {
    const { rows } = await db.query<SessionRow>(
      `UPDATE sessions SET revoked_at = now()
       WHERE user_id = $1 AND environment = $2 AND revoked_at IS NULL AND expires_at > now() AND ($3::text IS NULL OR id = $3)
       RETURNING ${COLUMNS}`,
      [userId, environment, sessionId ?? null],
    );
    return rows;
  },
};
