import { isUniqueViolation, type Pool, type PoolClient } from '@secsvc/shared';
import { SESSION_COLUMNS, type SessionRow } from './sessions';
import type { UserRow } from './users';

type Db = Pool | PoolClient;

export interface SsoConnectionRow {
  id: string;
  environment: string;
  name: string;
  idp_metadata_xml: string;
  idp_entity_id: string;
  idp_sso_url: string;
  idp_certificates: string[];
  domains: string[];
  default_roles: string[];
  attribute_mapping: string;
  allow_idp_initiated: boolean;
  initiate_login_url: string;
  allow_sha1_signatures: boolean;
  /** A login whose assertion does not say the IdP did MFA needs the user's own second factor here. */
  require_mfa: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface SsoConnectionFields {
  name: string;
  idpMetadataXml: string;
  idpEntityId: string;
  idpSsoUrl: string;
  idpCertificates: string[];
  domains: string[];
  defaultRoles: string[];
  attributeMapping: string;
  allowIdpInitiated: boolean;
  initiateLoginUrl: string;
  allowSha1Signatures: boolean;
  requireMfa: boolean;
}

const COLUMNS = `id, environment, name, idp_metadata_xml, idp_entity_id, idp_sso_url, idp_certificates, domains, default_roles,
  attribute_mapping::text AS attribute_mapping, allow_idp_initiated, initiate_login_url, allow_sha1_signatures, require_mfa, created_at, updated_at`;
const USER_COLUMNS = 'id, environment, email, name, email_verified, roles, metadata::text AS metadata, created_at, updated_at';

export const ssoConnectionsRepository = {
  async insert(db: Db, id: string, environment: string, f: SsoConnectionFields): Promise<SsoConnectionRow> {
    const { rows } = await db.query<SsoConnectionRow>(
      `INSERT INTO sso_connections (id, environment, name, idp_metadata_xml, idp_entity_id, idp_sso_url, idp_certificates, domains,
         default_roles, attribute_mapping, allow_idp_initiated, initiate_login_url, allow_sha1_signatures, require_mfa)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14) RETURNING ${COLUMNS}`,
      [
        id,
        environment,
        f.name,
        f.idpMetadataXml,
        f.idpEntityId,
        f.idpSsoUrl,
        f.idpCertificates,
        f.domains,
        f.defaultRoles,
        f.attributeMapping,
        f.allowIdpInitiated,
        f.initiateLoginUrl,
        f.allowSha1Signatures,
        f.requireMfa,
      ],
    );
    return rows[0]!;
  },

  /** The connection in `environment` (any environment when null: the SP endpoints know only its id). */
  async get(db: Db, environment: string | null, id: string): Promise<SsoConnectionRow | undefined> {
    const { rows } = await db.query<SsoConnectionRow>(
      `SELECT ${COLUMNS} FROM sso_connections WHERE id = $1 AND ($2::text IS NULL OR environment = $2)`,
      [id, environment],
    );
    return rows[0];
  },

  async findByDomain(db: Db, environment: string, domain: string): Promise<SsoConnectionRow | undefined> {
    const { rows } = await db.query<SsoConnectionRow>(`SELECT ${COLUMNS} FROM sso_connections WHERE environment = $1 AND domains @> ARRAY[$2::text]`, [
      environment,
      domain,
    ]);
    return rows[0];
  },

  async list(db: Db, environment: string, limit: number, after: string | undefined): Promise<SsoConnectionRow[]> {
    const { rows } = await db.query<SsoConnectionRow>(
      `SELECT ${COLUMNS} FROM sso_connections WHERE environment = $1 AND ($2::text IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
      [environment, after ?? null, limit + 1],
    );
    return rows;
  },

  /** Another connection of the environment claiming one of `domains` (locked until the transaction ends). */
  async domainOwner(db: Db, environment: string, domains: string[], exceptId: string): Promise<{ id: string; domain: string } | undefined> {
    // One writer at a time per environment, so two connections cannot claim a domain concurrently.
    await db.query(`SELECT pg_advisory_xact_lock(hashtext('sso_domains:' || $1))`, [environment]);
    const { rows } = await db.query<{ id: string; domain: string }>(
      `SELECT id, d AS domain FROM sso_connections, unnest(domains) AS d
       WHERE environment = $1 AND id <> $2 AND d = ANY($3::text[]) LIMIT 1`,
      [environment, exceptId, domains],
    );
    return rows[0];
  },

  async update(db: Db, environment: string, id: string, u: Partial<SsoConnectionFields>): Promise<SsoConnectionRow | undefined> {
    const { rows } = await db.query<SsoConnectionRow>(
      `UPDATE sso_connections SET
         name = COALESCE($3, name),
         idp_metadata_xml = COALESCE($4, idp_metadata_xml),
         idp_entity_id = COALESCE($5, idp_entity_id),
         idp_sso_url = COALESCE($6, idp_sso_url),
         idp_certificates = COALESCE($7, idp_certificates),
         domains = COALESCE($8, domains),
         default_roles = COALESCE($9, default_roles),
         attribute_mapping = COALESCE($10::jsonb, attribute_mapping),
         allow_idp_initiated = COALESCE($11, allow_idp_initiated),
         initiate_login_url = COALESCE($12, initiate_login_url),
         allow_sha1_signatures = COALESCE($13, allow_sha1_signatures),
         require_mfa = COALESCE($14, require_mfa),
         updated_at = now()
       WHERE environment = $1 AND id = $2 RETURNING ${COLUMNS}`,
      [
        environment,
        id,
        u.name ?? null,
        u.idpMetadataXml ?? null,
        u.idpEntityId ?? null,
        u.idpSsoUrl ?? null,
        u.idpCertificates ?? null,
        u.domains ?? null,
        u.defaultRoles ?? null,
        u.attributeMapping ?? null,
        u.allowIdpInitiated ?? null,
        u.initiateLoginUrl ?? null,
        u.allowSha1Signatures ?? null,
        u.requireMfa ?? null,
      ],
    );
    return rows[0];
  },

  async delete(db: Db, environment: string, id: string): Promise<boolean> {
    const { rowCount } = await db.query(`DELETE FROM sso_connections WHERE environment = $1 AND id = $2`, [environment, id]);
    return (rowCount ?? 0) > 0;
  },
};

export const samlIdsRepository = {
  async saveRequest(db: Db, connectionId: string, requestId: string, ttlSeconds: number, returnTo: string, binding: string): Promise<void> {
    await db.query(
      `INSERT INTO saml_requests (id, connection_id, expires_at, return_to, binding) VALUES ($1, $2, now() + make_interval(secs => $3), $4, $5)
       ON CONFLICT (id) DO NOTHING`,
      [requestId, connectionId, ttlSeconds, returnTo, binding],
    );
  },

  /** The request's connection, where the login continues and its browser binding, once: the row is deleted by the same statement. */
  async takeRequest(db: Db, requestId: string): Promise<{ connectionId: string; returnTo: string; binding: string } | undefined> {
    const { rows } = await db.query<{ connection_id: string; return_to: string; binding: string; live: boolean }>(
      `DELETE FROM saml_requests WHERE id = $1 RETURNING connection_id, return_to, binding, expires_at >= now() AS live`,
      [requestId],
    );
    return rows[0]?.live ? { connectionId: rows[0].connection_id, returnTo: rows[0].return_to, binding: rows[0].binding } : undefined;
  },

  /**
   * Remembers an assertion id until `expiresAt`; false when it was already used (a replay). Expired ids (and
   * expired request ids) are deleted by the retention sweeper, not on this path.
   */
  async rememberAssertion(db: Db, connectionId: string, assertionId: string, expiresAt: Date): Promise<boolean> {
    const { rowCount } = await db.query(
      `INSERT INTO saml_assertions (connection_id, assertion_id, expires_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
      [connectionId, assertionId, expiresAt],
    );
    return (rowCount ?? 0) > 0;
  },
};

/** Sessions opened by SAML logins, by NameID and SessionIndex (single logout). */
export const samlSessionsRepository = {
  async record(db: Db, s: { sessionId: string; connectionId: string; nameId: string; nameIdFormat: string; sessionIndex: string }): Promise<void> {
    await db.query(`INSERT INTO saml_sessions (session_id, connection_id, name_id, name_id_format, session_index) VALUES ($1, $2, $3, $4, $5)`, [
      s.sessionId,
      s.connectionId,
      s.nameId,
      s.nameIdFormat,
      s.sessionIndex,
    ]);
  },

  /** The SAML subject a session was opened for, if a SAML login opened it. */
  async subjectOf(db: Db, sessionId: string): Promise<{ connectionId: string; nameId: string; nameIdFormat: string; sessionIndex: string } | undefined> {
    const { rows } = await db.query<{ connection_id: string; name_id: string; name_id_format: string; session_index: string }>(
      `SELECT connection_id, name_id, name_id_format, session_index FROM saml_sessions WHERE session_id = $1`,
      [sessionId],
    );
    const r = rows[0];
    return r && { connectionId: r.connection_id, nameId: r.name_id, nameIdFormat: r.name_id_format, sessionIndex: r.session_index };
  },

  /** Revokes the live sessions of this NameID at this connection (only those of `sessionIndexes` when any). */
  async revoke(db: Db, connectionId: string, nameId: string, sessionIndexes: string[]): Promise<SessionRow[]> {
    const { rows } = await db.query<SessionRow>(
      `UPDATE sessions SET revoked_at = now()
       FROM saml_sessions ss
       WHERE ss.session_id = sessions.id AND ss.connection_id = $1 AND ss.name_id = $2
         AND (cardinality($3::text[]) = 0 OR ss.session_index = ANY ($3::text[]))
         AND sessions.revoked_at IS NULL AND sessions.expires_at > now()
       RETURNING ${SESSION_COLUMNS.split(', ').map((c) => `sessions.${c}`).join(', ')}`,
      [connectionId, nameId, sessionIndexes],
    );
    return rows;
  },
};

export const ssoUsersRepository = {
  async findByEmail(db: Db, environment: string, email: string): Promise<UserRow | undefined> {
    const { rows } = await db.query<UserRow>(`SELECT ${USER_COLUMNS} FROM users WHERE environment = $1 AND lower(email) = lower($2)`, [
      environment,
      email,
    ]);
    return rows[0];
  },

  /** A user created just in time (the IdP vouches for the email); undefined when the email was taken meanwhile. */
  async insertVerified(db: Db, u: { id: string; environment: string; email: string; name: string; roles: string[]; metadata: string }): Promise<UserRow | undefined> {
    await db.query('SAVEPOINT jit_user');
    try {
      const { rows } = await db.query<UserRow>(
        `INSERT INTO users (id, environment, email, name, roles, metadata, email_verified) VALUES ($1, $2, $3, $4, $5, $6::json, true)
         RETURNING ${USER_COLUMNS}`,
        [u.id, u.environment, u.email, u.name, u.roles, u.metadata],
      );
      await db.query('RELEASE SAVEPOINT jit_user');
      return rows[0];
    } catch (err) {
      if (!isUniqueViolation(err, 'users_email_unique')) throw err;
      await db.query('ROLLBACK TO SAVEPOINT jit_user');
      return undefined;
    }
  },
};
