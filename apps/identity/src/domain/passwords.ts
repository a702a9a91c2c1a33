import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { AppError } from '@secsvc/shared';
import { COMMON_PASSWORDS } from './common-passwords';
import { generateOpaqueToken, hashOpaqueToken, looksLikeOpaqueToken } from './opaque-tokens';

export const PASSWORD_MIN = 12;
export const PASSWORD_MAX = 256;

/** scrypt's work parameters: N (CPU/memory cost, a power of 2), r (block size), p (parallelism). */
export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/**
 * scrypt parameters of new hashes: N = 2^14, r = 8, p = 5, 32-byte key, 16-byte salt. OWASP's Password Storage
 * Cheat Sheet sets the scrypt minimum at N = 2^17, r = 8, p = 1, and lists configurations it holds equivalent
 * that trade memory for CPU: N = 2^16 with p = 2, 2^15 with p = 3, 2^14 with p = 5, 2^13 with p = 10. We take
 * N = 2^14, p = 5: 16 MiB per hash (128 · N · r bytes) instead of 128 MiB, so a burst of concurrent logins does
 * not exhaust the process's memory, for the same protection. Each hash records its parameters, so older hashes
 * still verify, and a successful login replaces a hash made with lower ones (needsRehash).
 */
export const SCRYPT = { N: 16_384, r: 8, p: 5, keylen: 32 } as const;
const SALT_BYTES = 16;

/**
 * What scrypt needs in memory, which Node's maxmem must allow: OpenSSL counts 128 · r · (N + p + 2) bytes (the
 * table of N blocks plus p blocks; the p lanes run one after the other over the same table): 16 MiB and 5 KiB
 * for the current parameters. Set from each hash's own parameters, since Node's default limit (32 MiB) is
 * below what the earlier N = 2^15 hashes need.
 */
export const scryptMemory = ({ N, r, p }: ScryptParams): number => 128 * r * (N + p + 2);

function scrypt(password: string, salt: Buffer, params: ScryptParams, keylen: number): Promise<Buffer> {
  const options: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: scryptMemory(params) };
  return new Promise((resolve, reject) => scryptCb(password.normalize('NFKC'), salt, keylen, options, (err, key) => (err ? reject(err) : resolve(key))));
}

/** `scrypt$N$r$p$salt$hash` (base64url), with the current parameters unless others are given (tests of old hashes). */
export async function hashPassword(password: string, params: ScryptParams = SCRYPT): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await scrypt(password, salt, params, SCRYPT.keylen);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** A fixed hash (current parameters) to verify against when the account does not exist, so both paths cost the same. */
let dummy: Promise<string> | undefined;
export const dummyHash = () => (dummy ??= hashPassword(randomBytes(16).toString('hex')));

/** Whether `password` is the one `stored` was made from, with the stored parameters; compared in constant time. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), { N: Number(n), r: Number(r), p: Number(p) }, expected.length);
  return timingSafeEqual(actual, expected);
}

/**
 * Whether a stored hash was made with less than the current parameters and is replaced at the next successful
 * login: less work (N · r · p below the current, so every configuration OWASP lists as its minimum is kept as it
 * is), or a shorter key or salt. Hashes of another scheme never verify, so they are never rehashed either.
 */
export function needsRehash(stored: string): boolean {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const work = Number(n) * Number(r) * Number(p);
  return !(work >= SCRYPT.N * SCRYPT.r * SCRYPT.p) || Buffer.from(hash, 'base64url').length < SCRYPT.keylen || Buffer.from(salt, 'base64url').length < SALT_BYTES;
}

/** How passwords are hashed and checked (a unit test may give a cheaper one). */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(password: string, stored: string): Promise<boolean>;
  needsRehash(stored: string): boolean;
  /** A hash to verify against when there is none, costing what a real one costs. */
  dummy(): Promise<string>;
}

export const scryptHasher: PasswordHasher = { hash: (password) => hashPassword(password), verify: verifyPassword, needsRehash, dummy: dummyHash };

/** Password reset tokens: `prt_` + 32 random bytes + checksum, stored as an HMAC; they work once, for one hour. */
export const RESET_TOKEN_PREFIX = 'prt_';
export const generateResetToken = () => generateOpaqueToken(RESET_TOKEN_PREFIX);
export const looksLikeResetToken = (token: string) => looksLikeOpaqueToken(RESET_TOKEN_PREFIX, token);
export const hashResetToken = (token: string, serverSecret: string) => hashOpaqueToken('password-reset', token, serverSecret);

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
