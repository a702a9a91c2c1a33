import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case

export type IdPrefix = 'user' | 'pol' | 'log' | 'exp' | 'key' | 'ses' | 'req' | 'evt' | 'job' | 'prt' | 'dec' | 'cli' | 'grt' | 'sso' | 'mfa' | 'mfc';

let lastTime = 0;
let lastRandom: Buffer = Buffer.alloc(10);

function encodeTime(ms: number): string {
  let out = '';
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[ms % 32] + out;
    ms = Math.floor(ms / 32);
  }
  return out;
}

function encodeRandom(bytes: Buffer): string {
  // 80 bits -> 16 base32 characters
  let bits = 0n;
  for (const b of bytes) bits = (bits << 8n) | BigInt(b);
  let out = '';
  for (let i = 0; i < 16; i++) {
    out = ALPHABET[Number(bits & 31n)] + out;
    bits >>= 5n;
  }
  return out;
}

function increment(bytes: Buffer): Buffer {
  const next = Buffer.from(bytes);
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i] === 0xff) {
      next[i] = 0;
    } else {
      next[i]! += 1;
      return next;
    }
  }
  return randomBytes(10); // overflow: 2^80 ids in one millisecond will not happen
}

/**
 * A prefixed, time-sortable id: `<prefix>_` + 26 characters (48-bit millisecond time + 80 random bits, ULID
 * layout in lower-case Crockford base32). Ids made by one process are strictly increasing.
 */
export function newId(prefix: IdPrefix, now = Date.now()): string {
  if (now <= lastTime) {
    lastRandom = increment(lastRandom);
    now = lastTime;
  } else {
    lastTime = now;
    lastRandom = randomBytes(10);
  }
  return `${prefix}_${encodeTime(now)}${encodeRandom(lastRandom)}`;
}

const ID_BODY = /^[0-9abcdefghjkmnpqrstvwxyz]{26}$/;

/** True when `value` is an id of this prefix (shape only). */
export function isId(prefix: IdPrefix, value: string): boolean {
  return value.startsWith(`${prefix}_`) && ID_BODY.test(value.slice(prefix.length + 1));
}

/** The millisecond timestamp an id was made at. */
export function idTime(id: string): number {
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11);
  let ms = 0;
  for (const ch of body) ms = ms * 32 + ALPHABET.indexOf(ch);
  return ms;
}
