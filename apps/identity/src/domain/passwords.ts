import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { AppError } from '@secsvc/shared';
import { COMMON_PASSWORDS } from './common-passwords';

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;

/**
 * scrypt parameters of new hashes: N = 2^15, r = 8, p = 1, 32-byte key, 16-byte salt (about 32 MiB and some
 * tens of milliseconds per hash). Each hash records its parameters, so raising them later keeps old hashes
 * verifiable (and a login can rehash).
 */
export const SCRYPT = { N: 32_768, r: 8, p: 1, keylen: 32 } as const;

function scrypt(password: string, salt: Buffer, N: number, r: number, p: number, keylen: number): Promise<Buffer> {
  const options: ScryptOptions = { N, r, p, maxmem: 256 * N * r };
  return new Promise((resolve, reject) => scryptCb(password.normalize('NFKC'), salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** `scrypt$N$r$p$salt$hash` (base64url). */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, SCRYPT.N, SCRYPT.r, SCRYPT.p, SCRYPT.keylen);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A fixed hash to verify against when the account does not exist, so both paths cost the same. */
let dummy: Promise<string> | undefined;
export const dummyHash = () => (dummy ??= hashPassword(randomBytes(16).toString('hex')));

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), Number(n), Number(r), Number(p), expected.length);
  return timingSafeEqual(actual, expected);
}

/** Password rules: 12..256 characters, not a common password, not the user's email (or its local part). */
export function checkPasswordRules(password: string, email: string, field = 'password'): void {
  const fail = (message: string) => {
    throw AppError.field(field, message);
  };
  if (typeof password !== 'string') fail('must be a string');
  if ([...password].length < PASSWORD_MIN) fail(`must be at least ${PASSWORD_MIN} characters`);
  if (password.length > PASSWORD_MAX) fail(`must be at most ${PASSWORD_MAX} characters`);
  const lower = password.toLowerCase();
  if (COMMON_PASSWORDS.has(lower)) fail('is too common');
  const mail = email.toLowerCase();
  if (lower === mail || lower === mail.split('@')[0]) fail('must not be your email address');
}
