import type { identity } from '@secsvc/proto';
import { durationSchema, NOT_BLANK } from '@secsvc/shared';
import { z } from 'zod';
import { evenWithFaultyFields, integerSchema } from '../body-rules';

/** The identity service's bound of a key's expiry. (The checks below pass an unparsable value: the format check names it.) */
const TEN_YEARS_MS = 10 * 365 * 24 * 3600 * 1000;

export const apiKeyIdParams = z.object({ id: z.string() });

export const createApiKeyBody = z
  .strictObject({
    name: z.string({ error: 'must be a string' }).max(100, 'must be at most 100 characters').regex(NOT_BLANK, 'must not be empty'),
    type: z.enum(['secret', 'public', 'test'], { error: 'must be secret, public or test' }),
    plan: z.enum(['free', 'pro', 'enterprise'], { error: 'must be free, pro or enterprise' }).optional(),
    rateLimit: integerSchema(1, 1_000_000, 'must be an integer from 1 to 1000000').optional(),
    expiresAt: z.iso
      .datetime({ offset: true, error: 'must be an ISO 8601 timestamp' })
      .refine((v) => !(Date.parse(v) <= Date.now()), 'must be a timestamp in the future')
      .refine((v) => !(Date.parse(v) > Date.now() + TEN_YEARS_MS), 'must be within 10 years')
      .optional()
      .describe('in the future, within 10 years'),
  })
  .superRefine((b, ctx) => {
    if (b.rateLimit !== undefined && b.plan !== 'enterprise') ctx.addIssue({ code: 'custom', path: ['rateLimit'], message: 'a custom limit needs the enterprise plan' });
  }, evenWithFaultyFields)
  // The same rule, for the document: rateLimit only with plan enterprise.
  .meta({ anyOf: [{ properties: { rateLimit: false } }, { required: ['plan'], properties: { plan: { const: 'enterprise' } } }] });

export const rotateApiKeyBody = z.strictObject({
  gracePeriod: durationSchema(0, 7 * 86_400, '0s to 7d').optional(),
});

const timestamp = z.string().describe('ISO 8601 UTC');

export const apiKeyForm = z.object({
  id: z.string().describe('key_<id>'),
  name: z.string(),
  type: z.enum(['secret', 'public', 'test']),
  environment: z.enum(['live', 'test']),
  plan: z.enum(['free', 'pro', 'enterprise']),
  rateLimit: z.number().int().nullable().describe('requests per minute; null = the plan default'),
  maskedKey: z.string().describe('prefix + last 4 characters, e.g. svc_sk_…a1b2'),
  createdAt: timestamp,
  lastUsedAt: timestamp.nullable().describe('updated at most once a minute'),
  expiresAt: timestamp.nullable(),
  revokedAt: timestamp.nullable(),
  previousKeyExpiresAt: timestamp.nullable().describe('end of the grace period of the previous secret after a rotation'),
});

export const createdApiKeyForm = apiKeyForm.extend({ key: z.string().describe('the full key, shown only in this response') });

export function apiKeyOf(k: identity.ApiKey): z.infer<typeof apiKeyForm> {
  return {
    id: k.id,
    name: k.name,
    type: k.type as 'secret',
    environment: k.environment as 'live',
    plan: k.plan as 'free',
    rateLimit: k.rateLimit ?? null,
    maskedKey: `${k.prefix}…${k.last4}`,
    createdAt: k.createdAt!,
    lastUsedAt: k.lastUsedAt ?? null,
    expiresAt: k.expiresAt ?? null,
    revokedAt: k.revokedAt ?? null,
    previousKeyExpiresAt: k.previousExpiresAt ?? null,
  };
}
