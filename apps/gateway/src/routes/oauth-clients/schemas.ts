import type { identity } from '@secsvc/proto';
import { z } from 'zod';

export const clientIdParams = z.object({ id: z.string() });

const stringList = (what: string, max: number) =>
  z.array(z.string({ error: `each must be ${what}` }).max(2000, 'must be at most 2000 characters'), { error: 'must be an array of strings' }).max(max, `at most ${max} entries`);

export const createClientBody = z.strictObject({
  name: z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
  type: z.enum(['public', 'confidential'], { error: 'must be public or confidential' }),
  redirectUris: stringList('an absolute URL', 10).optional(),
  scopes: stringList('a scope', 20).min(1, 'at least one scope'),
  firstParty: z.boolean({ error: 'must be a boolean' }).optional(),
});

export const updateClientBody = z.strictObject({
  name: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(100, 'must be at most 100 characters').optional(),
  redirectUris: stringList('an absolute URL', 10).optional(),
  scopes: stringList('a scope', 20).optional(),
  firstParty: z.boolean({ error: 'must be a boolean' }).optional(),
});

const timestamp = z.string().describe('ISO 8601 UTC');

export const clientForm = z.object({
  clientId: z.string().describe('cli_<id>'),
  name: z.string(),
  type: z.enum(['public', 'confidential']),
  environment: z.enum(['live', 'test']),
  redirectUris: z.array(z.string()).describe('matched exactly; https, or http for loopback hosts'),
  scopes: z.array(z.string()).describe('the scopes the client may ask for'),
  firstParty: z.boolean().describe('first-party clients skip the consent page'),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const createdClientForm = clientForm.extend({
  clientSecret: z.string().optional().describe('confidential clients: shown only in this response, stored as a hash'),
});

export function clientOf(c: identity.OAuthClient): z.infer<typeof clientForm> {
  return {
    clientId: c.id,
    name: c.name,
    type: c.type as 'public',
    environment: c.environment as 'live',
    redirectUris: c.redirectUris,
    scopes: c.scopes,
    firstParty: c.firstParty,
    createdAt: c.createdAt!,
    updatedAt: c.updatedAt!,
  };
}
