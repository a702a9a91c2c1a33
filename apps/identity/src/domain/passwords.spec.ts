import crypto from 'node:crypto';
import { checkPasswordRules, hashPassword, needsRehash, SCRYPT, scryptMemory, verifyPassword } from './passwords';

// scrypt is slow on purpose: these tests hash a few times only, with small parameters where the cost is not the point.

describe('password hashing parameters', () => {
  it('are OWASP\'s minimum in the 16 MiB form: N = 2^14, r = 8, p = 5', () => {
    expect(SCRYPT).toEqual({ N: 2 ** 14, r: 8, p: 5, keylen: 32 });
    expect(128 * SCRYPT.N * SCRYPT.r).toBe(16 * 1024 * 1024);
  });

  it("let Node run scrypt with exactly the memory OpenSSL counts (128 · r · (N + p + 2)), and not with less", () => {
    const params = { N: 1024, r: 8, p: 5 };
    const run = (maxmem: number) => crypto.scryptSync('pw', 'salt', 32, { ...params, maxmem });
    expect(() => run(scryptMemory(params))).not.toThrow();
    expect(() => run(scryptMemory(params) - 1)).toThrow(/memory limit/);
    expect(scryptMemory(SCRYPT)).toBe(128 * 8 * (16_384 + 5 + 2));
  });

  it('rehash what is below the current work (N · r · p) or has a shorter key or salt, and nothing else', () => {
    const stored = (N: number, r: number, p: number, saltBytes = 16, keyBytes = 32) =>
      ['scrypt', N, r, p, Buffer.alloc(saltBytes, 1).toString('base64url'), Buffer.alloc(keyBytes, 2).toString('base64url')].join('$');
    expect(needsRehash(stored(2 ** 15, 8, 1))).toBe(true);
    expect(needsRehash(stored(2 ** 14, 8, 4))).toBe(true);
    expect(needsRehash(stored(2 ** 14, 8, 5, 8))).toBe(true);
    expect(needsRehash(stored(2 ** 14, 8, 5, 16, 16))).toBe(true);
    // the current parameters, and every configuration OWASP lists as its minimum
    for (const [N, p] of [[2 ** 14, 5], [2 ** 17, 1], [2 ** 16, 2], [2 ** 15, 3], [2 ** 13, 10]] as const) expect(needsRehash(stored(N, 8, p))).toBe(false);
    expect(needsRehash('bcrypt$whatever')).toBe(false);
    expect(needsRehash('scrypt$x$8$1$salt$hash')).toBe(true);
  });
});

describe('hashing and verifying', () => {
  it('records the parameters a hash was made with and verifies with them', async () => {
    const small = { N: 1024, r: 8, p: 2 };
    const hash = await hashPassword('correct horse battery', small);
    expect(hash).toMatch(/^scrypt\$1024\$8\$2\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(await verifyPassword('correct horse battery', hash)).toBe(true);
    expect(await verifyPassword('correct horse battery!', hash)).toBe(false);
    expect(await verifyPassword('correct horse battery', 'bcrypt$whatever')).toBe(false);
  });

  it('compares in constant time (crypto.timingSafeEqual), never with === on the bytes', async () => {
    const hash = await hashPassword('correct horse battery', { N: 1024, r: 8, p: 1 });
    const spy = jest.spyOn(crypto, 'timingSafeEqual');
    try {
      expect(await verifyPassword('correct horse battery', hash)).toBe(true);
      expect(await verifyPassword('wrong horse battery', hash)).toBe(false);
      expect(spy).toHaveBeenCalledTimes(2);
    } finally {
      spy.mockRestore();
    }
  });
});

describe('password rules', () => {
  it('refuse short, common and own-email passwords', () => {
    expect(() => checkPasswordRules('short', 'a@b.co')).toThrow();
    expect(() => checkPasswordRules('Password1234', 'a@b.co')).toThrow();
    expect(() => checkPasswordRules('someone.long@b.co', 'someone.long@b.co')).toThrow();
    expect(() => checkPasswordRules('correct horse battery', 'a@b.co')).not.toThrow();
  });
});
