import { z } from 'zod';

const required = (what: string) => ({ error: (i: { input: unknown }) => (i.input === undefined ? 'is required' : `must be ${what}`) });

/** Passwords are checked by the identity service (length, common, own email); here only their type and bound. */
export const passwordField = z.string(required('a string')).max(256, 'must be at most 256 characters');
export const emailField = z.string(required('a string')).max(320, 'is too long');

export const loginBody = z.strictObject({ email: emailField, password: passwordField });
export const resetRequestBody = z.strictObject({ email: emailField });
export const resetConfirmBody = z.strictObject({
  token: z.string(required('a string')).max(512, 'is too long'),
  password: passwordField,
});
export const setPasswordBody = z.strictObject({ password: passwordField });
