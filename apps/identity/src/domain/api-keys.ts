import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { AppError } from '@secsvc/shared';

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

export const MAX_GRACE_SECONDS = 7 * 24 * 3600;
const PLANS = ['free', 'pro', 'enterprise'];
const TYPES: KeyType[] = ['secret', 'public', 'test'];

export interface NewKeyInput {
  name: string;
  type: string;
  plan: string;
  rateLimit?: number;
  expiresAt?: string;
}

export interface NewKey {
  name: string;
  type: KeyType;
  plan: string;
  rateLimit: number | null;
  expiresAt: Date | null;
}

/**
 * A new key's fields (every faulty one named; plan defaults to free, a custom rate limit needs enterprise);
 * a caller with a test key may only create test keys.
 */
export function validateNewKey(req: NewKeyInput, callerEnvironment: string): NewKey {
  const errors: { field: string; message: string }[] = [];
  const name = req.name.trim();
  if (!name || req.name.length > 100) errors.push({ field: 'name', message: 'must be 1 to 100 characters' });
  if (!TYPES.includes(req.type as KeyType)) errors.push({ field: 'type', message: 'must be secret, public or test' });
  const plan = req.plan || 'free';
  if (!PLANS.includes(plan)) errors.push({ field: 'plan', message: 'must be free, pro or enterprise' });
  if (req.rateLimit !== undefined) {
    if (!Number.isInteger(req.rateLimit) || req.rateLimit < 1 || req.rateLimit > 1_000_000) {
      errors.push({ field: 'rateLimit', message: 'must be an integer from 1 to 1000000 requests per minute' });
    } else if (plan !== 'enterprise') {
      errors.push({ field: 'rateLimit', message: 'a custom limit needs the enterprise plan' });
    }
  }
  let expiresAt: Date | undefined;
  if (req.expiresAt !== undefined) {
    expiresAt = new Date(req.expiresAt);
    if (Number.isNaN(expiresAt.getTime()) || expiresAt.getTime() <= Date.now()) {
      errors.push({ field: 'expiresAt', message: 'must be a timestamp in the future' });
    } else if (expiresAt.getTime() > Date.now() + 10 * 365 * 24 * 3600 * 1000) {
      errors.push({ field: 'expiresAt', message: 'must be within 10 years' });
    }
  }
  if (errors.length) throw AppError.invalid(errors);
  if (callerEnvironment === 'test' && req.type !== 'test') {
    throw new AppError('forbidden', 'A test key can only create test keys');
  }
  return { name, type: req.type as KeyType, plan, rateLimit: req.rateLimit ?? null, expiresAt: expiresAt ?? null };
}

/** A rotation's grace period for the previous secret: whole seconds, 0 (none) to 7 days. */
export function checkGracePeriod(seconds: number): number {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_GRACE_SECONDS) throw AppError.field('gracePeriod', 'must be between 0s and 7d');
  return seconds;
}

/** The prefix of what was presented as a key (svc_sk_, svc_pk_, svc_test_), or '' (all auth.failed keeps of it). */
export const presentedPrefix = (key: string) => /^svc_(sk|pk|test)_/.exec(key)?.[0] ?? '';
