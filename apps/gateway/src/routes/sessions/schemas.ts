import type { identity } from '@secsvc/proto';
import { durationSchema, metadataSchema } from '@secsvc/shared';
import { z } from 'zod';

export const createSessionBody = z.strictObject({
  userId: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(64),
  expiresIn: durationSchema(60, 30 * 86_400, '1m to 30d').optional(),
  metadata: metadataSchema.optional(),
});

export const tokenBody = z.strictObject({
  token: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).min(1, 'is required').max(512, 'is too long'),
});

const timestamp = z.string().describe('ISO 8601 UTC');

export const sessionForm = z.object({
  id: z.string().describe('ses_<id>'),
  userId: z.string(),
  createdAt: timestamp,
  expiresAt: timestamp,
  metadata: z.record(z.string(), z.unknown()),
  amr: z.array(z.string()).describe('How the user authenticated (RFC 8176: pwd, otp, hwk, user, mfa); empty for sessions the application opened'),
  acr: z.string().describe('urn:secsvc:acr:1fa (one factor) or urn:secsvc:acr:mfa; empty when unknown'),
  mfaAt: timestamp.nullable().describe('When the latest MFA of this session was completed; null when none'),
});

export const createdSessionForm = sessionForm.extend({ token: z.string().describe('shown only in this response') });

export function sessionOf(s: identity.Session): z.infer<typeof sessionForm> {
  return {
    id: s.id,
    userId: s.userId,
    createdAt: s.createdAt!,
    expiresAt: s.expiresAt!,
    metadata: s.metadataJson ? (JSON.parse(s.metadataJson) as Record<string, unknown>) : {},
    amr: s.amr,
    acr: s.acr,
    mfaAt: s.mfaAt ?? null,
  };
}
