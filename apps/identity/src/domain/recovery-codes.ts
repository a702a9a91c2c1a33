import { createHmac, randomInt } from 'node:crypto';
import { deriveKey } from './sealing';

// Recovery codes without I/O: single-use second factors a user writes down. They are shown once and stored only
// as an HMAC under a key derived from SERVER_SECRET, so a copy of the table alone does not let anyone test guesses.

/** Codes per set (a regeneration replaces the whole set). */
export const RECOVERY_CODE_COUNT = 10;

/** Lowercase letters and digits without the look-alikes 0/o, 1/l/i: 31 symbols. */
export const RECOVERY_CODE_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** Characters per code: 10 · log2(31) ≈ 49.5 bits of entropy each. */
export const RECOVERY_CODE_LENGTH = 10;

/** The alphabet in either case, ASCII only (a Unicode lowercase mapping such as the Kelvin sign's to k is not a code). */
const TYPED = new RegExp(`^[${RECOVERY_CODE_ALPHABET}${RECOVERY_CODE_ALPHABET.toUpperCase()}]*$`);
const MAX_INPUT_LENGTH = 64;

function randomCode(): string {
  let code = '';
  for (let i = 0; i < RECOVERY_CODE_LENGTH; i++) code += RECOVERY_CODE_ALPHABET[randomInt(RECOVERY_CODE_ALPHABET.length)];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

/** `n` distinct codes, each `xxxxx-xxxxx`, every character drawn uniformly from the alphabet by a CSPRNG. */
export function generateRecoveryCodes(n = RECOVERY_CODE_COUNT): string[] {
  if (!Number.isSafeInteger(n) || n < 0 || n > 1000) throw new RangeError('generateRecoveryCodes: n must be 0 to 1000');
  const codes = new Set<string>();
  while (codes.size < n) codes.add(randomCode());
  return [...codes];
}

/**
 * The form of a typed code that is hashed: lowercase, spaces and hyphens removed; '' for input longer than 64
 * characters or with any character outside the alphabet (never a code).
 */
export function normalizeRecoveryCode(input: string): string {
  if (typeof input !== 'string' || input.length > MAX_INPUT_LENGTH) return '';
  const code = input.replace(/[ -]/g, '');
  return TYPED.test(code) ? code.toLowerCase() : '';
}

/** The stored form of a code: HMAC-SHA-256 of its normalized form under a key derived for recovery codes. */
export function hashRecoveryCode(code: string, serverSecret: string): Buffer {
  return createHmac('sha256', deriveKey(serverSecret, 'mfa-recovery-code')).update(normalizeRecoveryCode(code)).digest();
}
