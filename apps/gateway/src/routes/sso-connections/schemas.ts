import type { identity } from '@secsvc/proto';
import { AppError, attributeMappingSchema, rolesSchema, ssoDomainsSchema, ssoInitiateLoginUrlSchema, ssoLimits, ssoNameSchema } from '@secsvc/shared';
import { X509Certificate } from 'node:crypto';
import { z } from 'zod';
import { idpLogoutService, parseIdpMetadata, type IdpMetadata } from '../../sso/metadata';
import { atLeastOne } from '../body-rules';
import { spUrls } from '../../sso/sp';

export const connectionIdParams = z.object({ id: z.string() });

/** The IdP's SAML metadata, parsed and checked as part of the body (its faults come with the body's others). */
const metadataXml = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
  .min(1, 'must not be empty')
  .max(ssoLimits.metadataMaxBytes, `must be at most ${ssoLimits.metadataMaxBytes} characters`)
  .transform((xml, ctx): { xml: string; idp: IdpMetadata } => {
    try {
      return { xml, idp: parseIdpMetadata(xml) };
    } catch (err) {
      if (!(err instanceof AppError) || err.code !== 'invalid_request') throw err;
      for (const d of err.details) ctx.addIssue({ code: 'custom', message: d.message });
      return z.NEVER;
    }
  });

const fields = {
  name: ssoNameSchema,
  idpMetadataXml: metadataXml,
  domains: ssoDomainsSchema,
  defaultRoles: rolesSchema.optional(),
  attributeMapping: attributeMappingSchema.optional(),
  allowIdpInitiated: z.boolean({ error: 'must be a boolean' }).optional(),
  initiateLoginUrl: ssoInitiateLoginUrlSchema.optional(),
  allowSha1Signatures: z.boolean({ error: 'must be a boolean' }).optional(),
  requireMfa: z.boolean({ error: 'must be a boolean' }).optional(),
};

export const createConnectionBody = z.strictObject(fields);

export const updateConnectionBody = atLeastOne(
  z.strictObject({
    name: fields.name.optional(),
    idpMetadataXml: fields.idpMetadataXml.optional(),
    domains: fields.domains.optional(),
    defaultRoles: fields.defaultRoles,
    attributeMapping: fields.attributeMapping,
    allowIdpInitiated: fields.allowIdpInitiated,
    initiateLoginUrl: fields.initiateLoginUrl,
    allowSha1Signatures: fields.allowSha1Signatures,
    requireMfa: fields.requireMfa,
  }),
  'give at least one of name, idpMetadataXml, domains, defaultRoles, attributeMapping, allowIdpInitiated, initiateLoginUrl, allowSha1Signatures, requireMfa',
);

const timestamp = z.string().describe('ISO 8601 UTC');

export const connectionForm = z.object({
  id: z.string().describe('sso_<id>'),
  name: z.string(),
  environment: z.enum(['live', 'test']),
  domains: z.array(z.string()).describe('email domains routed to this identity provider; its assertions may only name users of these domains'),
  defaultRoles: z.array(z.string()).describe('roles of users created just in time'),
  attributeMapping: z.object({ email: z.string().optional(), name: z.string().optional() }).describe('assertion attributes holding the email and name (default: the NameID is the email)'),
  allowIdpInitiated: z.boolean().describe('accept responses without InResponseTo (IdP-initiated login); off by default'),
  initiateLoginUrl: z
    .string()
    .nullable()
    .describe("after an IdP-initiated login the browser, signed in on the OAuth login page, goes here (the app's OpenID Connect initiate_login_uri, with iss); null: the ACS answers JSON"),
  allowSha1Signatures: z
    .boolean()
    .describe('accept RSA-SHA1 signatures and SHA-1 digests from this IdP (legacy IdPs only; each use is logged); off by default: SHA-1 is refused on every SAML message'),
  requireMfa: z
    .boolean()
    .describe(
      "a login whose assertion does not say the IdP did MFA (AuthnContextClassRef such as https://refeds.org/profile/mfa) needs the user's own second factor here (TOTP, passkey or recovery code) before a session opens; off by default",
    ),
  idp: z.object({
    entityId: z.string(),
    ssoUrl: z.string(),
    sloUrl: z.string().optional().describe("the IdP's HTTP-Redirect SingleLogoutService, when its metadata has one"),
    certificates: z.array(z.object({ validTo: timestamp, fingerprint256: z.string() })),
  }),
  sp: z.object({ entityId: z.string(), metadataUrl: z.string(), acsUrl: z.string(), loginUrl: z.string(), sloUrl: z.string().describe('single logout: where the IdP sends LogoutRequests') }),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export function connectionOf(c: identity.SsoConnection, baseUrl: string | undefined): z.infer<typeof connectionForm> {
  const logout = idpLogoutService(c.idpMetadataXml);
  const { entityId, metadataUrl, acsUrl, loginUrl, sloUrl } = spUrls(baseUrl ?? '', c.id);
  return {
    id: c.id,
    name: c.name,
    environment: c.environment as 'live',
    domains: c.domains,
    defaultRoles: c.defaultRoles,
    attributeMapping: JSON.parse(c.attributeMappingJson || '{}') as { email?: string; name?: string },
    allowIdpInitiated: c.allowIdpInitiated,
    initiateLoginUrl: c.initiateLoginUrl || null,
    allowSha1Signatures: c.allowSha1Signatures,
    requireMfa: c.requireMfa,
    idp: {
      entityId: c.idpEntityId,
      ssoUrl: c.idpSsoUrl,
      ...(logout && { sloUrl: logout.url }),
      certificates: c.idpCertificates.map(certificateSummary),
    },
    sp: { entityId, metadataUrl, acsUrl, loginUrl, sloUrl },
    createdAt: c.createdAt!,
    updatedAt: c.updatedAt!,
  };
}

function certificateSummary(pem: string): { validTo: string; fingerprint256: string } {
  const cert = new X509Certificate(pem);
  return { validTo: new Date(cert.validTo).toISOString(), fingerprint256: cert.fingerprint256 };
}
