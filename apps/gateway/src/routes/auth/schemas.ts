import { z } from 'zod';

const required = (what: string) => ({ error: (i: { input: unknown }) => (i.input === undefined ? 'is required' : `must be ${what}`) });

/** A password as given to log in: its type and bound (a wrong password is a 401, not a 400). */
export const passwordField = z.string(required('a string')).max(256, 'must be at most 256 characters');

/** The identity service's PASSWORD_MIN: a new password has at least this many characters (code points). */
export const PASSWORD_MIN_LENGTH = 12;

/**
 * A new password: also its length here, so that it is reported with the body's other faults; whether it is
 * common or the user's email needs the identity service (reported by it, field password).
 */
export const newPasswordField = passwordField
  .refine((v) => [...v].length >= PASSWORD_MIN_LENGTH, `must be at least ${PASSWORD_MIN_LENGTH} characters`)
  .meta({ minLength: PASSWORD_MIN_LENGTH });
export const emailField = z.string(required('a string')).max(320, 'is too long');

export const loginBody = z.strictObject({ email: emailField, password: passwordField });
export const resetRequestBody = z.strictObject({ email: emailField });
export const resetConfirmBody = z.strictObject({
  token: z.string(required('a string')).max(512, 'is too long'),
  password: newPasswordField,
});
export const setPasswordBody = z.strictObject({ password: newPasswordField });
