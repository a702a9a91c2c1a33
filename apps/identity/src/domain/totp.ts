import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { toString as qrToString } from 'qrcode';

// Time-based one-time passwords without I/O: RFC 4226 (HOTP), RFC 6238 (TOTP), RFC 4648 base32 for the shared
// secret, and the Key URI format (otpauth://) authenticator apps read from a QR code.

/** Seconds per time step, and digits per code: the defaults every authenticator app assumes. */
export const TOTP_PERIOD = 30;
export const TOTP_DIGITS = 6;

/** A new shared secret: 160 bits, the HMAC-SHA1 output length RFC 4226 recommends. */
export function generateTotpSecret(): Buffer {
  return randomBytes(20);
}

const BASE32_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
/** Each base32 character, in both cases, to its 5-bit value. */
const BASE32_VALUES = new Map([...BASE32_ALPHABET].flatMap((ch, i) => [[ch, i], [ch.toLowerCase(), i]] as [string, number][]));

/** RFC 4648 base32: uppercase, without `=` padding (as otpauth:// URIs carry it). */
export function base32Encode(buf: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const byte of buf) {
    value = ((value << 8) | byte) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32_ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/** The bytes of RFC 4648 base32 text: any case, spaces and `=` ignored; throws on any other character. */
export function base32Decode(s: string): Buffer {
  const bytes: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of s) {
    if (ch === ' ' || ch === '=') continue;
    const index = BASE32_VALUES.get(ch);
    if (index === undefined) throw new Error('base32: invalid character');
    value = ((value << 5) | index) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      bytes.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  // fewer than 8 bits left over are the encoder's zero padding of the last quantum
  return Buffer.from(bytes);
}

/** RFC 4226 HOTP: HMAC of the 8-byte big-endian counter, dynamic truncation, the low `digits` decimal digits. */
export function hotp(secret: Buffer, counter: number | bigint, digits = TOTP_DIGITS, algorithm: 'sha1' | 'sha256' | 'sha512' = 'sha1'): string {
  if (!Number.isInteger(digits) || digits < 1 || digits > 10) throw new RangeError('hotp: digits must be 1 to 10');
  const c = typeof counter === 'bigint' ? counter : Number.isSafeInteger(counter) ? BigInt(counter) : -1n;
  if (c < 0n || c > 0xffff_ffff_ffff_ffffn) throw new RangeError('hotp: counter must be an unsigned 64-bit integer');
  const message = Buffer.alloc(8);
  message.writeBigUInt64BE(c);
  const mac = createHmac(algorithm, secret).update(message).digest();
  const offset = mac[mac.length - 1] & 0x0f;
  const binary = mac.readUInt32BE(offset) & 0x7fff_ffff;
  return (binary % 10 ** digits).toString().padStart(digits, '0');
}

/** The RFC 6238 time step of a moment (T0 = 0): whole periods since the Unix epoch. */
export function timeStep(nowMs: number, period = TOTP_PERIOD): number {
  return Math.floor(nowMs / 1000 / period);
}

const TOTP_CODE = new RegExp(`^[0-9]{${TOTP_DIGITS}}$`);
/** Steps either side of now a code may be from, at most (clock drift, not a way to widen the guessing space). */
const MAX_WINDOW = 10;

/**
 * The time step whose code `code` is (6 digits, spaces ignored), among the steps `window` (default 1) either side
 * of now, and only if it is later than `lastStep`, the step of the last code accepted: a code, or any code of an
 * earlier step, is accepted once. Undefined for anything else, malformed input included.
 */
export function verifyTotp(secret: Buffer, code: string, opts: { nowMs: number; lastStep?: number | null; window?: number }): number | undefined {
  if (typeof code !== 'string') return undefined;
  const given = code.replace(/ /g, '');
  if (!TOTP_CODE.test(given)) return undefined;
  const window = Math.min(MAX_WINDOW, Math.max(0, Math.floor(opts.window ?? 1) || 0));
  const now = timeStep(opts.nowMs);
  if (!Number.isSafeInteger(now)) return undefined;
  const lastStep = opts.lastStep ?? null;
  const givenBytes = Buffer.from(given);
  let found: number | undefined;
  // every step of the window is computed and compared, whether or not an earlier one matched
  for (let step = now - window; step <= now + window; step++) {
    if (step < 0) continue;
    const matches = timingSafeEqual(Buffer.from(hotp(secret, step, TOTP_DIGITS)), givenBytes);
    if (matches && found === undefined && (lastStep === null || step > lastStep)) found = step;
  }
  return found;
}

/**
 * The Key URI of a TOTP secret (github.com/google/google-authenticator/wiki/Key-Uri-Format):
 * `otpauth://totp/<issuer>:<account>?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30`, label parts and
 * parameter values percent-encoded (a space is %20, a colon inside either part %3A).
 */
export function otpauthUri({ issuer, account, secret }: { issuer: string; account: string; secret: Buffer }): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const params = [
    ['secret', base32Encode(secret)],
    ['issuer', issuer],
    ['algorithm', 'SHA1'],
    ['digits', String(TOTP_DIGITS)],
    ['period', String(TOTP_PERIOD)],
  ]
    .map(([k, v]) => `${k}=${encodeURIComponent(v)}`)
    .join('&');
  return `otpauth://totp/${label}?${params}`;
}

/** A QR code of `text` as an SVG data URI (an <img> source). */
export async function qrSvgDataUri(text: string): Promise<string> {
  const svg = await qrToString(text, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return `data:image/svg+xml;base64,${Buffer.from(svg, 'utf8').toString('base64')}`;
}
