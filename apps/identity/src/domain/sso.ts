import { attributeMappingSchema, AppError, parseOrThrow, rolesSchema, ssoDomainsSchema, ssoInitiateLoginUrlSchema, ssoNameSchema, type AttributeMapping } from '@secsvc/shared';

/**
 * Checks the connection fields identity stores (the gateway has already parsed the metadata and validated
 * its certificates); returns the attribute mapping as canonical JSON text.
 */
export function validateConnectionFields(f: {
  name?: string;
  domains?: string[];
  defaultRoles?: string[];
  attributeMappingJson?: string;
  idpCertificates?: string[];
  initiateLoginUrl?: string;
}): string | undefined {
  if (f.name !== undefined) parseOrThrow(ssoNameSchema, f.name, 'name');
  if (f.initiateLoginUrl !== undefined) parseOrThrow(ssoInitiateLoginUrlSchema, f.initiateLoginUrl, 'initiateLoginUrl');
  if (f.domains !== undefined) parseOrThrow(ssoDomainsSchema, f.domains, 'domains');
  if (f.defaultRoles !== undefined) parseOrThrow(rolesSchema, f.defaultRoles, 'defaultRoles');
  if (f.idpCertificates !== undefined && f.idpCertificates.length === 0) throw AppError.field('idpMetadataXml', 'must contain a signing certificate');
  if (f.attributeMappingJson === undefined) return undefined;
  return JSON.stringify(parseAttributeMapping(f.attributeMappingJson));
}

export function parseAttributeMapping(text: string): AttributeMapping {
  if (text === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw AppError.field('attributeMapping', 'must be valid JSON');
  }
  return parseOrThrow(attributeMappingSchema, value, 'attributeMapping');
}

/** The email domain of an address, lower case (empty when there is none). */
export function emailDomain(email: string): string {
  const at = email.lastIndexOf('@');
  return at < 0 ? '' : email.slice(at + 1).toLowerCase();
}

/**
 * The authentication context classes (SAML AuthnContextClassRef, and the values of Microsoft's
 * authnmethodsreferences attribute the gateway passes with them) that say the IdP did multi-factor
 * authentication: Microsoft's (AD FS, Entra ID), the SAML 2.0 classes that need more than one factor or a
 * hardware token, and the REFEDS MFA profile.
 */
export const MFA_AUTHN_CONTEXT_CLASSES: readonly string[] = [
  'http://schemas.microsoft.com/claims/multipleauthn',
  'urn:oasis:names:tc:SAML:2.0:ac:classes:MobileTwoFactorContract',
  'urn:oasis:names:tc:SAML:2.0:ac:classes:MobileTwoFactorUnregistered',
  'urn:oasis:names:tc:SAML:2.0:ac:classes:TimeSyncToken',
  'urn:oasis:names:tc:SAML:2.0:ac:classes:SmartcardPKI',
  'https://refeds.org/profile/mfa',
];

/**
 * Whether an assertion's authentication context classes say the IdP did MFA. `accepted`: the classes that
 * count (a connection may list its own some day; the well-known ones by default). Compared exactly, after
 * trimming the XML whitespace around them: these are URIs, and a near miss is no MFA.
 */
export function idpDidMfa(classRefs: readonly string[], accepted: readonly string[] = MFA_AUTHN_CONTEXT_CLASSES): boolean {
  return classRefs.some((ref) => accepted.includes(ref.trim()));
}

/** At most this many class references are read from a login, each at most this long (longer ones are ignored). */
const CLASS_REFS_MAX = 20;
const CLASS_REF_MAX_CHARS = 1024;

/** The class references of a login as identity keeps them: trimmed, non-empty, bounded in number and length. */
export function cleanClassRefs(classRefs: readonly string[]): string[] {
  return [...new Set(classRefs.slice(0, CLASS_REFS_MAX).map((r) => r.trim()))].filter((r) => r && r.length <= CLASS_REF_MAX_CHARS);
}

/**
 * The amr value of a login through a SAML IdP. RFC 8176 (and the IANA registry) has no value for "a federated
 * identity provider authenticated the user"; `fed` is the one Microsoft's identity platform documents for
 * exactly that ("a federated assertion, such as JWT or SAML, was used"), so relying parties that know
 * Entra ID's tokens already read it. `mfa` is added when the IdP asserted MFA, and a local second factor adds
 * its own methods (otp, hwk, ...) after it.
 */
export const AMR_FEDERATED = 'fed';
