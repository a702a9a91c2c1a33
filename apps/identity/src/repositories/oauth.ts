import { AsyncResource } from 'node:async_hooks';
import { OUTBOX_COLUMNS, outboxRow, requestContext, type EventInput, type Pool, type PoolClient } from '@secsvc/shared';
import type { UserRow } from './users';

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
  /** The login session the code was issued from, and how its user had authenticated then. */
  session_id: string | null;
  amr: string[];
  acr: string;
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
  /** The login session of the authorization (none for client_credentials) and how its user had authenticated. */
  session_id: string | null;
  amr: string[];
  acr: string;
}

export interface RefreshTokenRow {
  grant_id: string;
  expires_at: Date;
  used_at: Date | null;
}

const CLIENT_COLUMNS = 'id, environment, name, type, secret_hash, redirect_uris, scopes, first_party, created_at, updated_at';
const GRANT_COLUMNS = 'id, environment, client_id, user_id, scopes, auth_time, created_at, revoked_at, session_id, amr, acr';
/** The grant's columns as `g`, for the statements that join it. */
const G_COLUMNS = GRANT_COLUMNS.split(', ').map((c) => `g.${c}`).join(', ');
/** A code's columns as `c` (CodeRow). */
const CODE_COLUMNS = 'environment, client_id, user_id, redirect_uri, scopes, nonce, code_challenge, auth_time, expires_at, used_at, grant_id, session_id, amr, acr';
/** The user of a code or grant, joined as `u` (UserRow's columns, prefixed u_). */
const USER_COLUMNS = `u.id AS u_id, u.environment AS u_environment, u.email AS u_email, u.name AS u_name, u.email_verified AS u_email_verified,
  u.roles AS u_roles, u.metadata::text AS u_metadata, u.created_at AS u_created_at, u.updated_at AS u_updated_at`;

function userOf(r: Record<string, unknown>): UserRow | undefined {
  if (r.u_id === null || r.u_id === undefined) return undefined;
  return {
    id: r.u_id as string,
    environment: r.u_environment as string,
    email: r.u_email as string,
    name: r.u_name as string,
    email_verified: r.u_email_verified as boolean,
    roles: r.u_roles as string[],
    metadata: r.u_metadata as string,
    created_at: r.u_created_at as Date,
    updated_at: r.u_updated_at as Date,
  };
}

function grantOf(r: Record<string, unknown>): GrantRow {
  return {
    id: r.id as string,
    environment: r.environment as string,
    client_id: r.client_id as string,
    user_id: r.user_id as string | null,
    scopes: r.scopes as string[],
    auth_time: r.auth_time as Date | null,
    created_at: r.created_at as Date,
    revoked_at: r.revoked_at as Date | null,
    session_id: r.session_id as string | null,
    amr: r.amr as string[],
    acr: r.acr as string,
  };
}

/**
 * The sub-statement that writes `event` to the outbox once per row of `from` (none when it has none), in the
 * statement of the change: its values are outboxRow's (the shared encoder), from parameter `$first` on.
 */
function outboxInsert(first: number, from: string): string {
  const p = (i: number) => `$${first + i}`;
  return `INSERT INTO outbox (${OUTBOX_COLUMNS}) SELECT ${p(0)}::text, ${p(1)}::text, ${p(2)}::text, ${p(3)}::text, ${p(4)}::jsonb, ${p(5)}::text FROM ${from}`;
}

/** A new grant as the issuing statements take it: its row, its refresh token (hash, or null) and its event. */
export interface NewGrant {
  grant: {
    id: string;
    environment: string;
    clientId: string;
    userId: string | null;
    scopes: string[];
    authTime: Date | null;
    /** The login session it came from, and how its user had authenticated (empty for client_credentials). */
    sessionId: string | null;
    amr: string[];
    acr: string;
  };
  refreshTokenHash: Buffer | null;
  refreshTokenTtlSeconds: number;
  event: EventInput;
  /** The event's outbox values when already taken (in the request's context: its trace), else taken when written. */
  outbox?: OutboxValues;
}

type OutboxValues = ReturnType<typeof outboxRow>;

/**
 * A named (prepared) statement: PostgreSQL parses and plans it once per connection instead of on every grant.
 * Each name stands for exactly one statement text.
 */
const prepared = (name: string, text: string, values: unknown[]) => ({ name, text, values });

/** Postgres foreign-key violation (23503): what a grant meets when its client or user was deleted meanwhile. */

/**
 * The statement that issues a grant: the grant row (only when `gate` yields a row), its refresh token and its
 * oauth.token.issued event, all or nothing. `gate` (none: always) is a CTE named c that may use the grant's
 * parameters ($1 its id, $3 its client); its own parameters follow the statement's seventeen ($18 on).
 */
async function issueGrant(db: Db, g: NewGrant, gate: { name: string; cte: string; params: unknown[] } | undefined): Promise<GrantRow | undefined> {
  const { grant } = g;
  const from = gate ? 'c' : '(VALUES (1)) AS one';
  const { rows } = await db.query(
    prepared(
      gate ? gate.name : 'oauth_issue_grant',
      `WITH ${gate ? `c AS (${gate.cte}),` : ''}
     g AS (INSERT INTO oauth_grants (id, environment, client_id, user_id, scopes, auth_time, session_id, amr, acr)
           SELECT $1::text, $2::text, $3::text, $4::text, $5::text[], $6::timestamptz, $9::text, $10::text[], $11::text FROM ${from} RETURNING ${GRANT_COLUMNS}),
     r AS (INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at)
           SELECT $7::bytea, g.id, now() + make_interval(secs => $8::int) FROM g WHERE $7::bytea IS NOT NULL),
     o AS (${outboxInsert(12, 'g')})
     SELECT ${GRANT_COLUMNS} FROM g`,
      [
        grant.id,
        grant.environment,
        grant.clientId,
        grant.userId,
        grant.scopes,
        grant.authTime,
        g.refreshTokenHash,
        g.refreshTokenTtlSeconds,
        grant.sessionId,
        grant.amr,
        grant.acr,
        ...(g.outbox ?? outboxRow(g.event)),
        ...(gate?.params ?? []),
      ],
    ),
  );
  return rows[0] ? grantOf(rows[0]) : undefined;
}

/** Most grants one batched statement issues (see GrantBatcher). */
const GRANT_BATCH = 100;

/**
 * Grants with nothing before them (client_credentials: no code, no refresh token, no user) and their events,
 * many in one statement: one parse, one commit and one round trip for all of them. A grant's row comes back
 * under its id (RETURNING keeps no order).
 */
async function issueGrants(db: Db, gs: Array<NewGrant & { outbox: OutboxValues }>): Promise<Map<string, GrantRow>> {
  const items = gs.map(({ grant, outbox }) => {
    const [eventId, eventEnvironment, eventType, eventKey, payload, traceparent] = outbox;
    return { id: grant.id, environment: grant.environment, client_id: grant.clientId, scopes: grant.scopes, event_id: eventId, event_environment: eventEnvironment, event_type: eventType, event_key: eventKey, payload, traceparent };
  });
  const { rows } = await db.query(
    prepared(
      'oauth_issue_grants',
      `WITH x AS (
         SELECT * FROM json_to_recordset($1::json) AS x(id text, environment text, client_id text, scopes json, event_id text,
           event_environment text, event_type text, event_key text, payload jsonb, traceparent text)),
       g AS (INSERT INTO oauth_grants (id, environment, client_id, user_id, scopes, auth_time, session_id, amr, acr)
             SELECT x.id, x.environment, x.client_id, NULL, ARRAY(SELECT json_array_elements_text(x.scopes)), NULL, NULL, '{}', '' FROM x
             RETURNING ${GRANT_COLUMNS}),
       o AS (INSERT INTO outbox (${OUTBOX_COLUMNS})
             SELECT x.event_id, x.event_environment, x.event_type, x.event_key, x.payload, x.traceparent FROM x)
       SELECT ${GRANT_COLUMNS} FROM g`,
      [JSON.stringify(items)],
    ),
  );
  return new Map(rows.map((r) => [r.id as string, grantOf(r)]));
}

/** An integrity violation (SQLSTATE class 23: a foreign key, a unique key): one grant of a batch may be the cause. */
const isIntegrityError = (err: unknown) => typeof (err as { code?: unknown })?.code === 'string' && (err as { code: string }).code.startsWith('23');

/**
 * Issues one client's concurrent grants together: while one statement is on its way, the grants that arrive
 * wait for it and go in the next (at most GRANT_BATCH each); a grant arriving when none is on its way goes at
 * once, alone. One batcher per client, so a statement held up (the client's row locked by its deletion)
 * holds up that client's grants only, as it did without batching.
 * - A batch refused for an integrity violation wrote nothing (one statement): its grants are then issued one
 *   by one, so each gets its own answer. Any other failure (the connection, a timeout) is every grant's answer:
 *   retrying could issue twice what a lost commit did write.
 * - The batch's statements run outside any request's context (their spans belong to no one request's trace);
 *   a grant issued alone or retried runs in its own request's context.
 */
class GrantBatcher {
  private queue: Array<{ g: NewGrant & { outbox: OutboxValues }; resolve: (row: GrantRow) => void; reject: (err: unknown) => void; inContext: <T>(fn: () => T) => T }> = [];
  private running = false;

  constructor(
    private readonly db: Db,
    private readonly onIdle: () => void,
  ) {}

  issue(g: NewGrant): Promise<GrantRow> {
    // The event's values are taken here, in the request's context (its trace), not in the batch's.
    const withEvent = { ...g, outbox: g.outbox ?? outboxRow(g.event) };
    const inContext = AsyncResource.bind(<T>(fn: () => T): T => fn());
    return new Promise((resolve, reject) => {
      this.queue.push({ g: withEvent, resolve, reject, inContext });
      if (!this.running) requestContext.exit(() => void this.run());
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, GRANT_BATCH);
        const one = (b: (typeof batch)[number]) =>
          b.inContext(() => issueGrant(this.db, b.g, undefined)).then((row) => (row ? b.resolve(row) : b.reject(new Error('the grant was not written'))), b.reject);
        if (batch.length === 1) {
          await one(batch[0]!);
          continue;
        }
        let issued: Map<string, GrantRow>;
        try {
          issued = await issueGrants(this.db, batch.map((b) => b.g));
        } catch (err) {
          if (isIntegrityError(err)) await Promise.all(batch.map(one));
          else for (const b of batch) b.reject(err);
          continue;
        }
        for (const b of batch) {
          const row = issued.get(b.g.grant.id);
          if (row) b.resolve(row);
          else b.reject(new Error('the grant was not written'));
        }
      }
    } finally {
      this.running = false;
      this.onIdle();
    }
  }
}

/** Per pool, the batchers of the clients with grants on their way (removed when their queue is empty). */
const batchers = new WeakMap<Db, Map<string, GrantBatcher>>();

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
      prepared('oauth_client_get', `SELECT ${CLIENT_COLUMNS} FROM oauth_clients WHERE id = $1 AND ($2::text IS NULL OR environment = $2)`, [id, environment]),
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
      /** The login session, and how its user had authenticated (amr, acr). */
      sessionId: string;
      amr: string[];
      acr: string;
    },
  ): Promise<void> {
    await db.query(
      `INSERT INTO oauth_codes (code_hash, environment, client_id, user_id, redirect_uri, scopes, nonce, code_challenge, auth_time, expires_at, session_id, amr, acr)
       VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, now() + make_interval(secs => $10), $11, $12, $13)`,
      [c.hash, c.environment, c.clientId, c.userId, c.redirectUri, c.scopes, c.nonce, c.codeChallenge, c.authTime, c.ttlSeconds, c.sessionId, c.amr, c.acr],
    );
  },

  /** The code (any state), locked for this transaction, with whether it has expired on the database's clock. */
  async lock(db: Db, hash: Buffer): Promise<(CodeRow & { expired: boolean }) | undefined> {
    const { rows } = await db.query<CodeRow & { expired: boolean }>(
      `SELECT ${CODE_COLUMNS}, expires_at <= now() AS expired
       FROM oauth_codes WHERE code_hash = $1 FOR UPDATE`,
      [hash],
    );
    return rows[0];
  },

  async markUsed(db: Db, hash: Buffer, grantId: string | null): Promise<void> {
    await db.query(`UPDATE oauth_codes SET used_at = now(), grant_id = $2 WHERE code_hash = $1`, [hash, grantId]);
  },

  /** The code (any state) with its user, without locking: what a redemption checks before it spends it. */
  async find(db: Db, hash: Buffer): Promise<(CodeRow & { expired: boolean; user: UserRow | undefined }) | undefined> {
    const { rows } = await db.query<CodeRow & { expired: boolean } & Record<string, unknown>>(
      prepared(
        'oauth_code_find',
        `SELECT ${CODE_COLUMNS.split(', ').map((col) => `c.${col}`).join(', ')}, c.expires_at <= now() AS expired, ${USER_COLUMNS}
       FROM oauth_codes c LEFT JOIN users u ON u.id = c.user_id AND u.environment = c.environment WHERE c.code_hash = $1`,
        [hash],
      ),
    );
    const r = rows[0];
    return r && { ...r, user: userOf(r) };
  },

  /**
   * Spends the code and issues its grant in one statement, only if the code is still unused and unexpired
   * (the update's row lock decides between concurrent redemptions): the grant, or undefined when the code was
   * spent (or expired) meanwhile and nothing was written.
   */
  redeem(db: Db, hash: Buffer, g: NewGrant): Promise<GrantRow | undefined> {
    return issueGrant(db, g, {
      name: 'oauth_redeem_code',
      cte: `UPDATE oauth_codes SET used_at = now(), grant_id = $1 WHERE code_hash = $18 AND client_id = $3 AND used_at IS NULL AND expires_at > now() RETURNING 1`,
      params: [hash],
    });
  },

};

export const oauthGrantsRepository = {
  async get(db: Db, id: string): Promise<GrantRow | undefined> {
    const { rows } = await db.query<GrantRow>(`SELECT ${GRANT_COLUMNS} FROM oauth_grants WHERE id = $1`, [id]);
    return rows[0];
  },

  /** A grant with no code or refresh token before it (client_credentials) and its event, in one statement. */
  async issue(db: Db, g: NewGrant): Promise<GrantRow> {
    return (await issueGrant(db, g, undefined))!;
  },

  /**
   * The same for a grant with no user and no refresh token (client_credentials), issued together with those
   * of concurrent requests (GrantBatcher).
   */
  issueBatched(db: Db, g: NewGrant): Promise<GrantRow> {
    if (g.grant.userId !== null || g.refreshTokenHash !== null || g.grant.authTime !== null || g.grant.sessionId !== null || g.grant.amr.length || g.grant.acr)
      throw new Error('only grants with no user and no refresh token are issued in batches');
    let ofPool = batchers.get(db);
    if (!ofPool) batchers.set(db, (ofPool = new Map()));
    const clientId = g.grant.clientId;
    let batcher = ofPool.get(clientId);
    if (!batcher) ofPool.set(clientId, (batcher = new GrantBatcher(db, () => ofPool.delete(clientId))));
    return batcher.issue(g);
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
  /** The refresh token (any state) with its grant, locked for this transaction; expiry on the database's clock. */
  async lock(db: Db, hash: Buffer): Promise<(RefreshTokenRow & { expired: boolean; grant: GrantRow }) | undefined> {
    // The grant first, then the token: the order rotate's statement takes them in (its grant FOR SHARE, then the
    // token's UPDATE). One statement locking both may take the token first, and deadlock with a rotation.
    await db.query(`SELECT 1 FROM oauth_grants WHERE id = (SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = $1) FOR UPDATE`, [hash]);
    const { rows } = await db.query<RefreshTokenRow & { expired: boolean } & Record<string, unknown>>(
      `SELECT t.grant_id, t.expires_at, t.used_at, t.expires_at <= now() AS expired, ${G_COLUMNS}
       FROM oauth_refresh_tokens t JOIN oauth_grants g ON g.id = t.grant_id
       WHERE t.token_hash = $1 FOR UPDATE OF t, g`,
      [hash],
    );
    const r = rows[0];
    if (!r) return undefined;
    return { grant_id: r.grant_id, expires_at: r.expires_at, used_at: r.used_at, expired: r.expired, grant: grantOf(r) };
  },

  /** Without locking: for introspection and revocation. */
  async find(
    db: Db,
    hash: Buffer,
  ): Promise<
    | (RefreshTokenRow & { expired: boolean; created_at: Date } & Pick<GrantRow, 'client_id' | 'environment' | 'user_id' | 'scopes' | 'revoked_at' | 'auth_time' | 'amr' | 'acr'>)
    | undefined
  > {
    const { rows } = await db.query(
      `SELECT t.grant_id, t.expires_at, t.used_at, t.expires_at <= now() AS expired, t.created_at,
              g.client_id, g.environment, g.user_id, g.scopes, g.revoked_at, g.auth_time, g.amr, g.acr
       FROM oauth_refresh_tokens t JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = $1`,
      [hash],
    );
    return rows[0];
  },

  /** The refresh token (any state) with its grant and the grant's user, without locking: what a rotation checks first. */
  async findForRotation(db: Db, hash: Buffer): Promise<(RefreshTokenRow & { expired: boolean; grant: GrantRow; user: UserRow | undefined }) | undefined> {
    const { rows } = await db.query(
      prepared(
        'oauth_refresh_find',
        `SELECT t.grant_id, t.expires_at, t.used_at, t.expires_at <= now() AS expired, ${G_COLUMNS}, ${USER_COLUMNS}
       FROM oauth_refresh_tokens t JOIN oauth_grants g ON g.id = t.grant_id
       LEFT JOIN users u ON u.id = g.user_id AND u.environment = g.environment
       WHERE t.token_hash = $1`,
        [hash],
      ),
    );
    const r = rows[0] as (RefreshTokenRow & { expired: boolean } & Record<string, unknown>) | undefined;
    if (!r) return undefined;
    return { grant_id: r.grant_id, expires_at: r.expires_at, used_at: r.used_at, expired: r.expired, grant: grantOf(r), user: userOf(r) };
  },

  /**
   * Rotates in one statement: spends the token, stores its successor (hash, or null when the grant has no
   * offline_access) and writes `event`, only if the token is still unused and unexpired and its grant
   * unrevoked (the grant is share-locked, so a revocation is either seen or waits). False when nothing was
   * written (spent, expired or revoked meanwhile).
   */
  async rotate(db: Db, hash: Buffer, grantId: string, next: Buffer | null, ttlSeconds: number, event: EventInput): Promise<boolean> {
    const { rowCount } = await db.query(
      prepared(
        'oauth_refresh_rotate',
        `WITH g AS (SELECT id FROM oauth_grants WHERE id = $2 AND revoked_at IS NULL FOR SHARE),
       t AS (UPDATE oauth_refresh_tokens SET used_at = now() FROM g
             WHERE token_hash = $1 AND grant_id = g.id AND used_at IS NULL AND expires_at > now() RETURNING grant_id),
       r AS (INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at)
             SELECT $3::bytea, t.grant_id, now() + make_interval(secs => $4::int) FROM t WHERE $3::bytea IS NOT NULL),
       o AS (${outboxInsert(5, 't')})
       SELECT 1 FROM t`,
        [hash, grantId, next, ttlSeconds, ...outboxRow(event)],
      ),
    );
    return (rowCount ?? 0) > 0;
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
