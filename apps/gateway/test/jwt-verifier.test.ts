/** JwtVerifier's verdicts: each token judged once, a verdict kept exactly as long as it cannot change. */
import { createLogger, type Metrics } from '@secsvc/shared';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { JwtVerifier } from '../src/auth/jwt-verifier';

const ISSUER = 'https://auth.example.com';
const AUDIENCE = 'secsvc';

async function keyPair(kid: string) {
  const { privateKey, publicKey } = await generateKeyPair('ES256');
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'ES256', use: 'sig' } };
}

/** A signed access token; `claims` over the defaults (exp 15 minutes from now). */
function token(key: { kid: string; privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'] }, claims: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'cli_1', sid: 'grt_1', env: 'live', scope: 'read:users', iat: now, exp: now + 900, ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: key.kid, typ: 'at+jwt' })
    .sign(key.privateKey);
}

/** A verifier over `published()` (read at each key set fetch), counting fetches and cache lookups. */
function verifier(published: () => object[] | Error, maxVerdicts?: number) {
  const counts = { hit: 0, miss: 0, fetches: 0 };
  const metrics = { counter: () => ({ labels: ({ result }: { result: 'hit' | 'miss' }) => ({ inc: () => counts[result]++ }) }) } as unknown as Metrics;
  const fetchJwks = async () => {
    counts.fetches++;
    const keys = published();
    if (keys instanceof Error) throw keys;
    return JSON.stringify({ keys });
  };
  return { jwt: new JwtVerifier(fetchJwks, ISSUER, AUDIENCE, createLogger('test', 'silent'), metrics, maxVerdicts), counts };
}

/** The clock (Date, as jose and the verifier read it) set to `ms`; timers stay real. */
function at(ms: number): void {
  jest.useFakeTimers({ doNotFake: ['hrtime', 'nextTick', 'performance', 'queueMicrotask', 'requestAnimationFrame', 'cancelAnimationFrame', 'requestIdleCallback', 'cancelIdleCallback', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout'] });
  jest.setSystemTime(ms);
}

const reasonOf = (p: Promise<unknown>) => p.then(() => 'accepted', (err: { reason?: string }) => err.reason ?? `not a refusal: ${String(err)}`);

describe('JwtVerifier', () => {
  afterEach(() => jest.useRealTimers());

  it('accepts a good token once checked, and answers it again from the verdict until its exp', async () => {
    const key = await keyPair('k1');
    const { jwt, counts } = verifier(() => [key.jwk]);
    const t = await token(key, { exp: Math.floor(Date.now() / 1000) + 60 });
    expect((await jwt.verify(t)).sub).toBe('cli_1');
    expect((await jwt.verify(t)).sid).toBe('grt_1');
    expect(counts).toMatchObject({ miss: 1, hit: 1 });
    // Past exp + the 60 s leeway the verdict is gone and the token is refused as expired.
    at(Date.now() + 121_000);
    expect(await reasonOf(jwt.verify(t))).toBe('expired');
    expect(counts).toMatchObject({ miss: 2, hit: 1 });
  });

  it('refuses an expired token without checking its signature, and keeps that refusal', async () => {
    const key = await keyPair('k1');
    const { jwt, counts } = verifier(() => [key.jwk]);
    const past = Math.floor(Date.now() / 1000) - 121;
    const expired = await token(key, { iat: past - 900, exp: past });
    // Its signature replaced by garbage: still "expired" (never a signature failure), and no key set fetched.
    const forged = `${expired.split('.').slice(0, 2).join('.')}.${Buffer.alloc(64, 7).toString('base64url')}`;
    expect(await reasonOf(jwt.verify(forged))).toBe('expired');
    expect(await reasonOf(jwt.verify(expired))).toBe('expired');
    expect(counts.fetches).toBe(0);
    expect(await reasonOf(jwt.verify(expired))).toBe('expired');
    expect(counts).toMatchObject({ miss: 2, hit: 1 });
    // Within the leeway it is still checked in full (and accepted).
    const recent = await token(key, { exp: Math.floor(Date.now() / 1000) - 30 });
    expect(await reasonOf(jwt.verify(recent))).toBe('accepted');
  });

  it('keeps a bad signature or wrong claims refused for good, an unknown key for 10 s only', async () => {
    const key = await keyPair('k1');
    const impostor = await keyPair('k1'); // same kid, another key
    const next = await keyPair('k2');
    let published = [key.jwk];
    const { jwt, counts } = verifier(() => published);
    const forged = await token(impostor);
    const wrongAudience = await token(key, { aud: 'another-api' });
    const early = await token(next);
    for (let i = 0; i < 3; i++) {
      expect(await reasonOf(jwt.verify(forged))).toBe('err_jws_signature_verification_failed');
      expect(await reasonOf(jwt.verify(wrongAudience))).toBe('err_jwt_claim_validation_failed');
    }
    expect(counts).toMatchObject({ miss: 2, hit: 4 });
    // A token of a key not yet published: refused, and not asked about again for 10 s.
    expect(await reasonOf(jwt.verify(early))).toBe('no_applicable_key_found_in_the_json_web_');
    expect(await reasonOf(jwt.verify(early))).toBe('no_applicable_key_found_in_the_json_web_');
    expect(counts).toMatchObject({ miss: 3, hit: 5 });
    // Identity publishes it; 11 s later the token is checked again, against the key set fetched anew.
    published = [key.jwk, next.jwk];
    const fetched = counts.fetches;
    at(Date.now() + 11_000);
    expect(await reasonOf(jwt.verify(early))).toBe('accepted');
    expect(counts.fetches).toBe(fetched + 1);
    // The others are still refused from their verdicts.
    expect(await reasonOf(jwt.verify(forged))).toBe('err_jws_signature_verification_failed');
    expect(counts.miss).toBe(4);
  });

  it('keeps a token that is not yet valid refused only until its nbf', async () => {
    const key = await keyPair('k1');
    const { jwt } = verifier(() => [key.jwk]);
    const nbf = Math.floor(Date.now() / 1000) + 300;
    const t = await token(key, { nbf });
    expect(await reasonOf(jwt.verify(t))).toBe('err_jwt_claim_validation_failed');
    at((nbf - 59) * 1000);
    expect(await reasonOf(jwt.verify(t))).toBe('accepted');
  });

  it('keeps no verdict when the key set could not be fetched', async () => {
    const key = await keyPair('k1');
    let published: object[] | Error = new Error('identity unavailable');
    const { jwt } = verifier(() => published);
    const t = await token(key);
    expect(await reasonOf(jwt.verify(t))).toBe('not a refusal: Error: identity unavailable');
    published = [key.jwk];
    expect(await reasonOf(jwt.verify(t))).toBe('accepted');
  });

  it('holds at most maxVerdicts, dropping the least recently used', async () => {
    const key = await keyPair('k1');
    const { jwt, counts } = verifier(() => [key.jwk], 2);
    const [a, b, c] = await Promise.all([token(key, { sid: 'grt_a' }), token(key, { sid: 'grt_b' }), token(key, { sid: 'grt_c' })]);
    await jwt.verify(a);
    await jwt.verify(b);
    await jwt.verify(a); // a is now the most recently used
    await jwt.verify(c); // b goes
    expect(counts).toMatchObject({ miss: 3, hit: 1 });
    await jwt.verify(a);
    expect(counts).toMatchObject({ miss: 3, hit: 2 });
    await jwt.verify(b);
    expect(counts).toMatchObject({ miss: 4, hit: 2 });
  });
});
