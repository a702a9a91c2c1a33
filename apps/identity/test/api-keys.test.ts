import { Metadata } from '@grpc/grpc-js';
import { AppError, type CallContext, type Pool } from '@secsvc/shared';
import type { IdentityContext } from '../src/context';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { generateKey, looksLikeKey } from '../src/domain/api-keys';
import { identityRpc } from './support/rpc';
import type { IdentityRpc } from '../src/rpc';

let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;
let rpc: IdentityRpc;

const call = (): CallContext => {
  const metadata = new Metadata();
  metadata.set('x-actor-id', 'key_admin');
  return { requestId: 'req_apikeytests00000000', metadata };
};

async function rejected(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const create = (over: Partial<Parameters<IdentityRpc['createApiKey']>[0]> = {}, environment = 'live') =>
  rpc.createApiKey({ environment, name: 'k', type: 'secret', plan: '', ...over }, call());
const auth = (key: string) => rpc.authenticateApiKey({ key }, call());

beforeAll(async () => {
  t = await identityTestDb({ SERVER_SECRET: 'k'.repeat(40) });
  ({ pool, ctx } = t);
  rpc = identityRpc(ctx);
});

afterAll(() => closeIdentityTestDb(t));

describe('API keys', () => {
  it.each([
    ['secret', 'svc_sk_', 'live'],
    ['public', 'svc_pk_', 'live'],
    ['test', 'svc_test_', 'test'],
  ])('creates %s keys with their prefix, the free plan by default and a masked form', async (type, prefix, environment) => {
    const { apiKey, key } = await create({ type, name: `my ${type} key` });
    expect(key.startsWith(prefix)).toBe(true);
    expect(looksLikeKey(key)).toBe(true);
    expect(apiKey).toMatchObject({ type, environment, plan: 'free', prefix, last4: key.slice(-4), name: `my ${type} key` });
    expect(apiKey!.id).toMatch(/^key_/);
    expect(JSON.stringify(apiKey)).not.toContain(key.slice(prefix.length, -4));
    const principal = await auth(key);
    expect(principal).toMatchObject({ keyId: apiKey!.id, keyType: type, environment, plan: 'free' });
  });

  it('refuses a key with a wrong checksum without looking it up', async () => {
    const key = generateKey('secret');
    const typo = key.slice(0, 10) + (key[10] === 'A' ? 'B' : 'A') + key.slice(11);
    expect(looksLikeKey(typo)).toBe(false);
    expect((await rejected(auth(typo))).code).toBe('unauthorized');
  });

  it('records refused keys as auth.failed with the prefix only', async () => {
    const key = generateKey('public');
    await rejected(auth(key));
    await rejected(auth('svc_sk_malformed'));
    const { rows } = await pool.query(`SELECT payload FROM outbox WHERE event_type = 'auth.failed' ORDER BY seq`);
    const metas = rows.map((r) => JSON.parse(r.payload.metadataJson));
    expect(metas).toEqual(expect.arrayContaining([
      { authMethod: 'none', mfaUsed: false, credential: 'api_key', prefix: 'svc_pk_', reason: 'unknown' },
      { authMethod: 'none', mfaUsed: false, credential: 'api_key', prefix: 'svc_sk_', reason: 'malformed' },
    ]));
    expect(JSON.stringify(rows)).not.toContain(key.slice(7, 30));
    expect(rows[0].payload.actor).toEqual({ type: 'anonymous' });
  });

  it('validates every field', async () => {
    const err = await rejected(create({ name: ' ', type: 'root', plan: 'gold', rateLimit: 0, expiresAt: '2001-01-01T00:00:00.000Z' }));
    expect(err.details.map((d) => d.field)).toEqual(['name', 'type', 'plan', 'rateLimit', 'expiresAt']);
    expect((await rejected(create({ plan: 'pro', rateLimit: 5000 }))).details).toEqual([
      { field: 'rateLimit', message: 'a custom limit needs the enterprise plan' },
    ]);
    const enterprise = await create({ plan: 'enterprise', rateLimit: 5000 });
    expect(enterprise.apiKey!.rateLimit).toBe(5000);
  });

  it('lets a test caller create and see only test keys', async () => {
    expect((await rejected(create({ type: 'secret' }, 'test'))).code).toBe('forbidden');
    const testKey = await create({ type: 'test' }, 'test');
    const liveKey = await create({ type: 'secret' });
    const seenByTest = await rpc.listApiKeys({ environment: 'test', limit: 100, cursor: '' });
    expect(seenByTest.apiKeys.every((k) => k.environment === 'test')).toBe(true);
    expect(seenByTest.apiKeys.map((k) => k.id)).toContain(testKey.apiKey!.id);
    expect((await rejected(rpc.getApiKey({ environment: 'test', id: liveKey.apiKey!.id }))).code).toBe('not_found');
    const seenByLive = await rpc.listApiKeys({ environment: 'live', limit: 100, cursor: '' });
    expect(seenByLive.apiKeys.map((k) => k.id)).toEqual(expect.arrayContaining([testKey.apiKey!.id, liveKey.apiKey!.id]));
  });

  it('pages through keys with cursors', async () => {
    const first = await rpc.listApiKeys({ environment: 'live', limit: 2, cursor: '' });
    expect(first.hasMore).toBe(true);
    const second = await rpc.listApiKeys({ environment: 'live', limit: 2, cursor: first.nextCursor });
    expect(second.apiKeys[0]!.id < first.apiKeys[1]!.id).toBe(true);
  });

  it('revokes at once, once (one event), and idempotently', async () => {
    const { apiKey, key } = await create();
    await rpc.revokeApiKey({ environment: 'live', id: apiKey!.id }, call());
    await rpc.revokeApiKey({ environment: 'live', id: apiKey!.id }, call());
    expect((await rejected(auth(key))).message).toBe('API key has been revoked');
    expect((await rpc.getApiKey({ environment: 'live', id: apiKey!.id })).revokedAt).toBeDefined();
    const { rows } = await pool.query(`SELECT event_type FROM outbox WHERE payload->'target'->>'id' = $1 ORDER BY seq`, [apiKey!.id]);
    expect(rows.map((r) => r.event_type)).toEqual(['api_key.created', 'api_key.revoked']);
    expect((await rejected(rpc.revokeApiKey({ environment: 'live', id: 'key_nope' }, call()))).code).toBe('not_found');
    expect((await rejected(rpc.rotateApiKey({ environment: 'live', id: apiKey!.id, gracePeriodSeconds: 0 }, call()))).code).toBe('conflict');
  });

  it('rotates: the new secret works now, the previous one until the grace period ends', async () => {
    const { apiKey, key: old } = await create({ type: 'public' });
    const rotated = await rpc.rotateApiKey({ environment: 'live', id: apiKey!.id, gracePeriodSeconds: 3600 }, call());
    expect(rotated.key).not.toBe(old);
    expect(rotated.key.startsWith('svc_pk_')).toBe(true);
    expect(rotated.apiKey!.id).toBe(apiKey!.id);
    expect(rotated.apiKey!.last4).toBe(rotated.key.slice(-4));
    expect((await auth(rotated.key)).keyId).toBe(apiKey!.id);
    const viaOld = await auth(old);
    expect(viaOld.keyId).toBe(apiKey!.id);
    expect(Date.parse(viaOld.expiresAt!)).toBe(Date.parse(rotated.apiKey!.previousExpiresAt!));
    // the grace period ends
    await pool.query(`UPDATE api_keys SET previous_expires_at = now() - interval '1 second' WHERE id = $1`, [apiKey!.id]);
    expect((await rejected(auth(old))).code).toBe('unauthorized');
    expect((await auth(rotated.key)).keyId).toBe(apiKey!.id);
  });

  it('rotates without grace: the previous secret stops at once', async () => {
    const { apiKey, key: old } = await create();
    const rotated = await rpc.rotateApiKey({ environment: 'live', id: apiKey!.id, gracePeriodSeconds: 0 }, call());
    expect((await rejected(auth(old))).code).toBe('unauthorized');
    expect((await auth(rotated.key)).keyId).toBe(apiKey!.id);
    expect(rotated.apiKey!.previousExpiresAt).toBeUndefined();
    for (const grace of [-1, 8 * 86_400]) {
      expect((await rejected(rpc.rotateApiKey({ environment: 'live', id: apiKey!.id, gracePeriodSeconds: grace }, call()))).details[0]!.field).toBe(
        'gracePeriod',
      );
    }
  });

  it('records the last use without announcing it as a change', async () => {
    const { apiKey, key } = await create();
    const listener = await pool.connect();
    const seen: string[] = [];
    try {
      listener.on('notification', (n) => seen.push(n.payload ?? ''));
      await listener.query('LISTEN secsvc_credential_changes');
      await auth(key);
      let lastUsedAt: string | undefined;
      for (let i = 0; i < 50 && !lastUsedAt; i++) {
        lastUsedAt = (await rpc.getApiKey({ environment: 'live', id: apiKey!.id })).lastUsedAt;
        if (!lastUsedAt) await new Promise((r) => setTimeout(r, 20));
      }
      expect(lastUsedAt).toBeDefined();
      await pool.query(`UPDATE api_keys SET plan = 'pro' WHERE id = $1`, [apiKey!.id]);
      for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(seen).toEqual([apiKey!.id]); // only the plan change, not the use
    } finally {
      await listener.query('UNLISTEN *');
      listener.release();
    }
  });

  it('never writes a secret into the outbox', async () => {
    const { key } = await create({ name: 'secret-scan' });
    const rotated = await rpc.rotateApiKey({ environment: 'live', id: (await create()).apiKey!.id, gracePeriodSeconds: 60 }, call());
    const { rows } = await pool.query(`SELECT payload::text AS p FROM outbox`);
    const all = rows.map((r) => r.p).join('\n');
    for (const secret of [key, rotated.key]) expect(all).not.toContain(secret.slice(10, 40));
  });
});
