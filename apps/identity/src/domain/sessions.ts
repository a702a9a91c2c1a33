import { createHash, createHmac, randomBytes } from 'node:crypto';

export const SESSION_MIN_SECONDS = 60;
export const SESSION_MAX_SECONDS = 30 * 86_400;

const PREFIX = 'sst_';
const TOKEN_SHAPE = /^sst_[A-Za-z0-9_-]{43}[A-Za-z0-9_-]{6}$/;

const checksumOf = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 6);

/** A session token: `sst_` + 32 random bytes (base64url) + a 6-character checksum. */
export function generateSessionToken(): string {
  const body = PREFIX + randomBytes(32).toString('base64url');
  return body + checksumOf(body);
}

/** Shape and checksum: anything else is not a token and is never looked up. */
export function looksLikeSessionToken(value: string): boolean {
  return TOKEN_SHAPE.test(value) && checksumOf(value.slice(0, -6)) === value.slice(-6);
}

export function hashSessionToken(token: string, serverSecret: string): Buffer {
  return createHmac('sha256', serverSecret).update('session:').update(token).digest();
}
