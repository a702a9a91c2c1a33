import type { Response } from 'express';
import type { identity } from '@secsvc/proto';
import type { AppError } from '@secsvc/shared';
import { jsonDataBlock } from './pages';
import type { paramsOf } from './http';

// The answers of the second-step forms (the OAuth login's and step-up's, and the SAML login's): what a form
// sent, and what the page says when identity refused it.

type Params = ReturnType<typeof paramsOf>;

/** The largest passkey assertion (JSON) a form may carry. */
export const MAX_CREDENTIAL_CHARS = 16_384;

/** The proof a second-step form sent (mfa_type, code or credential), or what the user must fix. */
export function proofOf(p: Params): identity.MfaProof | { error: string } {
  const type = p.get('mfa_type');
  if (type === 'totp') {
    const code = p.get('code').replace(/\s/g, '');
    return /^\d{6}$/.test(code) ? { type, code, credentialJson: '' } : { error: 'Enter the 6-digit code from your authenticator app' };
  }
  if (type === 'recovery_code') {
    const code = p.get('code').trim();
    return code && code.length <= 64 ? { type, code, credentialJson: '' } : { error: 'Enter one of your recovery codes' };
  }
  if (type === 'passkey') {
    const credential = p.get('credential');
    return credential && credential.length <= MAX_CREDENTIAL_CHARS ? { type, code: '', credentialJson: credential } : { error: 'Your passkey could not be used; try again' };
  }
  return { error: 'Choose how to confirm it is you' };
}

/** What the page says when identity refused a proof (and the status), or undefined for a fault to pass on. */
export function refusalOf(e: AppError, type: string, res: Response): { error: string; status: number } | undefined {
  if (e.code === 'rate_limited') {
    res.setHeader('Retry-After', String(e.retryAfterSeconds ?? 60));
    return { error: 'Too many failed attempts; try again later', status: 429 };
  }
  if (e.code === 'unauthorized') {
    const error =
      type === 'totp'
        ? 'That code is not right, or it was used already; try the next one'
        : type === 'recovery_code'
          ? 'That recovery code is not valid, or it was used already'
          : 'Your passkey was not accepted; try again or use another way';
    return { error, status: 401 };
  }
  if (e.code === 'invalid_request') {
    return { error: type === 'passkey' ? 'Your passkey could not be used; try again' : 'Check what you entered and try again', status: 400 };
  }
  return undefined;
}

/** What a second-step page carries in hidden fields so that a refused answer can show it again. */
export interface MfaFormState {
  mfaToken: string;
  /** The forms to offer: totp, recovery_code. */
  methods: string[];
  /** The challenge's passkey options (the user's passkeys), or ''. */
  passkeyOptionsJson: string;
}

const METHODS = ['totp', 'recovery_code'];

/** The largest passkey options a form carries back (a user may have 20 passkeys with long credential ids). */
const MAX_PASSKEY_OPTIONS_CHARS = 32_768;

/** The forms a challenge calls for: a TOTP code, a recovery code while some are left, and its passkey options. */
export function mfaStateOfChallenge(c: identity.MfaChallenge): MfaFormState {
  const methods = [
    ...(c.factors.some((f) => f.type === 'totp') ? ['totp'] : []),
    ...(c.factors.some((f) => f.type === 'recovery_codes' && f.remainingCodes > 0) ? ['recovery_code'] : []),
  ];
  return { mfaToken: c.mfaToken, methods, passkeyOptionsJson: c.passkeyOptionsJson };
}

/** The same, as a refused answer's form carried it back (anything unusable dropped). */
export function mfaStateOfForm(p: Params): MfaFormState {
  const options = p.get('passkey_options');
  return {
    mfaToken: p.get('mfa_token').slice(0, 128),
    methods: p.get('mfa_methods').split(' ').filter((m) => METHODS.includes(m)),
    passkeyOptionsJson: options.length <= MAX_PASSKEY_OPTIONS_CHARS && jsonDataBlock(options) !== undefined ? options : '',
  };
}
