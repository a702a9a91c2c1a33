import type { Pool, PoolClient } from '@secsvc/shared';
import type { FailureCounts } from '../domain/login-throttle';
import { CHALLENGE_MAX_ATTEMPTS } from '../domain/mfa';
import { failureCounts } from './failure-counts';

type Db = Pool | PoolClient;

export type FactorKind = 'totp' | 'passkey' | 'recovery_codes';

export interface FactorRow {
  id: string;
  environment: string;
  user_id: string;
  kind: FactorKind;
  name: string;
  confirmed_at: Date | null;
  secret: Buffer | null;
  last_step: string | null;
  credential_id: string | null;
  public_key: Buffer | null;
  sign_count: string | null;
  transports: string[] | null;
  aaguid: string | null;
  backed_up: boolean | null;
  created_at: Date;
  last_used_at: Date | null;
  /** recovery_codes: the unused codes left (computed). */
  remaining: number;
}

const FACTOR_COLUMNS = `f.id, f.environment, f.user_id, f.kind, f.name, f.confirmed_at, f.secret, f.last_step::text AS last_step,
  f.credential_id, f.public_key, f.sign_count::text AS sign_count, f.transports, f.aaguid, f.backed_up, f.created_at, f.last_used_at,
  CASE WHEN f.kind = 'recovery_codes' THEN (SELECT count(*)::int FROM mfa_recovery_codes c WHERE c.factor_id = f.id AND c.used_at IS NULL) ELSE 0 END AS remaining`;

export interface ChallengeRow {
  id: string;
  environment: string;
  purpose: 'login' | 'passkey_registration' | 'passkey_authentication';
  user_id: string | null;
  webauthn_challenge: string | null;
  data: Record<string, unknown>;
  attempts: number;
  expires_at: Date;
  used_at: Date | null;
}

const CHALLENGE_COLUMNS = 'id, environment, purpose, user_id, webauthn_challenge, data, attempts, expires_at, used_at';

export interface SettingsRow {
  environment: string;
  required: 'off' | 'all' | 'roles';
  roles: string[];
  updated_at: Date;
}

export const mfaFactorsRepository = {
  async list(db: Db, environment: string, userId: string): Promise<FactorRow[]> {
    const { rows } = await db.query<FactorRow>(
      `SELECT ${FACTOR_COLUMNS} FROM mfa_factors f WHERE f.user_id = $1 AND f.environment = $2 ORDER BY f.id`,
      [userId, environment],
    );
    return rows;
  },

  async get(db: Db, environment: string, userId: string, id: string): Promise<FactorRow | undefined> {
    const { rows } = await db.query<FactorRow>(`SELECT ${FACTOR_COLUMNS} FROM mfa_factors f WHERE f.id = $1 AND f.user_id = $2 AND f.environment = $3`, [
      id,
      userId,
      environment,
    ]);
    return rows[0];
  },

  /** The factor locked for a verification (its last step or counter is updated in the same transaction). */
  async lock(db: Db, id: string): Promise<FactorRow | undefined> {
    const { rows } = await db.query<FactorRow>(`SELECT ${FACTOR_COLUMNS} FROM mfa_factors f WHERE f.id = $1 FOR UPDATE OF f`, [id]);
    return rows[0];
  },

  async count(db: Db, userId: string): Promise<number> {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM mfa_factors WHERE user_id = $1`, [userId]);
    return rows[0]!.n;
  },

  /** The passkey with this credential id in `environment`. */
  async findPasskey(db: Db, environment: string, credentialId: string): Promise<FactorRow | undefined> {
    const { rows } = await db.query<FactorRow>(
      `SELECT ${FACTOR_COLUMNS} FROM mfa_factors f WHERE f.credential_id = $1 AND f.environment = $2 AND f.kind = 'passkey'`,
      [credentialId, environment],
    );
    return rows[0];
  },

  async insertTotp(db: Db, f: { id: string; environment: string; userId: string; name: string; secret: Buffer }): Promise<FactorRow> {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO mfa_factors (id, environment, user_id, kind, name, secret) VALUES ($1, $2, $3, 'totp', $4, $5) RETURNING id`,
      [f.id, f.environment, f.userId, f.name, f.secret],
    );
    return (await mfaFactorsRepository.get(db, f.environment, f.userId, rows[0]!.id))!;
  },

  async insertPasskey(
    db: Db,
    f: { id: string; environment: string; userId: string; name: string; credentialId: string; publicKey: Buffer; counter: number; transports: string[]; aaguid: string; backedUp: boolean },
  ): Promise<FactorRow> {
    await db.query(
      `INSERT INTO mfa_factors (id, environment, user_id, kind, name, confirmed_at, credential_id, public_key, sign_count, transports, aaguid, backed_up)
       VALUES ($1, $2, $3, 'passkey', $4, now(), $5, $6, $7, $8, $9, $10)`,
      [f.id, f.environment, f.userId, f.name, f.credentialId, f.publicKey, f.counter, f.transports, f.aaguid, f.backedUp],
    );
    return (await mfaFactorsRepository.get(db, f.environment, f.userId, f.id))!;
  },

  /**
   * Locks the user's row until the end of the transaction (NO KEY: inserts referring to the user go on), so
   * changes of one user's factors that depend on the others (the last factor, the one recovery set) take turns.
   */
  async lockUser(db: Db, userId: string): Promise<void> {
    await db.query(`SELECT 1 FROM users WHERE id = $1 FOR NO KEY UPDATE`, [userId]);
  },

  /** Replaces the user's recovery codes (a new set, the old one deleted). */
  async replaceRecoveryCodes(db: Db, f: { id: string; environment: string; userId: string; name: string; hashes: Buffer[] }): Promise<FactorRow> {
    // replacements of one user's set wait for each other: else two at once both find no set to delete and the
    // second insert breaks the one-set index
    await mfaFactorsRepository.lockUser(db, f.userId);
    await db.query(`DELETE FROM mfa_factors WHERE user_id = $1 AND kind = 'recovery_codes'`, [f.userId]);
    await db.query(`INSERT INTO mfa_factors (id, environment, user_id, kind, name, confirmed_at) VALUES ($1, $2, $3, 'recovery_codes', $4, now())`, [
      f.id,
      f.environment,
      f.userId,
      f.name,
    ]);
    await db.query(`INSERT INTO mfa_recovery_codes (factor_id, code_hash) SELECT $1, unnest($2::bytea[])`, [f.id, f.hashes]);
    return (await mfaFactorsRepository.get(db, f.environment, f.userId, f.id))!;
  },

  /** Spends one unused recovery code of the user: the factor it belonged to, or undefined. */
  async useRecoveryCode(db: Db, userId: string, hash: Buffer): Promise<string | undefined> {
    const { rows } = await db.query<{ factor_id: string }>(
      `UPDATE mfa_recovery_codes c SET used_at = now() FROM mfa_factors f
       WHERE c.factor_id = f.id AND f.user_id = $1 AND f.kind = 'recovery_codes' AND c.code_hash = $2 AND c.used_at IS NULL
       RETURNING c.factor_id`,
      [userId, hash],
    );
    if (rows[0]) await db.query(`UPDATE mfa_factors SET last_used_at = now() WHERE id = $1`, [rows[0].factor_id]);
    return rows[0]?.factor_id;
  },

  async confirmTotp(db: Db, id: string, step: number): Promise<void> {
    await db.query(`UPDATE mfa_factors SET confirmed_at = now(), last_step = $2, last_used_at = now() WHERE id = $1`, [id, step]);
  },

  async useTotp(db: Db, id: string, step: number): Promise<void> {
    await db.query(`UPDATE mfa_factors SET last_step = $2, last_used_at = now() WHERE id = $1`, [id, step]);
  },

  async usePasskey(db: Db, id: string, counter: number): Promise<void> {
    await db.query(`UPDATE mfa_factors SET sign_count = $2, last_used_at = now() WHERE id = $1`, [id, counter]);
  },

  async rename(db: Db, environment: string, userId: string, id: string, name: string): Promise<boolean> {
    const { rowCount } = await db.query(`UPDATE mfa_factors SET name = $4 WHERE id = $1 AND user_id = $2 AND environment = $3`, [id, userId, environment, name]);
    return rowCount === 1;
  },

  async delete(db: Db, environment: string, userId: string, id: string): Promise<FactorRow | undefined> {
    const row = await mfaFactorsRepository.get(db, environment, userId, id);
    if (!row) return undefined;
    await db.query(`DELETE FROM mfa_factors WHERE id = $1`, [id]);
    return row;
  },
};

export const mfaChallengesRepository = {
  async insert(
    db: Db,
    c: { id: string; environment: string; purpose: ChallengeRow['purpose']; userId: string | null; tokenHash?: Buffer; webauthnChallenge?: string; data?: Record<string, unknown>; ttlSeconds: number },
  ): Promise<ChallengeRow> {
    const { rows } = await db.query<ChallengeRow>(
      `INSERT INTO mfa_challenges (id, environment, purpose, user_id, token_hash, webauthn_challenge, data, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, now() + make_interval(secs => $8)) RETURNING ${CHALLENGE_COLUMNS}`,
      [c.id, c.environment, c.purpose, c.userId, c.tokenHash ?? null, c.webauthnChallenge ?? null, JSON.stringify(c.data ?? {}), c.ttlSeconds],
    );
    return rows[0]!;
  },

  /** The live (unused, unexpired, not out of attempts) login challenge with this token hash, locked unless `peek`. */
  async lockLogin(db: Db, environment: string, tokenHash: Buffer, peek = false): Promise<ChallengeRow | undefined> {
    const { rows } = await db.query<ChallengeRow>(
      `SELECT ${CHALLENGE_COLUMNS} FROM mfa_challenges
       WHERE token_hash = $1 AND environment = $2 AND purpose = 'login' AND used_at IS NULL AND expires_at > now() AND attempts < $3${peek ? '' : ' FOR UPDATE'}`,
      [tokenHash, environment, CHALLENGE_MAX_ATTEMPTS],
    );
    return rows[0];
  },

  /** The live challenge with this id and purpose, locked. */
  async lock(db: Db, environment: string, id: string, purpose: ChallengeRow['purpose']): Promise<ChallengeRow | undefined> {
    const { rows } = await db.query<ChallengeRow>(
      `SELECT ${CHALLENGE_COLUMNS} FROM mfa_challenges
       WHERE id = $1 AND environment = $2 AND purpose = $3 AND used_at IS NULL AND expires_at > now() FOR UPDATE`,
      [id, environment, purpose],
    );
    return rows[0];
  },

  async use(db: Db, id: string): Promise<void> {
    await db.query(`UPDATE mfa_challenges SET used_at = now() WHERE id = $1`, [id]);
  },

  async setData(db: Db, id: string, data: Record<string, unknown>): Promise<void> {
    await db.query(`UPDATE mfa_challenges SET data = $2::jsonb WHERE id = $1`, [id, JSON.stringify(data)]);
  },

  /** Counts a failed answer; the challenge is used up once it reached `limit` failures. */
  async fail(db: Db, id: string, limit: number): Promise<void> {
    await db.query(`UPDATE mfa_challenges SET attempts = attempts + 1, used_at = CASE WHEN attempts + 1 >= $2 THEN now() ELSE used_at END WHERE id = $1`, [id, limit]);
  },
};

export const mfaSettingsRepository = {
  async get(db: Db, environment: string): Promise<SettingsRow> {
    const { rows } = await db.query<SettingsRow>(`SELECT environment, required, roles, updated_at FROM mfa_settings WHERE environment = $1`, [environment]);
    return rows[0] ?? { environment, required: 'off', roles: [], updated_at: new Date(0) };
  },

  async put(db: Db, environment: string, required: SettingsRow['required'], roles: string[]): Promise<SettingsRow> {
    const { rows } = await db.query<SettingsRow>(
      `INSERT INTO mfa_settings (environment, required, roles) VALUES ($1, $2, $3)
       ON CONFLICT (environment) DO UPDATE SET required = EXCLUDED.required, roles = EXCLUDED.roles, updated_at = now()
       RETURNING environment, required, roles, updated_at`,
      [environment, required, roles],
    );
    return rows[0]!;
  },
};

/** Failed second-factor proofs (the throttle of MfaService), per user and per ip over the login window. */
export const mfaFailuresRepository = {
  /**
   * One attempt at a time per user and per ip: the caller's transaction waits for any other attempt of the same
   * user or ip, so the counts it reads next include every failure before it (no guesses in parallel).
   */
  async serialize(db: Db, userId: string | null, ip: string): Promise<void> {
    if (userId) await db.query(`SELECT pg_advisory_xact_lock(hashtext('secsvc:mfa-user'), hashtext($1))`, [userId]);
    await db.query(`SELECT pg_advisory_xact_lock(hashtext('secsvc:mfa-ip'), hashtext($1))`, [ip]);
  },

  /** The user's failures (0 without a user) and the ip's, in the window, with the seconds until the oldest counted one leaves it. */
  async counts(db: Db, environment: string, userId: string | null, ip: string): Promise<FailureCounts> {
    return failureCounts(db, 'mfa_failures', 'environment = $1 AND user_id = $2', [environment, userId, ip]);
  },

  async record(db: Db, environment: string, userId: string | null, ip: string): Promise<void> {
    await db.query(`INSERT INTO mfa_failures (environment, user_id, ip) VALUES ($1, $2, $3)`, [environment, userId, ip]);
  },

  /** A proof succeeded: the user's failures no longer count (the ip's do). */
  async clear(db: Db, environment: string, userId: string): Promise<void> {
    await db.query(`DELETE FROM mfa_failures WHERE environment = $1 AND user_id = $2`, [environment, userId]);
  },
};
