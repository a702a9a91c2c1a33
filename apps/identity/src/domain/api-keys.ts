import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type KeyType = 'secret' | 'public' | 'test';

export const keyPrefixes: Record<KeyType, string> = { secret: 'svc_sk_', public: 'svc_pk_', test: 'svc_test_' };

/** Shape of any key we accept: a known prefix and 32..200 url-safe characters. Checked before any lookup. */
const KEY_SHAPE = /^svc_(sk|pk|test)_[A-Za-z0-9_-]{32,200}$/;

const GENERATED_BODY = 43 + 6; // 32 random bytes in base64url + 6 checksum characters

const checksumOf = (prefixAndBody: string) => createHash('sha256').update(prefixAndBody).digest('base64url').slice(0, 6);

/**
 * Refuses what cannot be a key before any lookup: a known prefix and 32..200 url-safe characters, and for
 * keys of the generated length a valid checksum (a mistyped key never reaches the database). Keys of other
 * lengths can only be a configured BOOTSTRAP_API_KEY.
 */
export function looksLikeKey(value: string): boolean {
  if (!KEY_SHAPE.test(value)) return false;
  const prefix = keyPrefixes[keyTypeOf(value)];
  if (value.length !== prefix.length + GENERATED_BODY) return true;
  return checksumOf(value.slice(0, -6)) === value.slice(-6);
}

export function keyTypeOf(key: string): KeyType {
  if (key.startsWith('svc_sk_')) return 'secret';
  if (key.startsWith('svc_pk_')) return 'public';
  return 'test';
}

/** The environment a key type works in: test keys see only test data. */
export function environmentOf(type: KeyType): 'live' | 'test' {
  return type === 'test' ? 'test' : 'live';
}

/**
 * A new key: prefix + 32 random bytes (256 bits) in base64url + a 6-character checksum, so a mistyped key is
 * refused by shape before it reaches the database.
 */
export function generateKey(type: KeyType): string {
  const body = keyPrefixes[type] + randomBytes(32).toString('base64url');
  return body + checksumOf(body);
}

/** Keyed hash of a key under the server secret: what is stored and looked up. */
export function hashKey(key: string, serverSecret: string): Buffer {
  return createHmac('sha256', serverSecret).update(key).digest();
}

export function hashesEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A new key of `type` with what is stored of it (keyed hash, prefix, last 4 characters). */
export function mintKey(type: KeyType, serverSecret: string, key = generateKey(type)) {
  return { key, hash: hashKey(key, serverSecret), ...maskKey(key) };
}

/** What lists show instead of the key: prefix and last 4 characters. */
export function maskKey(key: string): { prefix: string; last4: string } {
  return { prefix: keyPrefixes[keyTypeOf(key)], last4: key.slice(-4) };
}
