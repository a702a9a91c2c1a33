import { z } from 'zod';
import { nameSchema } from './validation';

/** Rules of SSO connection fields, applied by the gateway at the edge and again by identity. */
export const ssoLimits = { maxDomains: 20, metadataMaxBytes: 256 * 1024 } as const;

const DOMAIN_PATTERN = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$/;

/** A connection's display name: the rules of a user's name. */
export const ssoNameSchema = nameSchema;

/**
 * Where the browser goes after an IdP-initiated login (the user is then signed in on the OAuth login page): the
 * app's login initiation URL (OpenID Connect `initiate_login_uri`), which starts an authorization request.
 * Empty: IdP-initiated logins answer JSON.
 */
export const ssoInitiateLoginUrlSchema = z
  .string({ error: 'must be a string' })
  .max(2048, 'must be at most 2048 characters')
  .regex(/^(https?:\/\/[^\s#]+)?$/, 'must be an absolute http(s) URL without fragment (or empty to clear)');

/** Email domains routed to the connection: lower case host names, no duplicates. */
export const ssoDomainsSchema = z
  .array(z.string({ error: 'must be a string' }).regex(DOMAIN_PATTERN, 'must be a lower case domain name such as example.com'), {
    error: 'must be an array of strings',
  })
  .max(ssoLimits.maxDomains, `at most ${ssoLimits.maxDomains} domains`)
  .min(1, 'at least one domain')
  .refine((d) => new Set(d).size === d.length, 'must not contain duplicates')
  .meta({ uniqueItems: true });

/** Names of the assertion attributes holding the email and display name (the NameID is the default email). */
export const attributeMappingSchema = z.strictObject({
  email: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(256, 'must be at most 256 characters').optional(),
  name: z.string({ error: 'must be a string' }).min(1, 'must not be empty').max(256, 'must be at most 256 characters').optional(),
});

export type AttributeMapping = z.infer<typeof attributeMappingSchema>;
