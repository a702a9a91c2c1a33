import crypto from 'node:crypto';
import { environmentOf, generateKey, hashesEqual, hashKey, keyTypeOf, looksLikeKey, maskKey } from './api-keys';

describe('API keys', () => {
  it.each(['secret', 'public', 'test'] as const)('generates %s keys with their prefix, 256 random bits and a checksum', (type) => {
    const key = generateKey(type);
    expect(looksLikeKey(key)).toBe(true);
    expect(keyTypeOf(key)).toBe(type);
    expect(key).toMatch(/^svc_(sk|pk|test)_[A-Za-z0-9_-]{49}$/);
    expect(generateKey(type)).not.toBe(key);
  });

  it('refuses malformed keys by shape', () => {
    for (const bad of ['', 'svc_sk_short', 'sk_' + 'a'.repeat(40), 'svc_xx_' + 'a'.repeat(40), 'svc_sk_' + 'a'.repeat(31), 'svc_sk_' + 'a'.repeat(39) + '!']) {
      expect(looksLikeKey(bad)).toBe(false);
    }
  });

  it('hashes with the server secret and compares hashes', () => {
    const key = generateKey('secret');
    const a = hashKey(key, 'x'.repeat(32));
    expect(a).toHaveLength(32);
    expect(hashesEqual(a, hashKey(key, 'x'.repeat(32)))).toBe(true);
    expect(hashesEqual(a, hashKey(key, 'y'.repeat(32)))).toBe(false);
    expect(hashesEqual(a, Buffer.alloc(5))).toBe(false);
  });

  it('masks a key as prefix and last 4 characters', () => {
    const key = generateKey('test');
    expect(maskKey(key)).toEqual({ prefix: 'svc_test_', last4: key.slice(-4) });
  });

  it('maps test keys to the test environment and the others to live', () => {
    expect(environmentOf('test')).toBe('test');
    expect(environmentOf('secret')).toBe('live');
    expect(environmentOf('public')).toBe('live');
  });

  it('compares hashes in constant time (crypto.timingSafeEqual), never with === on the bytes', () => {
    const spy = jest.spyOn(crypto, 'timingSafeEqual');
    try {
      const a = hashKey('svc_sk_' + 'a'.repeat(40), 'x'.repeat(32));
      expect(hashesEqual(a, Buffer.from(a))).toBe(true);
      expect(spy).toHaveBeenCalledTimes(1);
      // different lengths are refused before the comparison (timingSafeEqual would throw)
      expect(hashesEqual(a, a.subarray(1))).toBe(false);
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});
