import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** An AES-256 key for one purpose (`info`), derived from a secret with HKDF-SHA256. */
export function deriveKey(secret: string, info: string): Buffer {
  return Buffer.from(hkdfSync('sha256', secret, 'secsvc', info, 32));
}

/**
 * Encrypts `plain` with AES-256-GCM, bound to `aad` (what it belongs to: the row's id, the key's kid), so it
 * does not open anywhere else: iv (12 bytes) | tag (16) | ciphertext.
 */
export function seal(key: Buffer, aad: string, plain: string): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** The plain text of `seal(key, aad, …)`; throws when the key, the aad or any byte differs. */
export function open(key: Buffer, aad: string, sealed: Buffer): string {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, 12));
  decipher.setAAD(Buffer.from(aad));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8');
}
