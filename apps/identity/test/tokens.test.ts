import { Metadata } from '@grpc/grpc-js';
import { AppError, Metrics, parseMetricsText, type Pool } from '@secsvc/shared';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import type { IdentityConfig } from '../src/config';
import type { IdentityContext } from '../src/context';
import { masterKey, observeSigningKeyAge, SigningKeyStore } from '../src/domain/signing-keys';
import { closeIdentityTestDb, identityTestDb, type IdentityTestDb } from './support/db';
import { identityRpc } from './support/rpc';

const config = { SERVER_SECRET: 't'.repeat(40), ISSUER: 'https://auth.example.com', JWT_AUDIENCE: 'secsvc', ACCESS_TOKEN_TTL_SECONDS: 900 } as IdentityConfig;
let t: IdentityTestDb;
let pool: Pool;
let ctx: IdentityContext;

beforeAll(async () => {
  t = await identityTestDb(config);
  ({ pool } = t);
  ctx = t.ctx;
});

afterAll(() => closeIdentityTestDb(t));

async function sessionFor(expiresInSeconds = 3600) {
  const call = { requestId: 'req_tokentests000000000', metadata: new Metadata() };
  const u = await identityRpc(ctx).createUser({ environment: 'test', email: `t${Math.random()}@example.com`, name: 'T', roles: [], metadataJson: '' }, call);
  return { user: u, ...(await identityRpc(ctx).createSession({ environment: 'test', userId: u.id, expiresInSeconds, metadataJson: '' }, call)) };
}

describe('signing keys', () => {
  it('creates one ES256 key shared by replicas, private part encrypted at rest', async () => {
    const a = new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET));
    const b = new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET));
    const [ka, kb] = await Promise.all([a.get(), b.get()]);
    expect(ka.current.kid).toBe(kb.current.kid);
    const { rows } = await pool.query('SELECT public_jwk, private_jwk_enc FROM signing_keys');
    expect(rows).toHaveLength(1);
    expect(rows[0].public_jwk.d).toBeUndefined();
    expect(Buffer.from(rows[0].private_jwk_enc).toString('latin1')).not.toContain('"d"');
    // another master key cannot open it
    await expect(new SigningKeyStore(pool, masterKey('another-master-key-of-32-characters!', config.SERVER_SECRET)).get()).rejects.toThrow();
  });

  it('rotates when the newest key is too old and keeps publishing the previous one for the overlap', async () => {
    const before = await new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET)).get();
    await pool.query(`UPDATE signing_keys SET created_at = now() - interval '30 days 1 hour'`);
    const after = await new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET)).get();
    expect(after.current.kid).not.toBe(before.current.kid);
    expect(after.jwks.keys.map((k) => k.kid)).toEqual([after.current.kid, before.current.kid]);
    await pool.query(`UPDATE signing_keys SET created_at = now() - interval '32 days' WHERE kid = $1`, [before.current.kid]);
    const later = await new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET)).get();
    expect(later.jwks.keys.map((k) => k.kid)).toEqual([after.current.kid]);
  });

  it('oauth_signing_key_age_seconds: the newest key’s age at scrape time; a scrape rotates a key that is due', async () => {
    const age = async () => {
      const metrics = new Metrics('identity');
      observeSigningKeyAge(metrics, new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET)));
      return parseMetricsText(await metrics.registry.metrics()).find((s) => s.name === 'oauth_signing_key_age_seconds')!.value;
    };
    await pool.query(`UPDATE signing_keys SET created_at = created_at - interval '10 days'`);
    expect(Math.abs((await age()) - 10 * 86_400)).toBeLessThan(300);
    await pool.query(`UPDATE signing_keys SET created_at = created_at - interval '21 days'`);
    expect(await age()).toBeLessThan(60);
  });
});

describe('access tokens', () => {
  it('signs the documented claims, verifiable with the JWKS', async () => {
    const keys = new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET));
    const { user, session, token } = await sessionFor();
    const issued = await identityRpc(ctx, { signingKeys: keys }).issueAccessToken({ sessionToken: token });
    expect(issued.expiresIn).toBe(900);
    const jwks = JSON.parse((await identityRpc(ctx, { signingKeys: keys }).getJwks()).jwksJson);
    const { payload } = await jwtVerify(issued.accessToken, createLocalJWKSet(jwks), { issuer: config.ISSUER, audience: 'secsvc' });
    expect(payload).toMatchObject({ sub: user.id, sid: session!.id, env: 'test' });
    expect(decodeProtectedHeader(issued.accessToken)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
  });

  it('never outlives its session, and refuses ended sessions', async () => {
    const keys = new SigningKeyStore(pool, masterKey(undefined, config.SERVER_SECRET));
    const short = await sessionFor(120);
    expect((await identityRpc(ctx, { signingKeys: keys }).issueAccessToken({ sessionToken: short.token })).expiresIn).toBeLessThanOrEqual(120);
    await pool.query('UPDATE sessions SET revoked_at = now() WHERE id = $1', [short.session!.id]);
    const err = await identityRpc(ctx, { signingKeys: keys }).issueAccessToken({ sessionToken: short.token }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('unauthorized');
    expect((err as AppError).details[0]!.field).toBe('sessionToken');
  });
});
