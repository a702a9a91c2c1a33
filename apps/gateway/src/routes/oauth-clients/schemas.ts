import type { identity } from '@secsvc/proto';
import { AppError, NOT_BLANK, OAUTH_SCOPES, type FieldError } from '@secsvc/shared';
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
 * What an OAuth access token may do to clients (API keys and sessions are bounded by the policies only):
 * - give a client only scopes the token has itself (a token with write:clients alone would otherwise make a
 *   client with write:api_keys), and change or delete only clients whose scopes it has;
 * - never make a client first party, nor change or delete one: a first-party client skips consent, so a token
 *   that could point one's redirect URIs elsewhere would collect other users' codes without their consent.
 * `existing` is the client being changed or deleted. Each refusal is a 403 naming the field at fault.
 */
export function refuseTokenClientChange(principal: Pick<Principal, 'scopes'>, change: { scopes?: readonly string[]; firstParty?: boolean }, existing?: identity.OAuthClient): void {
  const held = principal.scopes;
  if (!held) return;
  const faults: FieldError[] = [];
  if (existing?.firstParty) faults.push({ field: 'id', message: 'a first-party client cannot be changed or deleted with an OAuth access token (use an API key)' });
  if (change.firstParty) faults.push({ field: 'firstParty', message: 'an OAuth access token cannot make a first-party client (use an API key)' });
  (change.scopes ?? []).forEach((scope, i) => {
    if (!held.includes(scope)) faults.push({ field: `scopes[${i}]`, message: `your access token does not have ${scope}, so it cannot give it to a client` });
  });
  const beyond = (existing?.scopes ?? []).filter((s) => !held.includes(s));
  if (beyond.length) faults.push({ field: 'id', message: `the client has ${beyond.join(', ')}, which your access token does not have` });
  if (faults.length) throw new AppError('forbidden', 'An OAuth access token can manage only clients no stronger than itself, and no first-party client', faults);
}
