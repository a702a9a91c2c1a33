import { AppError } from '@secsvc/shared';
import { X509Certificate } from 'node:crypto';
import { childrenNS, descendantsNS, NS, parseXml, unsafeXmlReason } from './xml';

export interface IdpMetadata {
  entityId: string;
  /** The SingleSignOnService location of the HTTP-Redirect binding. */
  ssoUrl: string;
  /** PEM signing certificates, each parsable and valid now. */
  certificates: string[];
  /** The SingleLogoutService of the HTTP-Redirect binding, when the IdP has one. */
  logout?: IdpLogoutService;
}

export interface IdpLogoutService {
  /** Where LogoutRequests go. */
  url: string;
  /** Where LogoutResponses go (ResponseLocation, else Location). */
  responseUrl: string;
}

const HTTP_URL = /^https?:\/\/\S+$/;

const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const FIELD = 'idpMetadataXml';

const invalid = (message: string) => AppError.field(FIELD, message);

export function toPem(base64: string): string {
  const body = base64.replace(/\s+/g, '');
  return `-----BEGIN CERTIFICATE-----\n${body.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----`;
}

/**
 * Reads an IdP's SAML metadata: its entity id, HTTP-Redirect SSO endpoint and signing certificates.
 * Every refusal is a 400 naming idpMetadataXml: DTDs, unparsable XML, no IDPSSODescriptor, no signing
 * certificate, a certificate that does not parse, is expired or is not yet valid.
 */
type XmlElement = Element;

/** The EntityDescriptor of an IdP in a metadata document (itself, or the first with an IDPSSODescriptor). */
function entityDescriptor(doc: ReturnType<typeof parseXml>): XmlElement | undefined {
  const root = doc.documentElement!;
  return root.namespaceURI === NS.md && root.localName === 'EntityDescriptor'
    ? root
    : descendantsNS(doc, NS.md, 'EntityDescriptor').find((e) => childrenNS(e, NS.md, 'IDPSSODescriptor').length > 0);
}

function logoutServiceOf(idp: XmlElement): IdpLogoutService | undefined {
  const slo = childrenNS(idp, NS.md, 'SingleLogoutService').find((s) => s.getAttribute('Binding') === REDIRECT_BINDING);
  if (!slo) return undefined;
  const url = slo.getAttribute('Location') ?? '';
  return { url, responseUrl: slo.getAttribute('ResponseLocation') || url };
}

/** The IdP's SingleLogoutService from stored (already validated) metadata; undefined when it has none. */
export function idpLogoutService(xml: string): IdpLogoutService | undefined {
  try {
    const descriptor = entityDescriptor(parseXml(xml));
    const idp = descriptor && childrenNS(descriptor, NS.md, 'IDPSSODescriptor')[0];
    return idp ? logoutServiceOf(idp) : undefined;
  } catch {
    return undefined;
  }
}

export function parseIdpMetadata(xml: string, now = new Date()): IdpMetadata {
  const unsafe = unsafeXmlReason(xml);
  if (unsafe === 'dtd_refused') throw invalid('must not contain a DTD or entity declarations');
  let doc;
  try {
    doc = parseXml(xml);
  } catch {
    throw invalid('is not well-formed XML');
  }
  const descriptor = entityDescriptor(doc);
  if (!descriptor) throw invalid('must be SAML 2.0 metadata with an EntityDescriptor');
  const entityId = descriptor.getAttribute('entityID') ?? '';
  if (!entityId) throw invalid('the EntityDescriptor has no entityID');
  const idp = childrenNS(descriptor, NS.md, 'IDPSSODescriptor')[0];
  if (!idp) throw invalid('must describe an identity provider (IDPSSODescriptor)');

  const sso = childrenNS(idp, NS.md, 'SingleSignOnService').find((s) => s.getAttribute('Binding') === REDIRECT_BINDING);
  const ssoUrl = sso?.getAttribute('Location') ?? '';
  if (!HTTP_URL.test(ssoUrl)) throw invalid('must have a SingleSignOnService with the HTTP-Redirect binding and an http(s) Location');
  const logout = logoutServiceOf(idp);
  if (logout && !(HTTP_URL.test(logout.url) && HTTP_URL.test(logout.responseUrl))) {
    throw invalid('the HTTP-Redirect SingleLogoutService must have an http(s) Location (and ResponseLocation, if any)');
  }

  const signingKeys = childrenNS(idp, NS.md, 'KeyDescriptor').filter((k) => (k.getAttribute('use') ?? 'signing') === 'signing');
  const certificateTexts = signingKeys.flatMap((k) => descendantsNS(k, NS.ds, 'X509Certificate')).map((c) => c.textContent ?? '');
  if (!certificateTexts.length) throw invalid('must contain a signing certificate (KeyDescriptor use="signing" with an X509Certificate)');
  const certificates = certificateTexts.map((text, i) => {
    const pem = toPem(text);
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(pem);
    } catch {
      throw invalid(`signing certificate ${i + 1} does not parse as X.509`);
    }
    if (new Date(cert.validTo) <= now) throw invalid(`signing certificate ${i + 1} expired on ${new Date(cert.validTo).toISOString()}`);
    if (new Date(cert.validFrom) > now) throw invalid(`signing certificate ${i + 1} is not valid before ${new Date(cert.validFrom).toISOString()}`);
    return pem;
  });
  return { entityId, ssoUrl, certificates, ...(logout && { logout }) };
}
