import { inflateRawSync } from 'node:zlib';
import { SamlRefusal } from './assertion';
import type { Sha1Policy } from './signatures';
import { childrenNS, NS, parseXml, unsafeXmlReason } from './xml';

// Single logout initiated by the IdP: what node-saml leaves to its caller. A LogoutRequest must be signed (the
// HTTP-Redirect query signature, or an enveloped XML signature over the HTTP-POST document: node-saml would take
// an unsigned Redirect message), addressed to this connection's SLO URL, fresh, and is used once.

/** A LogoutRequest inflates to at most this many bytes (HTTP-Redirect: DEFLATE bombs stop here). */
const MAX_XML_BYTES = 256 * 1024;
/** A LogoutRequest without NotOnOrAfter is accepted this long after its IssueInstant (plus the skew). */
export const LOGOUT_REQUEST_TTL_MS = 10 * 60_000;
/** The query of an HTTP-Redirect LogoutRequest or LogoutResponse: these parameters, each at most once. */
const REDIRECT_PARAMS = new Set(['SAMLRequest', 'SAMLResponse', 'RelayState', 'SigAlg', 'Signature']);
const SIGNATURE_ALGORITHMS = new Set([
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha384',
  'http://www.w3.org/2001/04/xmldsig-more#rsa-sha512',
]);
const RSA_SHA1 = 'http://www.w3.org/2000/09/xmldsig#rsa-sha1';

export interface LogoutRequestFacts {
  id: string;
  /** Until when the request could be accepted: remembered that long against replays. */
  expiresAt: Date;
  /** The SessionIndex elements (empty: every session of the NameID). */
  sessionIndexes: string[];
}

/**
 * The raw query of an HTTP-Redirect LogoutRequest or LogoutResponse, as node-saml checks its signature over:
 * only the binding's parameters (one message), once each, signed with an RSA-SHA-2 algorithm (RSA-SHA1 only where
 * the connection allows SHA-1). Anything else is refused before node-saml runs.
 */
export function redirectQuery(originalUrl: string, query: Record<string, unknown>, sha1: Sha1Policy): string {
  const raw = originalUrl.includes('?') ? originalUrl.slice(originalUrl.indexOf('?') + 1) : '';
  const names = raw.split('&').map((t) => t.slice(0, t.includes('=') ? t.indexOf('=') : t.length));
  if (names.some((n) => !REDIRECT_PARAMS.has(n)) || new Set(names).size !== names.length) throw new SamlRefusal('unexpected_parameters');
  if (names.includes('SAMLRequest') === names.includes('SAMLResponse')) throw new SamlRefusal('unexpected_parameters');
  if (typeof query.Signature !== 'string' || !query.Signature) throw new SamlRefusal('unsigned_request');
  if (query.SigAlg === RSA_SHA1) sha1.check([RSA_SHA1], names.includes('SAMLRequest') ? 'LogoutRequest' : 'LogoutResponse');
  else if (typeof query.SigAlg !== 'string' || !SIGNATURE_ALGORITHMS.has(query.SigAlg)) throw new SamlRefusal('unsupported_signature_algorithm');
  return raw;
}

/** A logout message's XML: base64 (and DEFLATE for HTTP-Redirect), refused when it carries a DTD or comments. */
export function decodeLogoutMessage(message: string, deflated: boolean): string {
  if (!/^[A-Za-z0-9+/=\s]+$/.test(message)) throw new SamlRefusal('not_base64');
  const bytes = Buffer.from(message, 'base64');
  let xml: string;
  try {
    xml = (deflated ? inflateRawSync(bytes, { maxOutputLength: MAX_XML_BYTES }) : bytes).toString('utf8');
  } catch {
    throw new SamlRefusal('not_deflated');
  }
  const unsafe = unsafeXmlReason(xml);
  if (unsafe) throw new SamlRefusal(unsafe);
  return xml;
}

/** The root element of a logout message of this kind, addressed to our SLO URL. */
function rootOf(xml: string, kind: 'LogoutRequest' | 'LogoutResponse', sloUrl: string) {
  let root;
  try {
    root = parseXml(xml).documentElement!;
  } catch {
    throw new SamlRefusal('malformed_xml');
  }
  if (root.namespaceURI !== NS.samlp || root.localName !== kind) throw new SamlRefusal(kind === 'LogoutRequest' ? 'not_a_logout_request' : 'not_a_logout_response');
  if (root.getAttribute('Destination') !== sloUrl) throw new SamlRefusal('wrong_destination');
  return root;
}

/**
 * A LogoutResponse to our LogoutRequest (SP-initiated single logout): checked beyond node-saml's signature check
 * (which, for HTTP-POST, looks at nothing else): addressed to us, from the connection's IdP, Success, and the id
 * of the request it answers.
 */
export function logoutResponseFacts(xml: string, sloUrl: string, issuer: string): { inResponseTo: string } {
  const root = rootOf(xml, 'LogoutResponse', sloUrl);
  if (childrenNS(root, NS.saml, 'Issuer')[0]?.textContent?.trim() !== issuer) throw new SamlRefusal('wrong_issuer');
  const status = childrenNS(root, NS.samlp, 'Status')[0];
  const code = status && childrenNS(status, NS.samlp, 'StatusCode')[0]?.getAttribute('Value');
  if (code !== 'urn:oasis:names:tc:SAML:2.0:status:Success') throw new SamlRefusal(`logout_failed: ${(code ?? 'no status').replace(/^.*:/, '')}`);
  const inResponseTo = root.getAttribute('InResponseTo') ?? '';
  if (!inResponseTo) throw new SamlRefusal('unsolicited_logout_response');
  return { inResponseTo };
}

/** Checks what node-saml does not: the element, Destination = our SLO URL, a fresh IssueInstant; reads the rest. */
export function logoutRequestFacts(xml: string, sloUrl: string, skewMs: number, now = Date.now()): LogoutRequestFacts {
  const root = rootOf(xml, 'LogoutRequest', sloUrl);
  const id = root.getAttribute('ID') ?? '';
  if (!id) throw new SamlRefusal('request_without_id');
  const issued = Date.parse(root.getAttribute('IssueInstant') ?? '');
  if (Number.isNaN(issued)) throw new SamlRefusal('request_without_issue_instant');
  if (issued > now + skewMs) throw new SamlRefusal('request_not_yet_valid');
  const notOnOrAfter = Date.parse(root.getAttribute('NotOnOrAfter') ?? '');
  const expires = Math.min(issued + LOGOUT_REQUEST_TTL_MS, Number.isNaN(notOnOrAfter) ? Infinity : notOnOrAfter) + skewMs;
  if (expires <= now) throw new SamlRefusal('request_expired');
  const sessionIndexes = childrenNS(root, NS.samlp, 'SessionIndex').map((e) => (e.textContent ?? '').trim());
  if (sessionIndexes.some((i) => !i)) throw new SamlRefusal('empty_session_index');
  return { id, expiresAt: new Date(expires), sessionIndexes };
}
