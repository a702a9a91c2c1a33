import type { Response } from 'express';
import type { identity } from '@secsvc/proto';
import type { AppError } from '@secsvc/shared';
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
