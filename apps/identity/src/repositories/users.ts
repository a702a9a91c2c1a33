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
    changes: { name?: string; metadata?: string },
  ): Promise<UserRow | undefined> {
    const { rows } = await db.query<UserRow>(
      `UPDATE users SET name = COALESCE($3, name), metadata = COALESCE($4::json, metadata), updated_at = now()
       WHERE environment = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [environment, id, changes.name ?? null, changes.metadata ?? null],
    );
    return rows[0];
  },

  async delete(db: Db, environment: string, id: string): Promise<boolean> {
    const { rowCount } = await db.query('DELETE FROM users WHERE environment = $1 AND id = $2', [environment, id]);
    return (rowCount ?? 0) > 0;
  },

  /** Newest first, strictly after `afterId` when given; fetches limit+1 to know whether more exist. */
  async list(db: Db, environment: string, limit: number, afterId?: string): Promise<UserRow[]> {
    const { rows } = afterId
      ? await db.query<UserRow>(
          `SELECT ${COLUMNS} FROM users WHERE environment = $1 AND id < $2 ORDER BY id DESC LIMIT $3`,
          [environment, afterId, limit + 1],
        )
      : await db.query<UserRow>(`SELECT ${COLUMNS} FROM users WHERE environment = $1 ORDER BY id DESC LIMIT $2`, [
          environment,
          limit + 1,
        ]);
    return rows;
  },
};
