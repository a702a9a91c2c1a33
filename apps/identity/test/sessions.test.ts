import { Metadata } from '@grpc/grpc-js';
import { AppError, type CallContext, type Pool } from '@secsvc/shared';
import type { IdentityContext } from '../src/context';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { generateSessionToken, looksLikeSessionToken } from '../src/domain/sessions';
import { identityRpc } from './support/rpc';
import type { IdentityRpc } from '../src/rpc';

let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;
let rpc: IdentityRpc;

const call = (actor: { id: string; type: string; authMethod?: string } = { id: 'key_admin', type: 'api_key' }): CallContext => {
  const metadata = new Metadata();
  metadata.set('x-actor-id', actor.id);
  metadata.set('x-actor-type', actor.type);
  metadata.set('x-auth-method', actor.authMethod ?? actor.type);
  return { requestId: 'req_sessiontests0000000', metadata };
};

async function rejected(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

let n = 0;
async function user(environment = 'live') {
  return rpc.createUser({ environment, email: `s${n++}@example.com`, name: 'S', roles: [], metadataJson: '' }, call());
}
const open = (userId: string, environment = 'live', expiresInSeconds = 3600, metadataJson = '') =>
  rpc.createSession({ environment, userId, expiresInSeconds, metadataJson }, call());
const verify = (token: string, environment = 'live') => rpc.verifySession({ environment, token });

beforeAll(async () => {
  t = await identityTestDb({ SERVER_SECRET: 's'.repeat(40) });
  ({ pool, ctx } = t);
  rpc = identityRpc(ctx);
});

afterAll(() => closeIdentityTestDb(t));

describe('sessions', () => {
  it('creates a session whose token is shown once and stored only as a hash', async () => {
    const u = await user();
    const { session, token } = await open(u.id, 'live', 3600, '{"device":"laptop","ip":"203.0.113.9"}');
    expect(looksLikeSessionToken(token)).toBe(true);
    expect(session!.id).toMatch(/^ses_/);
    expect(JSON.parse(session!.metadataJson)).toEqual({ device: 'laptop', ip: '203.0.113.9' });
    const expiresIn = Date.parse(session!.expiresAt!) - Date.parse(session!.createdAt!);
    expect(expiresIn).toBe(3600_000);
    const { rows } = await pool.query('SELECT token_hash FROM sessions WHERE id = $1', [session!.id]);
    expect(Buffer.from(rows[0].token_hash).toString('latin1')).not.toContain(token.slice(4, 20));
    const events = await pool.query(`SELECT payload::text AS p FROM outbox WHERE payload->'target'->>'id' = $1`, [session!.id]);
    expect(events.rows).toHaveLength(1);
    expect(events.rows[0].p).not.toContain(token.slice(4, 30));
  });

  it('verifies a valid token with the user and the session', async () => {
    const u = await user();
    const { session, token } = await open(u.id);
    const res = await verify(token);
    expect(res.valid).toBe(true);
    expect(res.user!.id).toBe(u.id);
    expect(res.session!.id).toBe(session!.id);
  });

  it('answers valid=false (never an error) for unknown, malformed, foreign-environment, expired and revoked tokens', async () => {
    const u = await user();
    const { session, token } = await open(u.id);
    expect((await verify(generateSessionToken())).valid).toBe(false);
    expect((await verify('garbage')).valid).toBe(false);
    expect((await verify(token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A'))).valid).toBe(false);
    expect((await verify(token, 'test')).valid).toBe(false);
    await pool.query(`UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [session!.id]);
    expect((await verify(token)).valid).toBe(false);
    const second = await open(u.id);
    expect((await rpc.revokeSession({ environment: 'live', token: second.token }, call())).revoked).toBe(true);
    expect((await verify(second.token)).valid).toBe(false);
    expect((await rpc.revokeSession({ environment: 'live', token: second.token }, call())).revoked).toBe(false);
    const events = await pool.query(`SELECT event_type, payload FROM outbox WHERE payload->'target'->>'id' = $1 ORDER BY seq`, [second.session!.id]);
    // The application logs the user in and out with its key: the user is the actor, the key in metadata.
    expect(events.rows.map((r) => r.event_type)).toEqual(['user.login', 'user.logout']);
    for (const row of events.rows) {
      expect(row.payload.actor).toEqual({ id: u.id, email: u.email, type: 'user' });
      expect(JSON.parse(row.payload.metadataJson)).toMatchObject({ authMethod: 'api_key', apiKeyId: 'key_admin', mfaUsed: false, userId: u.id });
    }
  });

  it('records who ended a session: its holder (user.logout) or another user (session.revoked, that user the actor)', async () => {
    const [owner, admin] = [await user(), await user()];
    const own = await open(owner.id);
    expect((await rpc.revokeSession({ environment: 'live', token: own.token }, call({ id: owner.id, type: 'user', authMethod: 'session' }))).revoked).toBe(true);
    const other = await open(owner.id);
    expect((await rpc.revokeSession({ environment: 'live', token: other.token }, call({ id: admin.id, type: 'user', authMethod: 'session' }))).revoked).toBe(true);
    const kinds = await pool.query(`SELECT payload->'target'->>'id' AS session, event_type, payload FROM outbox WHERE payload->'target'->>'id' = ANY($1) AND event_type <> 'user.login' ORDER BY seq`, [
      [own.session!.id, other.session!.id],
    ]);
    expect(kinds.rows.map((r) => [r.session, r.event_type, r.payload.actor])).toEqual([
      [own.session!.id, 'user.logout', { id: owner.id, email: owner.email, type: 'user' }],
      [other.session!.id, 'session.revoked', { id: admin.id, email: admin.email, type: 'user' }],
    ]);
  });

  it('validates expiresIn and the user', async () => {
    const u = await user();
    for (const seconds of [59, 30 * 86_400 + 1, 0]) {
      expect((await rejected(open(u.id, 'live', seconds))).details[0]!.field).toBe('expiresIn');
    }
    expect((await open(u.id, 'live', 30 * 86_400)).session).toBeDefined();
    const missing = await rejected(open('user_missing'));
    expect(missing.code).toBe('not_found');
    expect(missing.details[0]!.field).toBe('userId');
    const testUser = await user('test');
    expect((await rejected(open(testUser.id, 'live'))).code).toBe('not_found');
  });

  it("lists a user's active sessions and revokes them all", async () => {
    const u = await user();
    const a = await open(u.id);
    const b = await open(u.id);
    await rpc.revokeSession({ environment: 'live', token: a.token }, call());
    const listed = await rpc.listUserSessions({ environment: 'live', userId: u.id });
    expect(listed.sessions.map((s) => s.id)).toEqual([b.session!.id]);
    const c = await open(u.id);
    expect((await rpc.revokeUserSessions({ environment: 'live', userId: u.id }, call())).revoked).toBe(2);
    expect((await verify(b.token)).valid).toBe(false);
    expect((await verify(c.token)).valid).toBe(false);
    expect((await rpc.listUserSessions({ environment: 'live', userId: u.id })).sessions).toEqual([]);
    expect((await rejected(rpc.listUserSessions({ environment: 'live', userId: 'user_missing' }))).code).toBe('not_found');
  });

  it("deleting a user ends their sessions", async () => {
    const u = await user();
    const { token } = await open(u.id);
    await rpc.deleteUser({ environment: 'live', id: u.id }, call());
    expect((await verify(token)).valid).toBe(false);
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM sessions WHERE user_id = $1', [u.id]);
    expect(rows[0].n).toBe(0);
  });
});
