import type { identity } from '@secsvc/proto';
import { AppError, NOT_BLANK, OAUTH_SCOPES } from '@secsvc/shared';
import { z } from 'zod';
import type { Principal } from '../../context';
import { atLeastOne, evenWithFaultyFields } from '../body-rules';

export const clientIdParams = z.object({ id: z.string() });

const unique = <T extends z.ZodArray>(list: T) => list.refine((v) => new Set(v).size === v.length, 'must not contain duplicates').meta({ uniqueItems: true });

/**
 * Absolute http(s) URLs, https unless the host is loopback (RFC 8252 7.3), no fragment, wildcard or
 * credentials; identity also requires the canonical form the URL standard writes (not expressible here).
 */
const redirectUri = z
  .string({ error: 'each must be an absolute URL' })
  .max(2000, 'must be at most 2000 characters')
  .regex(/^(https:\/\/[^/?#*@\s]+|http:\/\/(127\.0\.0\.1|\[::1\]|localhost)(:\d{1,5})?)([/?][^#*\s]*)?$/, 'must be an https URL (http only for loopback hosts), without fragment, wildcard or credentials');
const redirectUris = unique(z.array(redirectUri, { error: 'must be an array of strings' }).max(10, 'at most 10 entries'));
const scopes = unique(z.array(z.enum(OAUTH_SCOPES, { error: `unknown scope; one of ${OAUTH_SCOPES.join(', ')}` }), { error: 'must be an array of strings' }).max(20, 'at most 20 entries'));
const name = z.string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') }).max(100, 'must be at most 100 characters').regex(NOT_BLANK, 'must not be empty');

export const createClientBody = z
  .strictObject({
    name,
    type: z.enum(['public', 'confidential'], { error: 'must be public or confidential' }),
    redirectUris: redirectUris.optional(),
    scopes: scopes.min(1, 'at least one scope'),
    firstParty: z.boolean({ error: 'must be a boolean' }).optional(),
  })
  .superRefine((b, ctx) => {
    if (b.type === 'public' && !(Array.isArray(b.redirectUris) && b.redirectUris.length > 0)) {
      ctx.addIssue({ code: 'custom', path: ['redirectUris'], message: 'a public client needs at least one redirect URI' });
    }
  }, evenWithFaultyFields)
  // The same rule, for the document: a public client lists at least one redirect URI.
  .meta({ anyOf: [{ properties: { type: { const: 'confidential' } } }, { required: ['redirectUris'], properties: { redirectUris: { minItems: 1 } } }] });

export const updateClientBody = atLeastOne(
  z.strictObject({
    name: name.optional(),
    redirectUris: redirectUris.optional(),
    scopes: scopes.min(1, 'at least one scope').optional(),
    firstParty: z.boolean({ error: 'must be a boolean' }).optional(),
  }),
  'give at least one of name, redirectUris, scopes, firstParty',
);

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

/**
 * An OAuth access token cannot register or change a client so that it may ask for more than the token itself
 * has: a client's tokens would otherwise be a way round the consent that limited this one (a token with
 * write:clients alone making a client with write:api_keys). API keys and sessions are bounded by the policies only.
 */
export function refuseScopeEscalation(scopes: readonly string[] | undefined, principal: Pick<Principal, 'scopes'>): void {
  const held = principal.scopes;
  if (!held || !scopes) return;
  const beyond = scopes.flatMap((scope, i) => (held.includes(scope) ? [] : [{ field: `scopes[${i}]`, message: `your access token does not have ${scope}, so it cannot give it to a client` }]));
  if (beyond.length) throw new AppError('forbidden', 'An OAuth access token can give a client only scopes it has itself', beyond);
}
