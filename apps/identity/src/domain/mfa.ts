import { createHmac } from 'node:crypto';
import { ACR_MFA, ACR_SINGLE_FACTOR } from '@secsvc/shared';
import { deriveKey } from './sealing';

// Multi-factor authentication rules without I/O: what a session records of how its user authenticated (RFC 8176
// amr values and an acr), who the environment's settings require MFA of, and the login challenge's token.

/** The authentication context classes (acr of sessions, ID and access tokens), from @secsvc/shared. */
export { ACR_MFA, ACR_SINGLE_FACTOR };

/** How a factor proves itself: a TOTP code, a recovery code, a passkey's assertion. */
export type ProofType = 'totp' | 'recovery_code' | 'passkey';

/** The RFC 8176 methods of each proof: one-time passwords (`otp`), a hardware-bound key with user verification (`hwk`, `user`). */
const PROOF_AMR: Record<ProofType, string[]> = { totp: ['otp'], recovery_code: ['otp'], passkey: ['hwk', 'user'] };

/**
 * The amr and acr of a session after `proofs` on top of `before` (['pwd'] after a password): the methods, in
 * first-use order, plus `mfa` once two factors were used, or a passkey (possession with user verification).
 */
export function authenticationOf(before: string[], proof: ProofType): { amr: string[]; acr: string } {
  const methods = [...new Set([...before.filter((m) => m !== 'mfa'), ...PROOF_AMR[proof]])];
  return { amr: [...methods, 'mfa'], acr: ACR_MFA };
}

/** A password alone. */
export const PASSWORD_ONLY = { amr: ['pwd'], acr: ACR_SINGLE_FACTOR, mfa: false };

export const MFA_REQUIRED_MODES = ['off', 'all', 'roles'] as const;
export type MfaRequiredMode = (typeof MFA_REQUIRED_MODES)[number];

/** Whether the environment's settings require MFA of a user with these roles. */
export function mfaRequiredOf(settings: { required: MfaRequiredMode; roles: string[] }, userRoles: string[]): boolean {
  if (settings.required === 'all') return true;
  if (settings.required === 'roles') return userRoles.some((r) => settings.roles.includes(r));
  return false;
}

/** The most factors one user may have (passkeys on many devices, a TOTP or two, one recovery set). */
export const MAX_FACTORS_PER_USER = 20;

/** A login challenge lives 5 minutes, accepts at most 5 wrong answers, and WebAuthn ceremonies 5 minutes. */
export const CHALLENGE_TTL_SECONDS = 300;
export const CHALLENGE_MAX_ATTEMPTS = 5;

const MFA_TOKEN = /^mft_[A-Za-z0-9_-]{43}$/;
export const looksLikeMfaToken = (token: string) => MFA_TOKEN.test(token);

/** The stored form of a login challenge's token: an HMAC under a key derived for it from SERVER_SECRET. */
export function hashMfaToken(token: string, serverSecret: string): Buffer {
  return createHmac('sha256', deriveKey(serverSecret, 'mfa-login-token')).update(token).digest();
}

/** The key TOTP secrets are sealed with (bound to each factor's id as associated data). */
export const totpSealingKey = (serverSecret: string) => deriveKey(serverSecret, 'mfa-totp-secret');

/** Factor names: 1 to 64 characters, no control characters. */
export function factorNameProblem(name: string): string | undefined {
  if ([...name].length > 64) return 'must be at most 64 characters';
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'must not contain control characters';
  if (!name.trim()) return 'must not be blank';
  return undefined;
}
