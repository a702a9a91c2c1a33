import { createHmac, timingSafeEqual } from 'node:crypto';

/** What a download token is bound to. */
export interface DownloadGrant {
  exportId: string;
  format: string;
  environment: string;
  /** The link's end (the export's expiresAt). */
  expiresAt: Date;
}

const TOKEN = /^([0-9a-z]{1,12})\.([A-Za-z0-9_-]{43})$/;

function mac(secret: string, g: Omit<DownloadGrant, 'expiresAt'>, expMs: number): Buffer {
  return createHmac('sha256', secret).update(`export-download:${g.exportId}:${g.format}:${g.environment}:${expMs}`).digest();
}

/**
 * A signed download token `<expiry ms, base36>.<HMAC-SHA-256, base64url>` under SERVER_SECRET, bound to the
 * export id, its format, its environment and the expiry. Deterministic: the same export always shows the
 * same link.
 */
export function signDownloadToken(g: DownloadGrant, secret: string): string {
  const expMs = g.expiresAt.getTime();
  return `${expMs.toString(36)}.${mac(secret, g, expMs).toString('base64url')}`;
}

export type TokenCheck = { ok: true; expiresAt: Date } | { ok: false; reason: 'invalid' | 'expired' };

/**
 * Checks a token against the export it is presented for. A token of another export, format or environment,
 * or any altered character, is `invalid`; a genuine one past its expiry is `expired`. Constant-time compare.
 */
export function verifyDownloadToken(token: string, g: Omit<DownloadGrant, 'expiresAt'>, secret: string, now = Date.now()): TokenCheck {
  const m = TOKEN.exec(token);
  if (!m) return { ok: false, reason: 'invalid' };
  const expMs = parseInt(m[1]!, 36);
  const given = Buffer.from(m[2]!, 'base64url');
  // Only the canonical encodings are accepted (no alternative spellings of the same bytes).
  if (expMs.toString(36) !== m[1] || given.toString('base64url') !== m[2]) return { ok: false, reason: 'invalid' };
  if (!timingSafeEqual(given, mac(secret, g, expMs))) return { ok: false, reason: 'invalid' };
  if (now >= expMs) return { ok: false, reason: 'expired' };
  return { ok: true, expiresAt: new Date(expMs) };
}
