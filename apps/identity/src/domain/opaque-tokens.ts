import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

// Secrets handed out once and stored only as keyed hashes: session tokens (sst_), OAuth client secrets
// (ocs_), authorization codes (ocd_) and refresh tokens (ort_). Each is a prefix, 32 random bytes (256 bits,
// base64url) and a 6-character checksum, so a mistyped or made-up value is refused before any lookup.

const BODY = /^[A-Za-z0-9_-]{43}[A-Za-z0-9_-]{6}$/;

const checksumOf = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 6);

export function generateOpaqueToken(prefix: string): string {
  const body = prefix + randomBytes(32).toString('base64url');
  return body + checksumOf(body);
}

/** Shape and checksum: anything else is not one of our tokens and is never looked up. */
export function looksLikeOpaqueToken(prefix: string, value: string): boolean {
  return value.startsWith(prefix) && BODY.test(value.slice(prefix.length)) && checksumOf(value.slice(0, -6)) === value.slice(-6);
}

/** HMAC-SHA-256 under the server secret, separated by purpose: what is stored and looked up. */
export function hashOpaqueToken(purpose: string, token: string, serverSecret: string): Buffer {
  return createHmac('sha256', serverSecret).update(`${purpose}:`).update(token).digest();
}

/** Constant-time comparison of two hashes (or digests). */
export function sameHash(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
