import type { Pool } from '@secsvc/shared';
import type { TestDatabase } from '@secsvc/dev/testing';
import { Metadata } from '@grpc/grpc-js';
import { CredentialChangeFeed } from '../src/domain/credential-change-feed';
import { closeIdentityTestDb, identityTestDb, logger, type IdentityTestDb } from './support/db';
import { identityRpc } from './support/rpc';

let t: IdentityTestDb;
let db: TestDatabase;
let pool: Pool;

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
  expect(check()).toBe(true);
}

beforeAll(async () => {
  t = await identityTestDb();
  ({ db, pool } = t);
  await pool.query(
    `INSERT INTO api_keys (id, environment, type, name, key_hash, prefix, last4) VALUES ('key_feed', 'live', 'secret', 'f', '\\x01', 'svc_sk_', 'abcd')`,
  );
});

afterAll(() => closeIdentityTestDb(t));

describe('CredentialChangeFeed', () => {
  it('relays key changes, resets subscribers when its connection dies, and comes back by itself', async () => {
    const feed = new CredentialChangeFeed(db.url, logger);
    await feed.start();
    const changes: string[] = [];
    let resets = 0;
    const liveAtReset: boolean[] = [];
    const subscribe = () =>
      feed.subscribe({
        onChange: (id) => changes.push(id),
        onReset: () => {
          resets++;
          liveAtReset.push(feed.live);
        },
      });
    subscribe();
    await pool.query(`UPDATE api_keys SET revoked_at = now() WHERE id = 'key_feed'`);
    await until(() => changes.length === 1);
    expect(changes).toEqual(['key_feed']);

    const killed = await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN secsvc_credential_changes'`);
    expect(killed.rowCount).toBe(1);
    await until(() => resets === 1);
    expect(liveAtReset).toEqual([false]);
    await feed.whenLive();
    subscribe();
    await pool.query(`UPDATE api_keys SET plan = 'pro' WHERE id = 'key_feed'`);
    await until(() => changes.length === 2);
    expect(changes).toEqual(['key_feed', 'key_feed']);
    await feed.stop();
    expect(resets).toBe(2); // stop() resets the remaining subscriber
  });
});

describe('WatchCredentialChanges', () => {
  it('first replays the sessions revoked or deleted within the token lifetime, then says ready', async () => {
    const feed = new CredentialChangeFeed(db.url, logger);
    await feed.start();
    try {
      await pool.query(`INSERT INTO users (id, environment, email, name) VALUES ('user_watch', 'live', 'watch@example.com', 'W')`);
      for (const id of ['ses_revoked', 'ses_deleted', 'ses_active']) {
        await pool.query(`INSERT INTO sessions (id, environment, user_id, token_hash, expires_at) VALUES ($1, 'live', 'user_watch', $2, now() + interval '1 hour')`, [
          id,
          Buffer.from(id),
        ]);
      }
      await pool.query(`UPDATE sessions SET revoked_at = now() WHERE id = 'ses_revoked'`);
      await pool.query(`DELETE FROM users WHERE id = 'user_watch'`); // the user's sessions go with it
      const written: { kind: string; id: string }[] = [];
      let closed = false;
      const ctx = { ...t.ctx, config: { ...t.ctx.config, ACCESS_TOKEN_TTL_SECONDS: 900 } };
      identityRpc(ctx, { feed }).watchCredentialChanges({}, { requestId: 'req_watchtest0000000000', metadata: new Metadata() }, {
        write: (m) => void written.push(m),
        end: () => void (closed = true),
        onClose: () => undefined,
      });
      await until(() => written.some((m) => m.kind === 'ready'));
      // (live notifications of the same changes may also arrive, before or after "ready")
      const ready = written.findIndex((m) => m.kind === 'ready');
      const replayed = written.slice(0, ready).map((m) => m.id);
      expect(replayed).toEqual(expect.arrayContaining(['ses_revoked', 'ses_deleted', 'ses_active']));
      expect(closed).toBe(false);
    } finally {
      await feed.stop();
    }
  });

  it('announces a session step-up as auth:<id> (not a revocation), a revocation as the id, and nothing for a use of a key', async () => {
    const feed = new CredentialChangeFeed(db.url, logger);
    await feed.start();
    const changes: string[] = [];
    try {
      feed.subscribe({ onChange: (id) => changes.push(id), onReset: () => undefined });
      await pool.query(`INSERT INTO users (id, environment, email, name) VALUES ('user_stepup', 'live', 'stepup@example.com', 'S')`);
      await pool.query(`INSERT INTO sessions (id, environment, user_id, token_hash, expires_at) VALUES ('ses_stepup', 'live', 'user_stepup', '\\x0203', now() + interval '1 hour')`);
      await pool.query(`UPDATE api_keys SET last_used_at = now() WHERE id = 'key_feed'`);
      await pool.query(`UPDATE sessions SET mfa_at = now(), amr = '{pwd,otp,mfa}', acr = 'urn:secsvc:acr:mfa' WHERE id = 'ses_stepup'`);
      await until(() => changes.length === 1);
      await pool.query(`UPDATE sessions SET revoked_at = now() WHERE id = 'ses_stepup'`);
      await until(() => changes.length === 2);
      expect(changes).toEqual(['auth:ses_stepup', 'ses_stepup']);
    } finally {
      await feed.stop();
    }
  });
});
