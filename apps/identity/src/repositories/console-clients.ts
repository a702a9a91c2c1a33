import type { Pool, PoolClient } from '@secsvc/shared';
import type { OAuthClientRow } from './oauth';

type Db = Pool | PoolClient;

const CLIENT_COLUMNS = 'c.id, c.environment, c.name, c.type, c.secret_hash, c.redirect_uris, c.scopes, c.first_party, c.created_at, c.updated_at';

/** Which OAuth client is the admin console's, per environment (migration 0022). */
export const consoleClientsRepository = {
  /** The console's clients, by environment. */
  async list(db: Db): Promise<OAuthClientRow[]> {
    const { rows } = await db.query<OAuthClientRow>(`SELECT ${CLIENT_COLUMNS} FROM console_clients k JOIN oauth_clients c ON c.id = k.client_id`);
    return rows;
  },

  /** Names `clientId` the console's client of `environment` (replacing a former one). */
  async set(db: Db, environment: string, clientId: string): Promise<void> {
    await db.query(
      `INSERT INTO console_clients (environment, client_id) VALUES ($1, $2) ON CONFLICT (environment) DO UPDATE SET client_id = EXCLUDED.client_id`,
      [environment, clientId],
    );
  },

  /** Serializes the writers of every identity replica (transaction-scoped). */
  async lock(db: PoolClient): Promise<void> {
    await db.query(`SELECT pg_advisory_xact_lock(hashtext('secsvc:console-clients'))`);
  },
};
