/** The retention sweeper against a real PostgreSQL: what is of no further use goes, everything live stays. */
import { createLogger, Metrics, type Pool } from '@secsvc/shared';
import { startRetention, sweepOnce } from '../src/retention';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';

let t: IdentityTestDb;
let pool: Pool;

beforeAll(async () => {
  t = await identityTestDb();
  pool = t.pool;
});

afterAll(() => closeIdentityTestDb(t));

const ago = (days: number) => new Date(Date.now() - days * 86_400_000);
const later = (days: number) => new Date(Date.now() + days * 86_400_000);
let n = 0;
const id = (prefix: string) => `${prefix}_ret${++n}`;
const hash = () => Buffer.from(id('h'));

async function ids(table: string, key = 'id'): Promise<string[]> {
  const { rows } = await pool.query(`SELECT ${key}::text AS k FROM ${table} ORDER BY 1`);
  return rows.map((r) => r.k as string);
}

async function user(): Promise<string> {
  const u = id('user');
  await pool.query(`INSERT INTO users (id, environment, email, name) VALUES ($1, 'live', $2, 'R')`, [u, `${u}@example.com`]);
  return u;
}

async function session(userId: string, expiresAt: Date, revokedAt: Date | null): Promise<string> {
  const s = id('ses');
  await pool.query(`INSERT INTO sessions (id, environment, user_id, token_hash, expires_at, revoked_at) VALUES ($1, 'live', $2, $3, $4, $5)`, [s, userId, hash(), expiresAt, revokedAt]);
  return s;
}

describe('retention sweep (30 days)', () => {
  it('deletes ended sessions, spent tokens, old failures, dead grants, expired SAML ids and MFA challenges, abandoned TOTP enrollments; keeps the rest', async () => {
    const u = await user();
    const keep: Record<string, string[]> = {};
    const gone: Record<string, string[]> = {};
    const add = (bucket: Record<string, string[]>, table: string, value: string) => (bucket[table] ??= []).push(value);

    add(keep, 'sessions', await session(u, later(1), null)); // live
    add(keep, 'sessions', await session(u, ago(5), null)); // expired recently: still kept
    add(keep, 'sessions', await session(u, later(1), ago(5))); // revoked recently
    add(gone, 'sessions', await session(u, ago(31), null)); // expired long ago
    add(gone, 'sessions', await session(u, later(1), ago(40))); // revoked long ago

    for (const [expires, used, bucket] of [
      [later(1), null, keep],
      [ago(31), null, gone],
      [later(1), ago(31), gone],
      [ago(2), ago(2), keep],
    ] as const) {
      const r = id('prt');
      await pool.query(`INSERT INTO password_reset_tokens (id, environment, user_id, token_hash, expires_at, used_at) VALUES ($1, 'live', $2, $3, $4, $5)`, [r, u, hash(), expires, used]);
      add(bucket, 'password_reset_tokens', r);
    }

    for (const [at, bucket] of [[ago(2), gone], [new Date(Date.now() - 3_600_000), keep]] as const) {
      const { rows } = await pool.query(`INSERT INTO login_failures (environment, email, ip, failed_at) VALUES ('live', 'x@example.com', '203.0.113.1', $1) RETURNING id::text`, [at]);
      add(bucket, 'login_failures', rows[0].id);
    }

    const client = id('cli');
    await pool.query(`INSERT INTO oauth_clients (id, environment, name, type, scopes) VALUES ($1, 'live', 'C', 'public', '{openid}')`, [client]);
    const grant = async (createdAt: Date, revokedAt: Date | null) => {
      const g = id('grant');
      await pool.query(`INSERT INTO oauth_grants (id, environment, client_id, user_id, scopes, created_at, revoked_at) VALUES ($1, 'live', $2, $3, '{openid}', $4, $5)`, [g, client, u, createdAt, revokedAt]);
      return g;
    };
    const refresh = async (grantId: string, expiresAt: Date, usedAt: Date | null = null) => {
      const h = hash();
      await pool.query(`INSERT INTO oauth_refresh_tokens (token_hash, grant_id, expires_at, used_at) VALUES ($1, $2, $3, $4)`, [h, grantId, expiresAt, usedAt]);
      return h.toString('hex');
    };
    const live = await grant(ago(60), null);
    add(keep, 'oauth_grants', live);
    add(keep, 'oauth_refresh_tokens', await refresh(live, later(10)));
    add(keep, 'oauth_refresh_tokens', await refresh(live, later(10), ago(40))); // rotated, not expired: detects reuse
    add(gone, 'oauth_refresh_tokens', await refresh(live, ago(31), ago(60)));
    add(gone, 'oauth_grants', await grant(ago(60), ago(31))); // revoked long ago
    add(keep, 'oauth_grants', await grant(ago(60), ago(2))); // revoked recently
    add(gone, 'oauth_grants', await grant(ago(31), null)); // no refresh token, old: only long-expired access tokens
    add(keep, 'oauth_grants', await grant(new Date(Date.now() - 3_600_000), null)); // no refresh token, recent

    for (const [expires, bucket] of [[ago(2), gone], [ago(0.1), keep]] as const) {
      const h = hash();
      await pool.query(
        `INSERT INTO oauth_codes (code_hash, environment, client_id, user_id, redirect_uri, scopes, auth_time, expires_at) VALUES ($1, 'live', $2, $3, 'https://a.example/cb', '{openid}', now(), $4)`,
        [h, client, u, expires],
      );
      add(bucket, 'oauth_codes', h.toString('hex'));
    }

    const conn = id('sso');
    await pool.query(`INSERT INTO sso_connections (id, environment, name, idp_metadata_xml, idp_entity_id, idp_sso_url, idp_certificates) VALUES ($1, 'live', 'S', '<x/>', 'e', 'https://i.example', '{c}')`, [conn]);
    for (const [expires, bucket] of [[ago(0.01), gone], [later(0.01), keep]] as const) {
      const r = id('_req');
      await pool.query(`INSERT INTO saml_requests (id, connection_id, expires_at) VALUES ($1, $2, $3)`, [r, conn, expires]);
      add(bucket, 'saml_requests', r);
      const a = id('_as');
      await pool.query(`INSERT INTO saml_assertions (connection_id, assertion_id, expires_at) VALUES ($1, $2, $3)`, [conn, a, expires]);
      add(bucket, 'saml_assertions', a);
    }

    for (const [expires, bucket] of [[ago(2), gone], [ago(0.5), keep], [later(0.01), keep]] as const) {
      const c = id('mfc');
      await pool.query(`INSERT INTO mfa_challenges (id, environment, purpose, user_id, expires_at) VALUES ($1, 'live', 'login', $2, $3)`, [c, u, expires]);
      add(bucket, 'mfa_challenges', c);
    }
    for (const [created, confirmed, bucket] of [[ago(2), null, gone], [ago(0.5), null, keep], [ago(40), ago(40), keep]] as const) {
      const f = id('mfa');
      await pool.query(`INSERT INTO mfa_factors (id, environment, user_id, kind, name, created_at, confirmed_at) VALUES ($1, 'live', $2, 'totp', 'T', $3, $4)`, [f, u, created, confirmed]);
      add(bucket, 'mfa_factors', f);
    }

    const result = await sweepOnce(pool, { retentionDays: 30, batchSize: 2 });
    expect(result.skipped).toBe(false);
    const keyOf: Record<string, string> = { oauth_refresh_tokens: "encode(token_hash, 'hex')", oauth_codes: "encode(code_hash, 'hex')", saml_assertions: 'assertion_id' };
    for (const table of Object.keys({ ...keep, ...gone })) {
      const left = await ids(table, keyOf[table]);
      for (const k of keep[table] ?? []) expect([table, left.includes(k)]).toEqual([table, true]);
      for (const k of gone[table] ?? []) expect([table, left.includes(k)]).toEqual([table, false]);
      // Batches of 2 went on until the table had nothing more to give.
      expect([table, result.deleted[table]]).toEqual([table, (gone[table] ?? []).length]);
    }
    // The user, client and connection are not the sweeper's business.
    expect(await ids('users')).toContain(u);
    expect(await ids('oauth_clients')).toContain(client);
    expect(await ids('sso_connections')).toContain(conn);
    // Deleted sessions leave their tombstone for gateways that reconnect later.
    expect(await ids('ended_sessions')).toEqual(expect.arrayContaining(gone.sessions!));

    // A second sweep finds nothing more.
    expect(Object.values((await sweepOnce(pool, { retentionDays: 30 })).deleted).every((v) => v === 0)).toBe(true);
  });

  it('skips while another replica sweeps (advisory lock)', async () => {
    const other = await pool.connect();
    try {
      await other.query(`SELECT pg_advisory_lock(hashtext('secsvc:identity:retention'))`);
      expect(await sweepOnce(pool, { retentionDays: 30 })).toEqual({ skipped: true, deleted: {} });
      await other.query(`SELECT pg_advisory_unlock(hashtext('secsvc:identity:retention'))`);
      expect((await sweepOnce(pool, { retentionDays: 30 })).skipped).toBe(false);
    } finally {
      other.release();
    }
  });

  it('runs on its interval, counts what it deleted, and stops on close', async () => {
    const u = await user();
    const old = await session(u, ago(31), null);
    const metrics = new Metrics('test');
    const retention = startRetention({ pool, retentionDays: 30, intervalMs: 50, logger: createLogger('test', 'silent'), metrics });
    try {
      for (let i = 0; i < 200 && (await ids('sessions')).includes(old); i++) await new Promise((r) => setTimeout(r, 25));
      expect(await ids('sessions')).not.toContain(old);
    } finally {
      await retention.close();
    }
    expect(await metrics.registry.getSingleMetricAsString('identity_retention_deleted_total')).toMatch(/identity_retention_deleted_total\{table="sessions",service="test"\} [1-9]/);
  });
});
