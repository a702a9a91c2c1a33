import { AppError } from '@secsvc/shared';
import { generateKey } from '../domain/api-keys';
import { ApiKeysService } from './api-keys';
import { FakeApiKeys, FakeDatabase, fakeAuthFailures, fakeLogger, keyCall } from './testing/fakes';

const SECRET = 'k'.repeat(40);

function setup() {
  const db = new FakeDatabase();
  const apiKeys = new FakeApiKeys();
  const authEvents = fakeAuthFailures();
  const logger = fakeLogger();
  return { db, apiKeys, authEvents, logger, service: new ApiKeysService({ db, apiKeys, outbox: db, serverSecret: SECRET, authEvents, logger }) };
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

const newKey = (over = {}) => ({ name: 'ci', type: 'secret', plan: '', ...over });

describe('ApiKeysService: managing keys', () => {
  it('creates a key, shows the secret once, stores only its hash, and records api_key.created without the secret', async () => {
    const { db, apiKeys, service } = setup();
    const { row, key } = await service.create('live', newKey({ name: '  ci  ' }), keyCall('key_admin'));
    expect(key).toMatch(/^svc_sk_/);
    expect(row).toMatchObject({ environment: 'live', type: 'secret', name: 'ci', plan: 'free', prefix: 'svc_sk_', last4: key.slice(-4), rate_limit: null });
    expect(JSON.stringify([...apiKeys.rows.values()])).not.toContain(key.slice(7, 30));
    expect(db.events).toHaveLength(1);
    expect(db.events[0]).toMatchObject({
      type: 'api_key.created',
      environment: 'live',
      actor: { id: 'key_admin', type: 'api_key' },
      target: { id: row.id, type: 'api_key' },
      result: 'success',
      metadata: { keyType: 'secret', keyEnvironment: 'live', plan: 'free', prefix: 'svc_sk_', last4: key.slice(-4) },
    });
    expect(JSON.stringify(db.events)).not.toContain(key.slice(7, 30));
  });

  it('refuses invalid fields all at once, and a test caller creating anything but a test key', async () => {
    const { db, service } = setup();
    const err = await refusal(service.create('live', newKey({ name: '', type: 'admin', plan: 'gold', rateLimit: 0, expiresAt: '2001-01-01T00:00:00Z' }), keyCall()));
    expect(err.details.map((d) => d.field)).toEqual(['name', 'type', 'plan', 'rateLimit', 'expiresAt']);
    expect((await refusal(service.create('live', newKey({ plan: 'pro', rateLimit: 10 }), keyCall()))).details[0]!.message).toBe('a custom limit needs the enterprise plan');
    expect((await refusal(service.create('test', newKey(), keyCall()))).code).toBe('forbidden');
    expect(db.transactions).toBe(0);
  });

  it('records a test key made by a live caller in live (the actor\'s environment), and keeps the key in test', async () => {
    const { db, service } = setup();
    const { row } = await service.create('live', newKey({ type: 'test' }), keyCall());
    expect(row.environment).toBe('test');
    expect(db.events[0]).toMatchObject({ environment: 'live', metadata: { keyEnvironment: 'test' } });
  });

  it('lets test callers see test keys only', async () => {
    const { service } = setup();
    const live = (await service.create('live', newKey(), keyCall())).row;
    const test = (await service.create('live', newKey({ type: 'test' }), keyCall())).row;
    expect((await refusal(service.get('test', live.id))).code).toBe('not_found');
    expect((await service.get('test', test.id)).id).toBe(test.id);
    expect((await service.list('test', { limit: 10, cursor: '' })).page.map((r) => r.id)).toEqual([test.id]);
    expect((await service.list('live', { limit: 10, cursor: '' })).page.map((r) => r.id)).toEqual([test.id, live.id]);
  });

  it('revokes once: api_key.revoked the first time only; an unknown key is not found', async () => {
    const { db, service } = setup();
    const { row } = await service.create('live', newKey(), keyCall());
    await service.revoke('live', row.id, keyCall());
    await service.revoke('live', row.id, keyCall());
    expect(db.eventsOf('api_key.revoked')).toEqual([expect.objectContaining({ target: { id: row.id, type: 'api_key' } })]);
    expect((await service.get('live', row.id)).revoked_at).toBeInstanceOf(Date);
    expect((await refusal(service.revoke('live', 'key_nope', keyCall()))).code).toBe('not_found');
  });

  it('rotates: a new secret, the old one valid during the grace period only, api_key.rotated with the grace', async () => {
    const { db, service } = setup();
    const created = await service.create('live', newKey(), keyCall());
    const rotated = await service.rotate('live', created.row.id, 3600, keyCall());
    expect(rotated.key).not.toBe(created.key);
    expect(rotated.row.last4).toBe(rotated.key.slice(-4));
    expect(db.eventsOf('api_key.rotated')[0]!.metadata).toMatchObject({ gracePeriodSeconds: 3600, last4: rotated.key.slice(-4) });
    const viaOld = await service.authenticate(created.key, keyCall());
    expect(viaOld.row.id).toBe(created.row.id);
    expect(viaOld.expiresAt!.getTime()).toBe(rotated.row.previous_expires_at!.getTime());
    expect((await service.authenticate(rotated.key, keyCall())).expiresAt).toBeUndefined();
    // without a grace period the previous secret ends at once
    const again = await service.rotate('live', created.row.id, 0, keyCall());
    expect((await refusal(service.authenticate(rotated.key, keyCall()))).code).toBe('unauthorized');
    expect((await service.authenticate(again.key, keyCall())).row.id).toBe(created.row.id);
  });

  it('refuses a grace period outside 0s..7d and rotating a revoked key, without an event', async () => {
    const { db, service } = setup();
    const { row } = await service.create('live', newKey(), keyCall());
    for (const grace of [-1, 1.5, 7 * 24 * 3600 + 1]) expect((await refusal(service.rotate('live', row.id, grace, keyCall()))).details[0]!.field).toBe('gracePeriod');
    await service.revoke('live', row.id, keyCall());
    expect((await refusal(service.rotate('live', row.id, 0, keyCall()))).code).toBe('conflict');
    expect((await refusal(service.rotate('live', 'key_nope', 0, keyCall()))).code).toBe('not_found');
    expect(db.eventsOf('api_key.rotated')).toEqual([]);
  });
});

describe('ApiKeysService: authenticating a presented key', () => {
  it('answers the key and records its use', async () => {
    const { apiKeys, service } = setup();
    const { row, key } = await service.create('live', newKey({ plan: 'enterprise', rateLimit: 500 }), keyCall());
    const principal = await service.authenticate(key, keyCall());
    expect(principal.row).toMatchObject({ id: row.id, plan: 'enterprise', rate_limit: 500 });
    expect(apiKeys.touched).toEqual([row.id]);
  });

  it('refuses malformed, unknown, revoked and expired keys, recording why with the prefix only', async () => {
    const { apiKeys, authEvents, service } = setup();
    const revoked = await service.create('live', newKey(), keyCall());
    await service.revoke('live', revoked.row.id, keyCall());
    const expired = await service.create('live', newKey(), keyCall());
    apiKeys.rows.get(expired.row.id)!.expires_at = new Date(Date.now() - 1000);
    const messages: string[] = [];
    for (const key of ['svc_sk_short', generateKey('public'), revoked.key, expired.key]) {
      const err = await refusal(service.authenticate(key, keyCall()));
      expect(err.code).toBe('unauthorized');
      messages.push(err.message);
    }
    expect(messages).toEqual(['Invalid API key', 'Invalid API key', 'API key has been revoked', 'API key has expired']);
    expect(authEvents.refused).toEqual([
      { credential: 'api_key', prefix: 'svc_sk_', reason: 'malformed' },
      { credential: 'api_key', prefix: 'svc_pk_', reason: 'unknown' },
      { credential: 'api_key', prefix: 'svc_sk_', reason: 'revoked' },
      { credential: 'api_key', prefix: 'svc_sk_', reason: 'expired' },
    ]);
    expect(apiKeys.touched).toEqual([]);
  });

  it('answers even when recording the use fails (a warning, not an error)', async () => {
    const { apiKeys, logger, service } = setup();
    const { key } = await service.create('live', newKey(), keyCall());
    apiKeys.touch = () => Promise.reject(new Error('db down'));
    expect((await service.authenticate(key, keyCall())).row.type).toBe('secret');
    await new Promise((r) => setImmediate(r));
    expect(logger.warnings).toEqual(['could not record API key use']);
  });
});
