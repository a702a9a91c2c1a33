import type { Pool, PoolClient } from '@secsvc/shared';
import type { FailureCounts } from '../domain/login-throttle';
import { failureCounts } from './failure-counts';

type Db = Pool | PoolClient;


export interface ResetTokenRow {
  id: string;
  environment: string;
  user_id: string;
  expires_at: Date;
  used_at: Date | null;
}

export const passwordsRepository = {
  async setHash(db: Db, environment: string, userId: string, hash: string): Promise<boolean> {
    const { rowCount } = await db.query(`UPDATE users SET password_hash = $3, updated_at = now() WHERE environment = $1 AND id = $2`, [
      environment,
      userId,
      hash,
    ]);
    return (rowCount ?? 0) > 0;
  },

  /**
   * Replaces the hash with the same password's hash under newer parameters, unless it changed since it was read
   * (a password set meanwhile stays). Not a change of the user: updated_at stays.
   */
  async rehash(db: Db, environment: string, userId: string, previous: string, hash: string): Promise<boolean> {
    const { rowCount } = await db.query(`UPDATE users SET password_hash = $4 WHERE environment = $1 AND id = $2 AND password_hash = $3`, [
      environment,
      userId,
      previous,
      hash,
    ]);
    return (rowCount ?? 0) > 0;
  },

  async findByEmail(db: Db, environment: string, email: string): Promise<{ id: string; email: string; password_hash: string | null } | undefined> {
    const { rows } = await db.query(`SELECT id, email, password_hash FROM users WHERE environment = $1 AND lower(email) = lower($2)`, [
      environment,
      email,
    ]);
    return rows[0];
  },

  /**
   * Failures in the window for the account and for the ip, with the seconds until the oldest of each leaves
   * the window (when the limit is reached that is the wait).
   */
  async failures(db: Db, environment: string, email: string, ip: string): Promise<FailureCounts> {
    return failureCounts(db, 'login_failures', 'environment = $1 AND lower(email) = lower($2)', [environment, email, ip]);
  },

  async recordFailure(db: Db, environment: string, email: string, ip: string): Promise<void> {
    await db.query(`INSERT INTO login_failures (environment, email, ip) VALUES ($1, $2, $3)`, [environment, email.slice(0, 320), ip]);
  },

  async clearFailures(db: Db, environment: string, email: string): Promise<void> {
    await db.query(`DELETE FROM login_failures WHERE environment = $1 AND lower(email) = lower($2)`, [environment, email]);
  },

  async insertResetToken(db: Db, t: { id: string; environment: string; userId: string; hash: Buffer }): Promise<void> {
    await db.query(
      `INSERT INTO password_reset_tokens (id, environment, user_id, token_hash, expires_at) VALUES ($1, $2, $3, $4, now() + interval '1 hour')`,
      [t.id, t.environment, t.userId, t.hash],
    );
  },

  /** How many reset tokens the user was sent within the last `seconds` (the mail throttle). */
  async countRecentResetTokens(db: Db, environment: string, userId: string, seconds: number): Promise<number> {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM password_reset_tokens WHERE environment = $1 AND user_id = $2 AND created_at > now() - make_interval(secs => $3)`,
      [environment, userId, seconds],
    );
    return rows[0]!.n;
  },

  /** The token row (any state), locked for this transaction. */
  async lockResetToken(db: Db, environment: string, hash: Buffer): Promise<ResetTokenRow | undefined> {
    const { rows } = await db.query<ResetTokenRow>(
      `SELECT id, environment, user_id, expires_at, used_at FROM password_reset_tokens WHERE token_hash = $1 AND environment = $2 FOR UPDATE`,
      [hash, environment],
    );
    return rows[0];
  },

  async useResetToken(db: Db, id: string): Promise<void> {
    await db.query(`UPDATE password_reset_tokens SET used_at = now() WHERE id = $1`, [id]);
  },
};
