import { childrenNS, descendantsNS, NS, parseXml, unsafeXmlReason } from './xml';

/** A check of the SAML response that node-saml leaves to its caller failed; `reason` goes into user.login. */
export class SamlRefusal extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface AssertionFacts {
  id: string;
  /** Until when this assertion could be accepted (the earliest NotOnOrAfter plus the skew): replay memory. */
  expiresAt: Date;
  /**
   * How the IdP authenticated the subject (identity decides whether that was MFA): the AuthnStatements'
   * AuthnContextClassRef values, then the values of Microsoft's authnmethodsreferences attribute (Entra ID
   * says MFA only there, AD FS in both). At most 8 distinct values of at most 256 characters.
   */
  authnContextClassRefs: string[];
}

/** Where Entra ID and AD FS list the authentication methods used (http://schemas.microsoft.com/claims/multipleauthn for MFA). */
export const MS_AUTHN_METHODS_ATTRIBUTE = 'http://schemas.microsoft.com/claims/authnmethodsreferences';
const CLASS_REFS_MAX = 8;
const CLASS_REF_MAX_CHARS = 256;

/** The authentication context classes an assertion names (see AssertionFacts.authnContextClassRefs). */
export function authnContextClassRefs(assertion: Element): string[] {
  const classRefs = descendantsNS(assertion, NS.saml, 'AuthnStatement')
    .flatMap((statement) => childrenNS(statement, NS.saml, 'AuthnContext'))
    .flatMap((context) => childrenNS(context, NS.saml, 'AuthnContextClassRef'));
  const methods = descendantsNS(assertion, NS.saml, 'Attribute')
    .filter((a) => a.getAttribute('Name') === MS_AUTHN_METHODS_ATTRIBUTE)
    .flatMap((a) => childrenNS(a, NS.saml, 'AttributeValue'));
  const values = [...classRefs, ...methods].map((e) => (e.textContent ?? '').trim()).filter((v) => v && v.length <= CLASS_REF_MAX_CHARS);
  return [...new Set(values)].slice(0, CLASS_REFS_MAX);
}

/** Before any parsing: the base64 SAMLResponse decoded, refused when it carries a DTD or comments. */
export function decodeResponse(samlResponse: string): string {
  if (!/^[A-Za-z0-9+/=\s]+$/.test(samlResponse)) throw new SamlRefusal('not_base64');
  const xml = Buffer.from(samlResponse, 'base64').toString('utf8');
  const unsafe = unsafeXmlReason(xml);
  if (unsafe) throw new SamlRefusal(unsafe);
  return xml;
}

/**
 * The Response's Destination must be this connection's ACS URL (present, as the response is for us alone).
 * Returns its InResponseTo (empty when unsolicited).
 */
export function checkResponseRoot(responseXml: string, acsUrl: string): { inResponseTo: string } {
  let root;
  try {
    root = parseXml(responseXml).documentElement!;
  } catch {
    throw new SamlRefusal('malformed_xml');
  }
  if (root.getAttribute('Destination') !== acsUrl) throw new SamlRefusal('wrong_destination');
  return { inResponseTo: root.getAttribute('InResponseTo') ?? '' };
}

/**
 * Reads the validated (signed, and decrypted) assertion: its id, its Issuer (the connection's IdP), a bearer
 * SubjectConfirmationData whose Recipient is our ACS URL, its expiry, and how the IdP authenticated the subject.
 */
export function assertionFacts(assertionXml: string, expected: { acsUrl: string; issuer: string }, skewMs: number): AssertionFacts {
  const { acsUrl } = expected;
  if (unsafeXmlReason(assertionXml)) throw new SamlRefusal('comment_refused');
  const assertion = parseXml(assertionXml).documentElement!;
  const id = assertion.getAttribute('ID') ?? '';
  if (!id) throw new SamlRefusal('assertion_without_id');
  if (childrenNS(assertion, NS.saml, 'Issuer')[0]?.textContent?.trim() !== expected.issuer) throw new SamlRefusal('wrong_issuer');
  const subject = childrenNS(assertion, NS.saml, 'Subject')[0];
  const confirmations = subject ? childrenNS(subject, NS.saml, 'SubjectConfirmation').filter((c) => c.getAttribute('Method') === 'urn:oasis:names:tc:SAML:2.0:cm:bearer') : [];
  const data = confirmations.flatMap((c) => childrenNS(c, NS.saml, 'SubjectConfirmationData')).find((d) => d.getAttribute('Recipient') === acsUrl);
  if (!data) throw new SamlRefusal('wrong_recipient');
  const limits = [data.getAttribute('NotOnOrAfter'), ...descendantsNS(assertion, NS.saml, 'Conditions').map((c) => c.getAttribute('NotOnOrAfter'))]
    .filter((v): v is string => !!v)
    .map((v) => Date.parse(v))
    .filter((t) => !Number.isNaN(t));
  if (!limits.length) throw new SamlRefusal('assertion_without_expiry');
  return { id, expiresAt: new Date(Math.min(...limits) + skewMs), authnContextClassRefs: authnContextClassRefs(assertion) };
}

/** The first string of a profile attribute (node-saml gives one value or an array). */
export function firstString(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.find((v): v is string => typeof v === 'string') ?? '';
  return '';
}
