import type { Pool, PoolClient } from '@secsvc/shared';

type Db = Pool | PoolClient;

export const credentialChangesRepository = {
  /**
   * The ids of sessions and OAuth grants revoked or deleted within the last `seconds` (deleted sessions leave a
   * tombstone in ended_sessions): what a gateway starting now must refuse the access tokens of.
   */
  async recentlyEnded(db: Db, seconds: number): Promise<string[]> {
    const { rows } = await db.query<{ id: string }>(
      `SELECT id FROM sessions WHERE revoked_at > now() - make_interval(secs => $1)
       UNION ALL SELECT id FROM ended_sessions WHERE ended_at > now() - make_interval(secs => $1)
       UNION ALL SELECT id FROM oauth_grants WHERE revoked_at > now() - make_interval(secs => $1)`,
      [seconds],
    );
    return rows.map((r) => r.id);
  },
};
