import { isUniqueViolation, AppError, type Pool, type PoolClient } from '@secsvc/shared';

export interface UserRow {
  id: string;
  environment: string;
  email: string;
  name: string;
  email_verified: boolean;
  roles: string[];
  metadata: string;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = 'id, environment, email, name, email_verified, roles, metadata::text AS metadata, created_at, updated_at';

type Db = Pool | PoolClient;

function conflictOnEmail(err: unknown): never {
  if (isUniqueViolation(err, 'users_email_unique')) {
    throw new AppError('conflict', 'A user with this email already exists', [{ field: 'email', message: 'already in use' }]);
  }
  throw err;
}

export const usersRepository = {
  async insert(
    db: Db,
    user: { id: string; environment: string; email: string; name: string; roles: string[]; metadata: string },
  ): Promise<UserRow> {
    try {
      const { rows } = await db.query<UserRow>(
        `INSERT INTO users (id, environment, email, name, roles, metadata) VALUES ($1, $2, $3, $4, $5, $6::json)
         RETURNING ${COLUMNS}`,
        [user.id, user.environment, user.email, user.name, user.roles, user.metadata],
      );
      return rows[0]!;
    } catch (err) {
      return conflictOnEmail(err);
    }
  },

  async get(db: Db, environment: string, id: string): Promise<UserRow | undefined> {
    const { rows } = await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE environment = $1 AND id = $2`, [
      environment,
      id,
    ]);
    return rows[0];
  },

  async update(
    db: Db,
    environment: string,
    id: string,
    changes: { name?: string; metadata?: string; roles?: string[] },
  ): Promise<UserRow | undefined> {
    const { rows } = await db.query<UserRow>(
      `UPDATE users SET name = COALESCE($3, name), metadata = COALESCE($4::json, metadata), roles = COALESCE($5::text[], roles), updated_at = now()
       WHERE environment = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [environment, id, changes.name ?? null, changes.metadata ?? null, changes.roles ?? null],
    );
    return rows[0];
  },

  async delete(db: Db, environment: string, id: string): Promise<boolean> {
    const { rowCount } = await db.query('DELETE FROM users WHERE environment = $1 AND id = $2', [environment, id]);
    return (rowCount ?? 0) > 0;
  },

  /**
   * Newest first, strictly after `afterId` when given; fetches limit+1 to know whether more exist. With
   * `emailContains`, only users whose email contains it (case-insensitive; walks the id index and filters, so a
   * rare match reads many rows: an administrator's search, not a lookup path).
   */
  async list(db: Db, environment: string, limit: number, afterId?: string, emailContains?: string): Promise<UserRow[]> {
    const { rows } = await db.query<UserRow>(
      `SELECT ${COLUMNS} FROM users
       WHERE environment = $1 AND ($2::text IS NULL OR id < $2) AND ($4::text IS NULL OR strpos(lower(email), lower($4)) > 0)
       ORDER BY id DESC LIMIT $3`,
      [environment, afterId ?? null, limit + 1, emailContains || null],
    );
    return rows;
  },
};
