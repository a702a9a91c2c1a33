import type { Pool, PoolClient } from '@secsvc/shared';

type Db = Pool | PoolClient;

export interface OAuthClientRow {
  id: string;
  environment: string;
  name: string;
  type: 'public' | 'confidential';
  secret_hash: Buffer | null;
  redirect_uris: string[];
  scopes: string[];
  first_party: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface CodeRow {
  environment: string;
  client_id: string;
  user_id: string;
  redirect_uri: string;
  scopes: string[];
  nonce: string | null;
  code_challenge: string | null;
  auth_time: Date;
  expires_at: Date;
  used_at: Date | null;
  grant_id: string | null;
}

export interface GrantRow {
  id: string;
  environment: string;
  client_id: string;
  user_id: string | null;
  scopes: string[];
  auth_time: Date | null;
  created_at: Date;
  revoked_at: Date | null;
}

export interface RefreshTokenRow {
  grant_id: string;
  expires_at: Date;
  used_at: Date | null;
}

const CLIENT_COLUMNS = 'id, environment, name, type, secret_hash, redirect_uris, scopes, first_party, created_at, updated_at';
const GRANT_COLUMNS = 'id, environment, client_id, user_id, scopes, auth_time, created_at, revoked_at';

export const oauthClientsRepository = {
  async insert(
    db: Db,
    c: { id: string; environment: string; name: string; type: string; secretHash: Buffer | null; redirectUris: string[]; scopes: string[]; firstParty: boolean },
  ): Promise<OAuthClientRow> {
    const { rows } = await db.query<OAuthClientRow>(
      `INSERT INTO oauth_clients (id, environment, name, type, secret_hash, redirect_uris, scopes, first_party)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${CLIENT_COLUMNS}`,
      [c.id, c.environment, c.name, c.type, c.secretHash, c.redirectUris, c.scopes, c.firstParty],
    );
    return rows[0]!;
  },

  /** The client in `environment` (any environment when null: the OAuth endpoints learn it from the client). */
  async get(db: Db, environment: string | null, id: string): Promise<OAuthClientRow | undefined> {
    const { rows } = await db.query<OAuthClientRow>(
      `SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE id = $1 AND ($2::text IS NULL OR environment = $2)`,
      [id, environment],
    );
    return rows[0];
  },

  async list(db: Db, environment: string, limit: number, after: string | undefined): Promise<OAuthClientRow[]> {
    const { rows } = await db.query<OAuthClientRow>(
      `SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE environment = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [environment, after ?? null, limit + 1],
    );
    return rows;
  },

  async update(
    db: Db,
    environment: string,
    id: string,
    u: { name?: string; redirectUris?: string[]; scopes?: string[]; firstParty?: boolean },
  ): Promise<OAuthClientRow | undefined> {
    const { rows } = await db.query<OAuthClientRow>(
      `UPDATE oauth_clients SET
         name = COALESCE($3, name),
         redirect_uris = COALESCE($4, redirect_uris),
         scopes = COALESCE($5, scopes),
         first_party = COALESCE($6, first_party),
         updated_at = now()
       WHERE environment = $1 AND id = $2 RETURNING ${CLIENT_COLUMNS}`,
      [environment, id, u.name ?? null, u.redirectUris ?? null, u.scopes ?? null, u.firstParty ?? null],
    );
    return rows[0];
  },

  /** Deletes the client; its grants, codes, refresh tokens and consents go with it. */
  async delete(db: Db, environment: string, id: string): Promise<{ deleted: boolean; activeGrants: number }> {
    const { rows } = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM oauth_grants WHERE client_id = $1 AND revoked_at IS NULL`,
      [id],
    );
    const { rowCount } = await db.query(`DELETE FROM oauth_clients WHERE environment = $1 AND id = $2`, [environment, id]);
    return { deleted: (rowCount ?? 0) > 0, activeGrants: rows[0]!.n };
  },
};

export const oauthCodesRepository = {
  async insert(
    db: Db,
    c: {
      hash: Buffer;
      environment: string;
      clientId: string;
      userId: string;
      redirectUri: string;
      scopes: string[];
      nonce: string;
      codeChallenge: string;
      authTime: Date;
      ttlSeconds: number;
    },
  ): Promise<void> {
    await db.query(
      `INSERT INTO oauth_codes (code_hash, environment, client_id, user_id, redirect_uri, scopes, nonce, code_challenge, auth_time, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, now() + make_interval(secs => $10))`,
      [c.hash, c.environment, c.clientId, c.userId, c.redirectUri, c.scopes, c.nonce, c.codeChallenge, c.authTime, c.ttlSeconds],
    );
  },

  /** The code (any state), locked for this transaction, with whether it has expired on the database's clock. */
  async lock(db: Db, hash: Buffer): Promise<(CodeRow & { expired: boolean }) | undefined> {
    const { rows } = await db.query<CodeRow & { expired: boolean }>(
      `SELECT environment, client_id, user_id, redirect_uri, scopes, nonce, code_challenge, auth_time, expires_at, used_at, grant_id,
              expires_at <= now() AS expired
       FROM oauth_codes WHERE code_hash = $1 FOR UPDATE`,
      [hash],
    );
    return rows[0];
  },

  async markUsed(db: Db, hash: Buffer, grantId: string | null): Promise<void> {
    await db.query(`UPDATE oauth_codes SET used_at = now(), grant_id = $2 WHERE code_hash = $1`, [hash, grantId]);
  },

};

export const oauthGrantsRepository = {
  async insert(
    db: Db,
    g: { id: string; environment: string; clientId: string; userId: string | null; scopes: string[]; authTime: Date | null },
  ): Promise<GrantRow> {
    const { rows } = await db.query<GrantRow>(
      `INSERT INTO oauth_grants (id, environment, client_id, user_id, scopes, auth_time) VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${GRANT_COLUMNS}`,
      [g.id, g.environment, g.clientId, g.userId, g.scopes, g.authTime],
    );
    return rows[0]!;
  },

  async get(db: Db, id: string): Promise<GrantRow | undefined> {
    const { rows } = await db.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE id = $1`, [id]);
    return rows[0];
  },

  /** Ends a grant (idempotent): true when it was active. */
  async revoke(db: Db, id: string, reason: string): Promise<boolean> {
    const { rowCount } = await db.query(`UPDATE oauth_grants SET revoked_at = now(), revoked_reason = $2 WHERE id = $1 AND revoked_at IS NULL`, [id, reason]);
    return (rowCount ?? 0) > 0;
  },

  /** Ends every active grant of a user (password reset): their ids. */
  async revokeAllOfUser(db: Db, environment: string, userId: string, reason: string): Promise<string[]> {
    const { rows } = await db.query<{ id: string }>(
      `UPDATE oauth_grants SET revoked_at = now(), revoked_reason = $3 WHERE environment = $1 AND user_id = $2 AND revoked_at IS NULL RETURNING id`,
      [environment, userId, reason],
    );
    return rows.map((r) => r.id);
  },
};

export const oauthRefreshTokensRepository = {
  async insert(db: Db, hash: Buffer, grantId: string, ttlSeconds: number): Promise<void> {
    await db.query(`INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))`, [
      hash,
      grantId,
      ttlSeconds,
    ]);
  },

  /** The refresh token (any state) with its grant, locked for this transaction; expiry on the database's clock. */
  async lock(db: Db, hash: Buffer): Promise<(RefreshTokenRow & { expired: boolean; grant: GrantRow }) | undefined> {
    const { rows } = await db.query<RefreshTokenRow & { expired: boolean } & Record<string, unknown>>(
      `SELECT t.grant_id, t.expires_at, t.used_at, t.expires_at <= now() AS expired,
              g.id, g.environment, g.client_id, g.user_id, g.scopes, g.auth_time, g.created_at, g.revoked_at
       FROM oauth_refresh_tokens t JOIN oauth_grants g ON g.id = t.grant_id
       WHERE t.token_hash = $1 FOR UPDATE OF t, g`,
      [hash],
    );
    const r = rows[0];
    if (!r) return undefined;
    const grant = {
      id: r.id,
      environment: r.environment,
      client_id: r.client_id,
      user_id: r.user_id,
      scopes: r.scopes,
      auth_time: r.auth_time,
      created_at: r.created_at,
      revoked_at: r.revoked_at,
    } as GrantRow;
    return { grant_id: r.grant_id, expires_at: r.expires_at, used_at: r.used_at, expired: r.expired, grant };
  },

  /** Without locking: for introspection and revocation. */
  async find(db: Db, hash: Buffer): Promise<(RefreshTokenRow & { expired: boolean; client_id: string; environment: string; user_id: string | null; scopes: string[]; revoked_at: Date | null; created_at: Date }) | undefined> {
    const { rows } = await db.query(
      `SELECT t.grant_id, t.expires_at, t.used_at, t.expires_at <= now() AS expired, t.created_at,
              g.client_id, g.environment, g.user_id, g.scopes, g.revoked_at
       FROM oauth_refresh_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = $1`,
      [hash],
    );
    return rows[0];
  },

  async markUsed(db: Db, hash: Buffer): Promise<void> {
    await db.query(`UPDATE oauth_refresh_tokens SET used_at = now() WHERE token_hash = $1`, [hash]);
  },
};

export const oauthConsentsRepository = {
  async get(db: Db, userId: string, clientId: string): Promise<string[]> {
    const { rows } = await db.query<{ scopes: string[] }>(`SELECT scopes FROM oauth_consents WHERE user_id = $1 AND client_id = $2`, [userId, clientId]);
    return rows[0]?.scopes ?? [];
  },

  /** Adds `scopes` to what the user granted the client. */
  async grant(db: Db, environment: string, userId: string, clientId: string, scopes: string[]): Promise<void> {
    await db.query(
      `INSERT INTO oauth_consents (user_id, client_id, environment, scopes) VALUES ($1, $2, $3, $4)
       ON CONFLICT (user_id, client_id) DO UPDATE
         SET scopes = ARRAY(SELECT DISTINCT unnest(oauth_consents.scopes || EXCLUDED.scopes) ORDER BY 1), granted_at = now()`,
      [userId, clientId, environment, scopes],
    );
  },
};
