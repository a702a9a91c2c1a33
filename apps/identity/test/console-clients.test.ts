/**
 * The admin console's OAuth clients against PostgreSQL: replicas racing at start-up create exactly one client
 * per environment (advisory lock), a deleted client is recreated and a changed one put back by the RPC.
 */
import type { Pool } from '@secsvc/shared';
import { consoleClientsService } from '../src/services';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { identityRpc } from './support/rpc';

let t: IdentityTestDb;
let pool: Pool;

beforeAll(async () => {
  t = await identityTestDb({ ISSUER: 'http://127.0.0.1:8080' });
  ({ pool } = t);
});
afterAll(() => closeIdentityTestDb(t));

describe('admin console clients', () => {
  it('are created once per environment even when replicas start at once', async () => {
    const results = await Promise.all([1, 2, 3, 4].map(() => consoleClientsService(t.ctx).ensure()));
    expect(results.flatMap((r) => r.created).sort()).toEqual(['live', 'test']);
    const { rows } = await pool.query(
      `SELECT k.environment, c.type, c.first_party, c.redirect_uris, c.scopes, c.secret_hash FROM console_clients k JOIN oauth_clients c ON c.id = k.client_id ORDER BY 1`,
    );
    expect(rows).toEqual(
      ['live', 'test'].map((environment) => ({
        environment,
        type: 'public',
        first_party: true,
        redirect_uris: ['http://127.0.0.1:8080/console/callback'],
        scopes: ['openid', 'profile', 'email', 'offline_access', 'read:users', 'write:users', 'read:policies', 'write:policies', 'read:logs', 'export:logs', 'read:api_keys', 'write:api_keys', 'read:clients', 'write:clients', 'read:sso', 'write:sso'],
        secret_hash: null,
      })),
    );
    expect((await pool.query('SELECT count(*)::int AS n FROM oauth_clients')).rows[0].n).toBe(2);
  });

  it('are answered by GetConsoleClients, which recreates a deleted client and puts back a changed one', async () => {
    const rpc = identityRpc(t.ctx);
    const before = await rpc.getConsoleClients({});
    expect(before).toMatchObject({ liveClientId: expect.stringMatching(/^cli_/), testClientId: expect.stringMatching(/^cli_/), redirectUri: 'http://127.0.0.1:8080/console/callback' });
    await pool.query(`DELETE FROM oauth_clients WHERE id = $1`, [before.testClientId]);
    await pool.query(`UPDATE oauth_clients SET redirect_uris = '{https://evil.example/cb}' WHERE id = $1`, [before.liveClientId]);
    const after = await rpc.getConsoleClients({});
    expect(after.liveClientId).toBe(before.liveClientId);
    expect(after.testClientId).not.toBe(before.testClientId);
    const { rows } = await pool.query(`SELECT redirect_uris FROM oauth_clients WHERE id = $1`, [before.liveClientId]);
    expect(rows[0].redirect_uris).toEqual(['http://127.0.0.1:8080/console/callback']);
  });
});
