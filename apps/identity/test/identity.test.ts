import { Metadata } from '@grpc/grpc-js';
import type { identity } from '@secsvc/proto';
import { AppError, createLogger, createPool, migrate, readMigrations, type CallContext, type Pool } from '@secsvc/shared';
import { testDatabase } from '@secsvc/dev/testing';
import type { IdentityConfig } from '../src/config';
import type { IdentityContext } from '../src/context';
import { generateKey } from '../src/domain/api-keys';
import { ensureBootstrapKey } from '../src/domain/bootstrap';
import { migrationsDir } from '../src/migrations';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { identityRpc } from './support/rpc';

const SECRET = 's'.repeat(40);
const logger = createLogger('test', 'silent');

let t: IdentityTestDb;
let pool: Pool;
let rpc: ReturnType<typeof makeRpc>;

function makeRpc(ctx: IdentityContext) {
  const r = identityRpc(ctx);
  return { create: r.createUser, get: r.getUser, update: r.updateUser, delete: r.deleteUser, list: r.listUsers, auth: r.authenticateApiKey };
}

function call(actor = 'key_test'): CallContext {
  const metadata = new Metadata();
  metadata.set('x-actor-id', actor);
  metadata.set('x-client-ip', '203.0.113.7');
  return { requestId: 'req_0123456789abcdef', metadata };
}

async function rejected(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const newUser = (email: string, environment = 'live'): identity.CreateUserRequest => ({
  environment,
  email,
  name: 'Test User',
  roles: ['role_member'],
  metadataJson: '',
});

beforeAll(async () => {
  t = await identityTestDb({ SERVER_SECRET: SECRET });
  ({ pool } = t);
  rpc = makeRpc(t.ctx);
});

afterAll(() => closeIdentityTestDb(t));

describe('users', () => {
  it('creates a user with defaults and writes a user.created event in the same transaction', async () => {
    const user = await rpc.create(newUser('create@example.com'), call('key_abc'));
    expect(user.id).toMatch(/^user_[0-9a-z]{26}$/);
    expect(user.emailVerified).toBe(false);
    expect(user.metadataJson).toBe('{}');
    expect(user.createdAt).toBe(user.updatedAt);
    const { rows } = await pool.query(`SELECT event_type, environment, payload FROM outbox WHERE payload->'target'->>'id' = $1`, [user.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].event_type).toBe('user.created');
    expect(rows[0].environment).toBe('live');
    expect(rows[0].payload.actor).toEqual({ id: 'key_abc', type: 'api_key' });
    expect(rows[0].payload.context).toEqual({ ip: '203.0.113.7' });
    expect(rows[0].payload.id).toMatch(/^log_/);
    // every event says how its actor authenticated (the gateway passes x-auth-method; none here)
    expect(JSON.parse(rows[0].payload.metadataJson)).toEqual({ authMethod: 'none', mfaUsed: false });
  });

  it('treats emails as unique case-insensitively, with nothing written on conflict', async () => {
    await rpc.create(newUser('Dup@Example.com'), call());
    const before = await pool.query('SELECT count(*)::int AS n FROM outbox');
    const err = await rejected(rpc.create(newUser('dup@example.COM'), call()));
    expect(err.code).toBe('conflict');
    expect(err.details).toEqual([{ field: 'email', message: 'already in use' }]);
    const after = await pool.query('SELECT count(*)::int AS n FROM outbox');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('keeps live and test environments apart', async () => {
    const live = await rpc.create(newUser('env@example.com', 'live'), call());
    const test = await rpc.create(newUser('env@example.com', 'test'), call());
    expect((await rejected(rpc.get({ environment: 'test', id: live.id }))).code).toBe('not_found');
    expect((await rpc.get({ environment: 'test', id: test.id })).id).toBe(test.id);
    const testList = await rpc.list({ environment: 'test', limit: 100, cursor: '' });
    expect(testList.users.every((u) => u.environment === 'test')).toBe(true);
    expect((await rejected(rpc.get({ environment: 'staging', id: live.id }))).details[0]!.field).toBe('environment');
  });

  it('returns metadata exactly as given and replaces it on update', async () => {
    const user = await rpc.create(newUser('meta@example.com'), call());
    const metadata = '{"z":1,"a":{"nested":[1,2.5,null,{"deep":true}]},"n":null,"s":"text","big":12345678901234}';
    const updated = await rpc.update({ environment: 'live', id: user.id, metadataJson: metadata }, call());
    expect(updated.metadataJson).toBe(metadata);
    expect(updated.name).toBe('Test User');
    expect(Date.parse(updated.updatedAt!)).toBeGreaterThanOrEqual(Date.parse(user.updatedAt!));
    const renamed = await rpc.update({ environment: 'live', id: user.id, name: 'Renamed' }, call());
    expect(renamed.metadataJson).toBe(metadata);
    expect((await rpc.get({ environment: 'live', id: user.id })).name).toBe('Renamed');
  });

  it('replaces roles on update, announcing the change to the gateways', async () => {
    const user = await rpc.create(newUser('roles@example.com'), call());
    const client = await pool.connect();
    const heard: string[] = [];
    try {
      await client.query('LISTEN secsvc_credential_changes');
      client.on('notification', (n) => heard.push(n.payload ?? ''));
      const updated = await rpc.update({ environment: 'live', id: user.id, roles: { values: ['role_admin', 'role_ops'] } }, call());
      expect(updated.roles).toEqual(['role_admin', 'role_ops']);
      expect(updated.name).toBe('Test User');
      expect((await rpc.get({ environment: 'live', id: user.id })).roles).toEqual(['role_admin', 'role_ops']);
      expect((await rpc.update({ environment: 'live', id: user.id, roles: { values: [] } }, call())).roles).toEqual([]);
      const err = await rejected(rpc.update({ environment: 'live', id: user.id, roles: { values: ['admin'] } }, call()));
      expect(err.details).toEqual([{ field: 'roles[0]', message: 'must look like role_<name> (a-z, 0-9, _ and -)' }]);
      const events = await pool.query(`SELECT payload FROM outbox WHERE event_type = 'user.updated' AND payload->'target'->>'id' = $1 ORDER BY seq`, [user.id]);
      expect(events.rows.map((r) => JSON.parse(r.payload.metadataJson).fields)).toEqual([['roles'], ['roles']]);
      for (let i = 0; i < 50 && !heard.includes(user.id); i++) await new Promise((r) => setTimeout(r, 20));
      expect(heard).toContain(user.id);
    } finally {
      await client.query('UNLISTEN *');
      client.release();
    }
  });

  it('updates and deletes only existing users', async () => {
    expect((await rejected(rpc.update({ environment: 'live', id: 'user_none', name: 'x' }, call()))).code).toBe('not_found');
    expect((await rejected(rpc.delete({ environment: 'live', id: 'user_none' }, call()))).code).toBe('not_found');
  });

  it('deletes the user and their data', async () => {
    const user = await rpc.create(newUser('gone@example.com'), call());
    await rpc.delete({ environment: 'live', id: user.id }, call());
    expect((await rejected(rpc.get({ environment: 'live', id: user.id }))).code).toBe('not_found');
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM users WHERE id = $1', [user.id]);
    expect(rows[0].n).toBe(0);
    const events = await pool.query(`SELECT event_type FROM outbox WHERE payload->'target'->>'id' = $1 ORDER BY seq`, [user.id]);
    expect(events.rows.map((r) => r.event_type)).toEqual(['user.created', 'user.deleted']);
    // the email is free again
    await rpc.create(newUser('gone@example.com'), call());
  });
});

describe('listing', () => {
  it('pages newest first without skipping or repeating while users are created and deleted', async () => {
    const environment = 'test';
    const created: string[] = [];
    for (let i = 0; i < 25; i++) created.push((await rpc.create(newUser(`page${i}@example.com`, environment), call())).id);
    const seen: string[] = [];
    let cursor = '';
    let page = 0;
    const deleted = new Set<string>();
    do {
      const res = await rpc.list({ environment, limit: 4, cursor });
      seen.push(...res.users.map((u) => u.id));
      expect(res.users.length).toBeLessThanOrEqual(4);
      if (res.hasMore) expect(res.nextCursor).toMatch(/^cur_/);
      else expect(res.nextCursor).toBe('');
      cursor = res.nextCursor;
      if (page === 1) {
        // churn between pages: a new user (sorts before the cursor, so not on later pages) and a deletion ahead
        await rpc.create(newUser(`late${page}@example.com`, environment), call());
        const victim = created[5]!;
        await rpc.delete({ environment, id: victim }, call());
        deleted.add(victim);
      }
      page++;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    const sorted = [...seen].sort().reverse();
    expect(seen).toEqual(sorted);
    const expected = created.filter((id) => !deleted.has(id));
    for (const id of expected) expect(seen).toContain(id);
  });

  it('searches by part of the email, case-insensitively, with LIKE characters taken literally', async () => {
    const environment = 'test';
    const ids: string[] = [];
    for (const email of ['Search.One@Example.com', 'search_two@example.com', 'other@example.com', 'searchthree@example.org']) {
      ids.push((await rpc.create(newUser(email, environment), call())).id);
    }
    const all: string[] = [];
    let cursor = '';
    do {
      const res = await rpc.list({ environment, limit: 1, cursor, email: 'SEARCH' });
      all.push(...res.users.map((u) => u.id));
      cursor = res.nextCursor;
    } while (cursor);
    expect(all).toEqual([ids[3], ids[1], ids[0]]);
    expect((await rpc.list({ environment, limit: 10, cursor: '', email: 'search_' })).users.map((u) => u.id)).toEqual([ids[1]]);
    expect((await rpc.list({ environment, limit: 10, cursor: '', email: '%' })).users).toEqual([]);
    expect((await rpc.list({ environment: 'live', limit: 10, cursor: '', email: 'searchthree' })).users).toEqual([]);
  });

  it('refuses limits outside 1..100 and foreign or tampered cursors', async () => {
    for (const limit of [0, 101, -1]) {
      expect((await rejected(rpc.list({ environment: 'live', limit, cursor: '' }))).details[0]!.field).toBe('limit');
    }
    const first = await rpc.list({ environment: 'test', limit: 1, cursor: '' });
    expect(first.hasMore).toBe(true);
    const tampered = first.nextCursor.slice(0, -2) + (first.nextCursor.endsWith('AA') ? 'BB' : 'AA');
    for (const cursor of [tampered, 'cur_garbage', 'garbage']) {
      const err = await rejected(rpc.list({ environment: 'test', limit: 1, cursor }));
      expect(err.code).toBe('invalid_request');
      expect(err.details[0]!.field).toBe('cursor');
    }
    // a cursor of the test environment is not valid in live
    expect((await rejected(rpc.list({ environment: 'live', limit: 1, cursor: first.nextCursor }))).code).toBe('invalid_request');
  });
});

describe('API key bootstrap and authentication', () => {
  let bootstrapKey = '';
  it('creates exactly one bootstrap key even when replicas race, and authenticates it', async () => {
    const lines: string[] = [];
    const results = await Promise.all(
      [0, 1, 2].map(() => ensureBootstrapKey(pool, SECRET, undefined, logger, (l) => lines.push(l))),
    );
    expect(results.filter((r) => r === 'created')).toHaveLength(1);
    expect(lines).toHaveLength(1);
    const key = lines[0]!.split(' ')[1]!;
    expect(key).toMatch(/^svc_sk_/);
    bootstrapKey = key;
    const principal = await rpc.auth({ key }, call());
    expect(principal).toMatchObject({ keyType: 'secret', environment: 'live', plan: 'enterprise' });
    expect(principal.keyId).toMatch(/^key_/);
    const { rows } = await pool.query('SELECT key_hash, prefix, last4 FROM api_keys');
    expect(rows).toHaveLength(1);
    expect(rows[0].prefix).toBe('svc_sk_');
    expect(rows[0].last4).toBe(key.slice(-4));
    expect(Buffer.from(rows[0].key_hash).toString('utf8')).not.toContain(key.slice(7, 20));
    expect(await ensureBootstrapKey(pool, SECRET, undefined, logger, (l) => lines.push(l))).toBe('exists');
  });

  it('refuses unknown, malformed, expired and revoked keys', async () => {
    expect((await rejected(rpc.auth({ key: generateKey('secret') }, call()))).code).toBe('unauthorized');
    expect((await rejected(rpc.auth({ key: 'nope' }, call()))).code).toBe('unauthorized');
    await pool.query(`UPDATE api_keys SET expires_at = now() - interval '1 second'`);
    expect((await rejected(rpc.auth({ key: bootstrapKey }, call()))).message).toBe('API key has expired');
    await pool.query('UPDATE api_keys SET expires_at = NULL, revoked_at = now()');
    expect((await rejected(rpc.auth({ key: bootstrapKey }, call()))).message).toBe('API key has been revoked');
  });

  it('announces every API key change on the notification channel', async () => {
    const listener = await pool.connect();
    try {
      const seen: string[] = [];
      listener.on('notification', (n) => seen.push(`${n.channel}:${n.payload}`));
      await listener.query('LISTEN secsvc_credential_changes');
      const { rows } = await pool.query<{ id: string }>('SELECT id FROM api_keys LIMIT 1');
      await pool.query(`UPDATE api_keys SET plan = 'pro' WHERE id = $1`, [rows[0]!.id]);
      for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(seen).toEqual([`secsvc_credential_changes:${rows[0]!.id}`]);
    } finally {
      await listener.query('UNLISTEN *');
      listener.release();
    }
  });

  it('uses BOOTSTRAP_API_KEY when given and prints nothing', async () => {
    const fresh = await testDatabase();
    const p = createPool(fresh.url, 2, logger, 'identity');
    try {
      await migrate(p, 'identity', await readMigrations(migrationsDir), logger);
      const configured = 'svc_sk_' + 'k'.repeat(40);
      const lines: string[] = [];
      expect(await ensureBootstrapKey(p, SECRET, configured, logger, (l) => lines.push(l))).toBe('created');
      expect(lines).toEqual([]);
      const auth = identityRpc({ pool: p, logger, config: { SERVER_SECRET: SECRET } as IdentityConfig }).authenticateApiKey;
      expect((await auth({ key: configured }, call())).keyType).toBe('secret');
    } finally {
      await p.end();
      await fresh.drop();
    }
  });
});
