/** JwtVerifier's verdicts: each token judged once, a verdict kept exactly as long as it cannot change. */
import { createLogger, type Metrics } from '@secsvc/shared';
import { createLocalJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import { JwtVerifier, reasonCode } from '../src/auth/jwt-verifier';

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

  it('accepts and refuses exactly the tokens a standard verifier (jose) does, with its codes', async () => {
    const key = await keyPair('k1');
    const other = await keyPair('k1');
    const now = Math.floor(Date.now() / 1000);
    const b64 = (v: unknown) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64url');
    const good = await token(key);
    const [h, p, sig] = good.split('.') as [string, string, string];
    const withHeader = async (header: Record<string, unknown>, claims: Record<string, unknown> = {}) => {
      const t = new SignJWT({ iss: ISSUER, aud: AUDIENCE, sub: 'cli_1', sid: 'grt_1', env: 'live', iat: now, exp: now + 900, ...claims });
      return t.setProtectedHeader({ alg: 'ES256', ...header } as never).sign(key.privateKey);
    };
    const cases: Record<string, string> = {
      good,
      'typ application/at+jwt': await withHeader({ kid: 'k1', typ: 'application/AT+JWT' }),
      'typ JWT': await withHeader({ kid: 'k1', typ: 'JWT' }),
      'no typ': await withHeader({ kid: 'k1' }),
      'no kid': await withHeader({ typ: 'at+jwt' }),
      'unknown kid': await withHeader({ kid: 'k9', typ: 'at+jwt' }),
      'aud array with ours': await token(key, { aud: ['x', AUDIENCE] }),
      'aud array without ours': await token(key, { aud: ['x'] }),
      'no aud': await token(key, { aud: undefined }),
      'other iss': await token(key, { iss: 'https://evil.example' }),
      'iat a string': await token(key, { iat: 'now' }),
      'exp a string': await token(key, { exp: 'later' }),
      'nbf in an hour': await token(key, { nbf: now + 3600 }),
      'nbf within the leeway': await token(key, { nbf: now + 30 }),
      'no exp': await token(key, { exp: undefined }),
      'signed by another key with our kid': await token(other),
      'alg none': `${b64({ alg: 'none', kid: 'k1', typ: 'at+jwt' })}.${p}.`,
      'alg HS256': `${b64({ alg: 'HS256', kid: 'k1', typ: 'at+jwt' })}.${p}.${sig}`,
      'crit header': `${b64({ alg: 'ES256', kid: 'k1', typ: 'at+jwt', crit: ['exp'] })}.${p}.${sig}`,
      'crit not a list': `${b64({ alg: 'ES256', kid: 'k1', typ: 'at+jwt', crit: 'exp' })}.${p}.${sig}`,
      'no alg': `${b64({ kid: 'k1', typ: 'at+jwt' })}.${p}.${sig}`,
      'b64 true without crit': await withHeader({ kid: 'k1', typ: 'at+jwt', b64: true }),
      'header not JSON': `${b64('{nope')}.${p}.${sig}`,
      'header an array': `${b64([1])}.${p}.${sig}`,
      'payload swapped': `${h}.${b64({ iss: ISSUER, aud: AUDIENCE, sub: 'admin', sid: 's', env: 'live', exp: now + 900 })}.${sig}`,
      'signature cut': `${h}.${p}.${sig.slice(0, 80)}`,
      'signature not base64url': `${h}.${p}.${sig.slice(0, -2)}+/`,
      'four parts': `${good}.x`,
      'two parts': `${h}.${p}`,
      empty: '',
    };
    const jwks = [key.jwk];
    const { jwt } = verifier(() => jwks);
    const standard = createLocalJWKSet({ keys: jwks as never });
    // jose's code, as auth.failed events name it (an unknown key by its message, as the verifier always has).
    const reasonOfJose = (err: unknown) => {
      const { code, message } = err as { code?: string; message: string };
      return code === 'ERR_JWT_EXPIRED' ? 'expired' : reasonCode(code === 'ERR_JWKS_NO_MATCHING_KEY' || !code ? message : code);
    };
    const ours: string[][] = [];
    const theirs: string[][] = [];
    for (const [name, t] of Object.entries(cases)) {
      const options = { issuer: ISSUER, audience: AUDIENCE, algorithms: ['ES256'], clockTolerance: 60, typ: 'at+jwt' };
      theirs.push([name, await jwtVerify(t, standard, options).then(() => 'accepted', reasonOfJose)]);
      ours.push([name, await reasonOf(jwt.verify(t))]);
    }
    expect(ours).toEqual(theirs);
    expect(theirs.filter(([, r]) => r === 'accepted').map(([n]) => n)).toEqual(['good', 'typ application/at+jwt', 'no kid', 'aud array with ours', 'nbf within the leeway', 'no exp', 'b64 true without crit']);
  });
});
