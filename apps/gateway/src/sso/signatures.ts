import { SignedXml } from 'xml-crypto';
import type { identity } from '@secsvc/proto';
import type { Logger } from '@secsvc/shared';
import { SamlRefusal } from './assertion';
import { childrenNS, descendantsNS, NS } from './xml';

// What signs a SAML message, beyond node-saml's check that something valid does: SHA-1 (RSA-SHA1 and SHA-1
// digests, collisions shown in practice since 2017) is refused on every message unless the connection opts in
// for a legacy IdP; each accepted use is logged. Also the SP metadata's own enveloped signature.

const DS = NS.ds;
const MORE = 'http://www.w3.org/2001/04/xmldsig-more#';

/** XML Signature and HTTP-Redirect SigAlg algorithms that rest on SHA-1. */
const SHA1 = new Set([`${DS}rsa-sha1`, `${DS}dsa-sha1`, `${DS}hmac-sha1`, `${MORE}ecdsa-sha1`, `${DS}sha1`]);

/** The SignatureMethod and Reference DigestMethod algorithms of every XML signature in the document. */
export function signatureAlgorithms(doc: Document | Element): string[] {
  const out: string[] = [];
  for (const signature of descendantsNS(doc, DS, 'Signature')) {
    for (const info of childrenNS(signature, DS, 'SignedInfo')) {
      for (const method of childrenNS(info, DS, 'SignatureMethod')) out.push(method.getAttribute('Algorithm') ?? '');
      for (const ref of childrenNS(info, DS, 'Reference')) {
        for (const digest of childrenNS(ref, DS, 'DigestMethod')) out.push(digest.getAttribute('Algorithm') ?? '');
      }
    }
  }
  return out;
}

export interface Sha1Policy {
  /** Throws `sha1_refused` when an algorithm rests on SHA-1 and the connection does not allow it. */
  check(algorithms: string[], message: string): void;
}

/** The connection's SHA-1 policy; an accepted SHA-1 signature is logged at each use. */
export function sha1Policy(connection: Pick<identity.SsoConnection, 'id' | 'allowSha1Signatures'>, logger: Logger, requestId: string): Sha1Policy {
  return {
    check(algorithms, message) {
      const weak = algorithms.filter((a) => SHA1.has(a));
      if (!weak.length) return;
      if (!connection.allowSha1Signatures) throw new SamlRefusal('sha1_refused: SHA-1 signatures are refused (set allowSha1Signatures on the connection for a legacy IdP)');
      logger.warn({ requestId, connectionId: connection.id, message, algorithms: [...new Set(weak)] }, 'SAML message signed with SHA-1 accepted (allowSha1Signatures)');
    },
  };
}

/**
 * Whether the document's root carries one valid enveloped signature over itself by one of the certificates (PEM,
 * as connections keep them), checked as node-saml checks a Response's: a single Reference to the root's ID,
 * found once in the document.
 */
export function rootSignedBy(xml: string, doc: Document, certificates: string[]): boolean {
  const root = doc.documentElement;
  if (!root) return false;
  const signatures = childrenNS(root, DS, 'Signature');
  const id = root.getAttribute('ID');
  if (signatures.length !== 1 || !id) return false;
  const sameId = Array.from(doc.getElementsByTagName('*')).filter((e) => e.getAttribute('ID') === id);
  if (sameId.length !== 1) return false;
  for (const cert of certificates) {
    const sig = new SignedXml({ publicCert: cert });
    sig.loadSignature(signatures[0]!);
    const refs = sig.getReferences();
    if (refs.length !== 1 || refs[0]!.uri !== `#${id}`) return false;
    try {
      if (sig.checkSignature(xml.replace(/\r\n?/g, '\n'))) return true;
    } catch {
      // Not this certificate: try the next.
    }
  }
  return false;
}

/** An enveloped RSA-SHA256 signature over the EntityDescriptor, placed first in it (SAML metadata 3.1.1). */
export function signMetadata(xml: string, keys: { privateKey: string; certificate: string }): string {
  const entity = '//*[local-name(.)="EntityDescriptor" and namespace-uri(.)="urn:oasis:names:tc:SAML:2.0:metadata"]';
  const sig = new SignedXml({
    privateKey: keys.privateKey,
    publicCert: keys.certificate,
    signatureAlgorithm: `${MORE}rsa-sha256`,
    canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#',
  });
  sig.addReference({
    xpath: entity,
    transforms: [`${DS}enveloped-signature`, 'http://www.w3.org/2001/10/xml-exc-c14n#'],
    digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256',
  });
  sig.computeSignature(xml, { location: { reference: entity, action: 'prepend' } });
  return sig.getSignedXml();
}
