import { generateOpaqueToken, hashOpaqueToken, looksLikeOpaqueToken } from './opaque-tokens';

export const SESSION_MIN_SECONDS = 60;
export const SESSION_MAX_SECONDS = 30 * 86_400;

const PREFIX = 'sst_';

/** A session token: `sst_` + 32 random bytes (base64url) + a 6-character checksum. */
export function generateSessionToken(): string {
  return generateOpaqueToken(PREFIX);
}

/** Shape and checksum: anything else is not a token and is never looked up. */
export function looksLikeSessionToken(value: string): boolean {
  return looksLikeOpaqueToken(PREFIX, value);
}

export function hashSessionToken(token: string, serverSecret: string): Buffer {
  return hashOpaqueToken('session', token, serverSecret);
}
