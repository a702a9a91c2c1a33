import type { identity } from '@secsvc/proto';
import { AppError, isId, NOT_BLANK, ROLE_PATTERN } from '@secsvc/shared';
import { z } from 'zod';

const required = (what: string) => ({ error: (i: { input: unknown }) => (i.input === undefined ? 'is required' : `must be ${what}`) });
const timestamp = z.string().describe('ISO 8601 UTC');

export const userFactorsParams = z.object({ id: z.string() });
export const factorParams = z.object({ id: z.string(), factorId: z.string() });

/** A factor's name: 1 to 64 characters (code points, as the document's maxLength counts), not blank, no control characters. */
export const factorName = z
  .string(required('a string'))
  .regex(NOT_BLANK, 'must not be blank')
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  .regex(/^[^\u0000-\u001f\u007f]*$/, 'must not contain control characters')
  .refine((v) => [...v].length <= 64, 'must be at most 64 characters')
  .meta({ maxLength: 64 });

/** A WebAuthn response as the browser's toJSON() gives it (checked by the identity service). */
export const credentialField = z
  .record(z.string(), z.unknown(), required('an object (the JSON of the WebAuthn credential)'))
  .describe('The PublicKeyCredential as JSON (RegistrationResponseJSON or AuthenticationResponseJSON)');

export const totpCode = z.string(required('a string')).max(16, 'must be at most 16 characters');

export const enrollTotpBody = z.strictObject({ name: factorName.optional() });
export const confirmTotpBody = z.strictObject({ code: totpCode });
export const registerPasskeyBody = z.strictObject({
  challengeId: z.string(required('a string')).max(64, 'is too long'),
  name: factorName.optional(),
  credential: credentialField,
});
export const renameFactorBody = z.strictObject({ name: factorName });
export const mfaSettingsBody = z.strictObject({
  required: z.enum(['off', 'all', 'roles'], required('off, all or roles')),
  roles: z
    .array(z.string(required('a string')).regex(ROLE_PATTERN, 'must be a role such as role_admin'), required('an array of roles'))
    .max(100, 'must have at most 100 roles')
    .optional(),
});

/** A factor's proof: a TOTP code, a recovery code, or a passkey's assertion. */
export const proofShape = {
  type: z.enum(['totp', 'recovery_code', 'passkey'], required('totp, recovery_code or passkey')),
  code: z.string(required('a string')).max(64, 'is too long').optional(),
  credential: credentialField.optional(),
};

export const factorForm = z.object({
  id: z.string().describe('mfa_<id>'),
  userId: z.string(),
  type: z.enum(['totp', 'passkey', 'recovery_codes']),
  name: z.string(),
  confirmed: z.boolean().describe('TOTP: false until a first code was given'),
  createdAt: timestamp,
  lastUsedAt: timestamp.nullable(),
  remainingCodes: z.number().int().optional().describe('recovery_codes: unused codes left'),
  backedUp: z.boolean().optional().describe('passkey: synced by its provider'),
});

export function factorOf(f: identity.MfaFactor): z.infer<typeof factorForm> {
  return {
    id: f.id,
    userId: f.userId,
    type: f.type as 'totp',
    name: f.name,
    confirmed: f.confirmed,
    createdAt: f.createdAt!,
    lastUsedAt: f.lastUsedAt ?? null,
    ...(f.type === 'recovery_codes' ? { remainingCodes: f.remainingCodes } : {}),
    ...(f.type === 'passkey' ? { backedUp: f.backedUp } : {}),
  };
}

export const totpEnrollmentForm = z.object({
  factor: factorForm,
  secret: z.string().describe('base32, shown only in this response'),
  otpauthUri: z.string().describe('otpauth://totp/...: what the QR code holds'),
  qrCode: z.string().describe('data:image/svg+xml;base64,... QR code of otpauthUri'),
});

export const totpEnrollmentOf = (e: identity.TotpEnrollment): z.infer<typeof totpEnrollmentForm> => ({
  factor: factorOf(e.factor!),
  secret: e.secret,
  otpauthUri: e.otpauthUri,
  qrCode: e.qrCode,
});

export const passkeyChallengeForm = z.object({
  challengeId: z.string().describe('mfc_<id>: send it back with the credential'),
  expiresAt: timestamp,
  publicKey: z.record(z.string(), z.unknown()).describe('Options for navigator.credentials.create() or .get() (the JSON form: PublicKeyCredentialCreationOptionsJSON / RequestOptionsJSON)'),
});

export const passkeyChallengeOf = (c: identity.PasskeyChallenge): z.infer<typeof passkeyChallengeForm> => ({
  challengeId: c.challengeId,
  expiresAt: c.expiresAt!,
  publicKey: JSON.parse(c.optionsJson) as Record<string, unknown>,
});

export const mfaSettingsForm = z.object({
  required: z.enum(['off', 'all', 'roles']),
  roles: z.array(z.string()),
  updatedAt: timestamp,
});

export const mfaSettingsOf = (s: identity.MfaSettings) => ({ required: s.required as 'off', roles: s.roles, updatedAt: s.updatedAt! });

/** A user id and factor id of the path, or 404 (nothing else can exist under a malformed id). */
export function checkIds(userId: string, factorId?: string): void {
  if (!isId('user', userId)) throw AppError.notFound('User');
  if (factorId !== undefined && !isId('mfa', factorId)) throw AppError.notFound('Factor');
}
