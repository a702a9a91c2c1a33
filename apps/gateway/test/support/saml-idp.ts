import { createPublicKey, createSign, randomBytes } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { generate } from 'selfsigned';
import { SignedXml } from 'xml-crypto';
import { encrypt } from 'xml-encryption';

/**
 * A SAML 2.0 identity provider for tests: its own RSA key and self-signed certificate made at test time, its
 * metadata, and responses (HTTP-POST binding) whose assertions it signs with xml-crypto like a real IdP.
 * Every field can be bent to build the attacks.
 */
export interface TestIdp {
  entityId: string;
  ssoUrl: string;
  privateKey: string;
  certificate: string;
  /** Its single logout service (HTTP-Redirect), in the metadata unless `noLogout`. */
  sloUrl: string;
  metadata(options?: { certificate?: string; noCertificate?: boolean; noLogout?: boolean }): string;
  response(options: ResponseOptions): string;
  /** A LogoutRequest: the HTTP-Redirect query (signed over the query) or the HTTP-POST SAMLRequest (signed XML). */
  logoutRequest(options: LogoutOptions): string;
  /** A LogoutResponse to the SP's LogoutRequest, in the same two forms. */
  logoutResponse(options: LogoutResponseOptions): string;
}

export interface LogoutResponseOptions {
  binding: 'redirect' | 'post';
  destination: string;
  inResponseTo: string;
  /** Default Success. */
  status?: string;
  issuer?: string;
  sign?: 'yes' | 'none' | 'other';
  sha1?: boolean;
}

export interface LogoutOptions {
  binding: 'redirect' | 'post';
  destination: string;
  nameId: string;
  sessionIndexes?: string[];
  id?: string;
  issueInstant?: Date;
  notOnOrAfter?: Date;
  issuer?: string;
  relayState?: string;
  /** none: unsigned; other: signed with another key than the metadata's. */
  sign?: 'yes' | 'none' | 'other';
  sigAlg?: string;
  /** Sign with RSA-SHA1 (and SHA-1 digests): the query's SigAlg for HTTP-Redirect, the XML signature for HTTP-POST. */
  sha1?: boolean;
}

export interface ResponseOptions {
  acsUrl: string;
  audience: string;
  email: string;
  inResponseTo?: string;
  destination?: string;
  recipient?: string;
  assertionId?: string;
  notBefore?: Date;
  notOnOrAfter?: Date;
  /**
   * assertion (default): the assertion signed; response: only the Response signed (the assertion inside it is
   * not); none: no signature at all; other / response-other: signed with another key than the metadata's.
   */
  sign?: 'assertion' | 'response' | 'none' | 'other' | 'response-other';
  attributes?: Record<string, string>;
  /** Replaces the NameID text as written (for comment injection). */
  rawNameId?: string;
  issuer?: string;
  /** Signatures with RSA-SHA1 and SHA-1 digests (legacy IdPs). */
  sha1?: boolean;
  /** The AuthnStatement's AuthnContextClassRef (default PasswordProtectedTransport). */
  authnContextClassRef?: string;
}

const b64 = (pem: string) => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');
export const samlId = () => '_' + randomBytes(16).toString('hex');
const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

export async function selfSignedCertificate(cn: string, notBefore = new Date(Date.now() - 60_000), notAfter = new Date(Date.now() + 365 * 86_400_000)) {
  const pems = await generate([{ name: 'commonName', value: cn }], { keySize: 2048, algorithm: 'sha256', notBeforeDate: notBefore, notAfterDate: notAfter });
  return { privateKey: pems.private, certificate: pems.cert };
}

const RSA_SHA1 = 'http://www.w3.org/2000/09/xmldsig#rsa-sha1';
const algorithms = (sha1 = false) => ({
  signature: sha1 ? RSA_SHA1 : 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256',
  digest: sha1 ? 'http://www.w3.org/2000/09/xmldsig#sha1' : 'http://www.w3.org/2001/04/xmlenc#sha256',
});

export function signAssertion(xml: string, assertionId: string, privateKey: string, certificate: string, sha1 = false): string {
  const sig = new SignedXml({
    privateKey,
    publicCert: certificate,
    signatureAlgorithm: algorithms(sha1).signature,
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({
    xpath: `//*[local-name(.)='Assertion' and @ID='${assertionId}']`,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: algorithms(sha1).digest,
  });
  sig.computeSignature(xml, {
    location: { reference: `//*[local-name(.)='Assertion' and @ID='${assertionId}']/*[local-name(.)='Issuer']`, action: 'after' },
  });
  return sig.getSignedXml();
}

/** How xml-encryption (an independent implementation of XML Encryption) encrypts an assertion. */
export interface EncryptionOptions {
  /** Default AES-256-GCM. */
  content?: string;
  /** Default rsa-oaep-mgf1p. */
  keyTransport?: string;
  /** OAEP digest, short name (sha1, sha256, sha512); default SHA-1. */
  digest?: string;
  /** MGF1 digest of xmlenc11#rsa-oaep, short name. */
  mgf?: string;
}

/** An assertion encrypted for the SP (a content key wrapped with RSA-OAEP under the SP certificate). */
export function encryptAssertion(assertion: string, spCertificate: string, o: EncryptionOptions = {}): Promise<string> {
  const rsaPub = createPublicKey(spCertificate).export({ type: 'spki', format: 'pem' });
  // The typings know xml-encryption 1.x; 6.x takes the OAEP digest and MGF too.
  const options = {
    rsa_pub: rsaPub,
    pem: spCertificate,
    encryptionAlgorithm: o.content ?? 'http://www.w3.org/2009/xmlenc11#aes256-gcm',
    keyEncryptionAlgorithm: o.keyTransport ?? 'http://www.w3.org/2001/04/xmlenc#rsa-oaep-mgf1p',
    ...(o.digest && { keyEncryptionDigest: o.digest }),
    ...(o.mgf && { keyEncryptionMgf: o.mgf }),
    // Test inputs include what the SP must refuse (rsa-1_5) and CBC.
    disallowEncryptionWithInsecureAlgorithm: false,
    warnInsecureAlgorithm: false,
  } as unknown as Parameters<typeof encrypt>[1];
  return new Promise((resolve, reject) =>
    encrypt(assertion, options, (err, result) => (err ? reject(err) : resolve(`<saml:EncryptedAssertion>${result}</saml:EncryptedAssertion>`))),
  );
}

export function assertionXml(entityId: string, o: ResponseOptions, assertionId: string, now: Date): string {
  const notBefore = o.notBefore ?? new Date(now.getTime() - 30_000);
  const notOnOrAfter = o.notOnOrAfter ?? new Date(now.getTime() + 5 * 60_000);
  const inResponseTo = o.inResponseTo ? ` InResponseTo="${esc(o.inResponseTo)}"` : '';
  const attributes = Object.entries(o.attributes ?? {})
    .map(([k, v]) => `<saml:Attribute Name="${esc(k)}"><saml:AttributeValue>${esc(v)}</saml:AttributeValue></saml:Attribute>`)
    .join('');
  return (
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${assertionId}" Version="2.0" IssueInstant="${iso(now)}">` +
    `<saml:Issuer>${esc(o.issuer ?? entityId)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${o.rawNameId ?? esc(o.email)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
    `<saml:SubjectConfirmationData NotOnOrAfter="${iso(notOnOrAfter)}" Recipient="${esc(o.recipient ?? o.acsUrl)}"${inResponseTo}/>` +
    `</saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${iso(notBefore)}" NotOnOrAfter="${iso(notOnOrAfter)}"><saml:AudienceRestriction><saml:Audience>${esc(o.audience)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${iso(now)}" SessionIndex="${assertionId}"><saml:AuthnContext><saml:AuthnContextClassRef>${esc(o.authnContextClassRef ?? 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport')}</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    (attributes ? `<saml:AttributeStatement>${attributes}</saml:AttributeStatement>` : '') +
    `</saml:Assertion>`
  );
}

export function wrapResponse(entityId: string, o: ResponseOptions, inner: string, now: Date): string {
  const inResponseTo = o.inResponseTo ? ` InResponseTo="${esc(o.inResponseTo)}"` : '';
  return (
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${samlId()}" Version="2.0" IssueInstant="${iso(now)}" Destination="${esc(o.destination ?? o.acsUrl)}"${inResponseTo}>` +
    `<saml:Issuer>${esc(entityId)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    inner +
    `</samlp:Response>`
  );
}

const RSA_SHA256 = 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256';

function logoutRequestXml(entityId: string, o: LogoutOptions, id: string): string {
  const now = o.issueInstant ?? new Date();
  const notOnOrAfter = o.notOnOrAfter ? ` NotOnOrAfter="${iso(o.notOnOrAfter)}"` : '';
  return (
    `<samlp:LogoutRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${iso(now)}" Destination="${esc(o.destination)}"${notOnOrAfter}>` +
    `<saml:Issuer>${esc(o.issuer ?? entityId)}</saml:Issuer>` +
    `<saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${esc(o.nameId)}</saml:NameID>` +
    (o.sessionIndexes ?? []).map((i) => `<samlp:SessionIndex>${esc(i)}</samlp:SessionIndex>`).join('') +
    `</samlp:LogoutRequest>`
  );
}

function logoutResponseXml(entityId: string, o: LogoutResponseOptions, id: string): string {
  return (
    `<samlp:LogoutResponse xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${iso(new Date())}" Destination="${esc(o.destination)}" InResponseTo="${esc(o.inResponseTo)}">` +
    `<saml:Issuer>${esc(o.issuer ?? entityId)}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="${esc(o.status ?? 'urn:oasis:names:tc:SAML:2.0:status:Success')}"/></samlp:Status>` +
    `</samlp:LogoutResponse>`
  );
}

/** An enveloped signature over the root element with this ID, after its Issuer. */
export function signRoot(xml: string, id: string, privateKey: string, certificate: string, sha1 = false): string {
  const sig = new SignedXml({ privateKey, publicCert: certificate, signatureAlgorithm: algorithms(sha1).signature, canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#' });
  sig.addReference({
    xpath: `/*[@ID='${id}']`,
    transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: algorithms(sha1).digest,
  });
  sig.computeSignature(xml, { location: { reference: `/*[@ID='${id}']/*[local-name(.)='Issuer']`, action: 'after' } });
  return sig.getSignedXml();
}

export async function startTestIdp(name = 'idp', ssoUrl = `https://${name}.example.net/sso`): Promise<TestIdp> {
  const { privateKey, certificate } = await selfSignedCertificate(`${name}.test`);
  const other = await selfSignedCertificate(`attacker.test`);
  const entityId = `https://${name}.example.net/saml`;
  const sloUrl = ssoUrl.replace(/\/sso$/, '') + '/slo';
  /** HTTP-POST: the (signed) XML in base64. HTTP-Redirect: DEFLATE, base64, and an RSA signature over the query as sent (SAML bindings 3.4.4.1). */
  function encodeMessage(name: 'SAMLRequest' | 'SAMLResponse', xml: string, id: string, o: { binding: 'redirect' | 'post'; sign?: string; relayState?: string; sigAlg?: string; sha1?: boolean }): string {
    const signer = o.sign === 'other' ? other : { privateKey, certificate };
    if (o.binding === 'post') return Buffer.from(o.sign === 'none' ? xml : signRoot(xml, id, signer.privateKey, signer.certificate, o.sha1)).toString('base64');
    let query = `${name}=${encodeURIComponent(deflateRawSync(xml).toString('base64'))}`;
    if (o.relayState !== undefined) query += `&RelayState=${encodeURIComponent(o.relayState)}`;
    if (o.sign === 'none') return query;
    query += `&SigAlg=${encodeURIComponent(o.sigAlg ?? (o.sha1 ? RSA_SHA1 : RSA_SHA256))}`;
    const signature = createSign(o.sha1 ? 'RSA-SHA1' : 'RSA-SHA256').update(query).sign(signer.privateKey, 'base64');
    return `${query}&Signature=${encodeURIComponent(signature)}`;
  }
  return {
    entityId,
    ssoUrl,
    sloUrl,
    privateKey,
    certificate,
    metadata(options = {}) {
      const key = options.noCertificate
        ? ''
        : `<md:KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>${b64(options.certificate ?? certificate)}</ds:X509Certificate></ds:X509Data></ds:KeyInfo></md:KeyDescriptor>`;
      return (
        `<?xml version="1.0"?><md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="${entityId}">` +
        `<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">${key}` +
        `<md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>` +
        (options.noLogout ? '' : `<md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${sloUrl}"/>`) +
        `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="${ssoUrl}"/>` +
        `<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${ssoUrl}"/>` +
        `</md:IDPSSODescriptor></md:EntityDescriptor>`
      );
    },
    response(o) {
      const now = new Date();
      const id = o.assertionId ?? samlId();
      let assertion = assertionXml(entityId, o, id, now);
      const sign = o.sign ?? 'assertion';
      if (sign === 'assertion') assertion = signAssertion(assertion, id, privateKey, certificate, o.sha1);
      if (sign === 'other') assertion = signAssertion(assertion, id, other.privateKey, other.certificate, o.sha1);
      let xml = wrapResponse(entityId, o, assertion, now);
      if (sign === 'response' || sign === 'response-other') {
        const signer = sign === 'response' ? { privateKey, certificate } : other;
        xml = signRoot(xml, /^<samlp:Response [^>]*ID="([^"]+)"/.exec(xml)![1]!, signer.privateKey, signer.certificate, o.sha1);
      }
      return Buffer.from(xml).toString('base64');
    },
    logoutRequest(o) {
      const id = o.id ?? samlId();
      return encodeMessage('SAMLRequest', logoutRequestXml(entityId, o, id), id, o);
    },
    logoutResponse(o) {
      const id = samlId();
      return encodeMessage('SAMLResponse', logoutResponseXml(entityId, o, id), id, o);
    },
  };
}
