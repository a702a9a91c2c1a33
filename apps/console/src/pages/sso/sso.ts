// What the SSO connection pages compute: the form's values from a connection and back (only what changed on an
// edit), the lists typed as text, and a first look at the IdP metadata while it is typed (the API validates it
// for real: signature certificate, SSO service, validity dates).
import type { operations, Schemas } from '@secsvc/client';
import { formatRoles, parseRoles } from '../../forms';

export type SsoConnection = Schemas['SsoConnection'];
export type CreateConnectionBody = NonNullable<operations['createSsoConnection']['requestBody']>['content']['application/json'];
export type UpdateConnectionBody = NonNullable<operations['updateSsoConnection']['requestBody']>['content']['application/json'];

/** The body fields the API may name in error.details (the form shows each under its input). */
export const CONNECTION_FIELDS = ['name', 'idpMetadataXml', 'domains', 'defaultRoles', 'attributeMapping', 'allowIdpInitiated', 'initiateLoginUrl', 'allowSha1Signatures', 'requireMfa'];

/** The API's bound of the metadata document. */
export const METADATA_MAX_CHARS = 256 * 1024;

export interface ConnectionFormValues {
  name: string;
  /** Email domains, separated by commas, spaces or lines. */
  domains: string;
  /** The IdP's metadata XML; on an edit, empty keeps the stored one. */
  metadata: string;
  /** role_<name>, separated like the domains. */
  defaultRoles: string;
  emailAttribute: string;
  nameAttribute: string;
  allowIdpInitiated: boolean;
  initiateLoginUrl: string;
  allowSha1Signatures: boolean;
  requireMfa: boolean;
}

export const EMPTY_CONNECTION: ConnectionFormValues = {
  name: '',
  domains: '',
  metadata: '',
  defaultRoles: '',
  emailAttribute: '',
  nameAttribute: '',
  allowIdpInitiated: false,
  initiateLoginUrl: '',
  allowSha1Signatures: false,
  requireMfa: false,
};

/** Domains and roles are typed like a user's roles: separated by commas, spaces or new lines. */
export const parseList = parseRoles;

/** A first look at the metadata text: what is surely wrong before the API looks (which names the rest). */
export function metadataProblem(xml: string, required: boolean): string | undefined {
  const t = xml.trim();
  if (t === '') return required ? 'is required: paste the IdP’s metadata XML or load its file' : undefined;
  if (xml.length > METADATA_MAX_CHARS) return `must be at most ${METADATA_MAX_CHARS} characters`;
  if (!t.startsWith('<')) return 'is not XML: it should start with <?xml or <EntityDescriptor (paste the document, not its URL)';
  if (/<!(DOCTYPE|ENTITY)/i.test(t)) return 'must not have a DTD or entity declaration';
  if (!/<([\w.-]+:)?EntityDescriptor[\s>]/.test(t)) return 'is not SAML metadata: it has no EntityDescriptor';
  return undefined;
}

export function valuesOf(c: SsoConnection): ConnectionFormValues {
  return {
    name: c.name,
    domains: formatRoles(c.domains),
    metadata: '',
    defaultRoles: formatRoles(c.defaultRoles),
    emailAttribute: c.attributeMapping.email ?? '',
    nameAttribute: c.attributeMapping.name ?? '',
    allowIdpInitiated: c.allowIdpInitiated,
    initiateLoginUrl: c.initiateLoginUrl ?? '',
    allowSha1Signatures: c.allowSha1Signatures,
    requireMfa: c.requireMfa,
  };
}

function mappingOf(v: ConnectionFormValues): { email?: string; name?: string } {
  const email = v.emailAttribute.trim();
  const name = v.nameAttribute.trim();
  return { ...(email ? { email } : {}), ...(name ? { name } : {}) };
}

export function createBody(v: ConnectionFormValues): CreateConnectionBody {
  const url = v.initiateLoginUrl.trim();
  return {
    name: v.name,
    idpMetadataXml: v.metadata.trim(),
    domains: parseList(v.domains),
    defaultRoles: parseList(v.defaultRoles),
    attributeMapping: mappingOf(v),
    allowIdpInitiated: v.allowIdpInitiated,
    ...(url ? { initiateLoginUrl: url } : {}),
    allowSha1Signatures: v.allowSha1Signatures,
    requireMfa: v.requireMfa,
  };
}

const sameList = (a: readonly string[], b: readonly string[]) => a.join(' ') === b.join(' ');

/** Only what changed: lists and the attribute mapping replace the stored ones whole; an emptied login URL is sent as "" (clears it). */
export function connectionChanges(c: SsoConnection, v: ConnectionFormValues): UpdateConnectionBody {
  const body: UpdateConnectionBody = {};
  if (v.name !== c.name) body.name = v.name;
  if (v.metadata.trim()) body.idpMetadataXml = v.metadata.trim();
  const domains = parseList(v.domains);
  if (!sameList(domains, c.domains)) body.domains = domains;
  const roles = parseList(v.defaultRoles);
  if (!sameList(roles, c.defaultRoles)) body.defaultRoles = roles;
  const mapping = mappingOf(v);
  if ((mapping.email ?? '') !== (c.attributeMapping.email ?? '') || (mapping.name ?? '') !== (c.attributeMapping.name ?? '')) body.attributeMapping = mapping;
  if (v.allowIdpInitiated !== c.allowIdpInitiated) body.allowIdpInitiated = v.allowIdpInitiated;
  const url = v.initiateLoginUrl.trim();
  if (url !== (c.initiateLoginUrl ?? '')) body.initiateLoginUrl = url;
  if (v.allowSha1Signatures !== c.allowSha1Signatures) body.allowSha1Signatures = v.allowSha1Signatures;
  if (v.requireMfa !== c.requireMfa) body.requireMfa = v.requireMfa;
  return body;
}
