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
