import { DOMParser } from '@xmldom/xmldom';

export const NS = {
  md: 'urn:oasis:names:tc:SAML:2.0:metadata',
  ds: 'http://www.w3.org/2000/09/xmldsig#',
  saml: 'urn:oasis:names:tc:SAML:2.0:assertion',
  samlp: 'urn:oasis:names:tc:SAML:2.0:protocol',
} as const;

/** Why a SAML document is refused before any library reads it (fail closed). */
export function unsafeXmlReason(xml: string): string | undefined {
  // No DTDs at all: no entity expansion, no external entities, no internal subset tricks.
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) return 'dtd_refused';
  // Comments are invisible to the signature's canonical form, so they could split a signed NameID.
  if (xml.includes('<!--')) return 'comment_refused';
  if (xml.includes('<?xml-stylesheet')) return 'processing_instruction_refused';
  return undefined;
}

/** Parses XML that passed unsafeXmlReason; throws on any well-formedness error. */
export function parseXml(xml: string): Document {
  const errors: string[] = [];
  const doc = new DOMParser({
    errorHandler: { warning: () => undefined, error: (message: string) => errors.push(message), fatalError: (message: string) => errors.push(message) },
  }).parseFromString(xml, 'text/xml');
  if (errors.length || !doc.documentElement) throw new Error(errors[0] ?? 'no root element');
  return doc;
}

export function childrenNS(parent: Element, ns: string, localName: string): Element[] {
  const out: Element[] = [];
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === 1 && (n as Element).namespaceURI === ns && (n as Element).localName === localName) out.push(n as Element);
  }
  return out;
}

export function descendantsNS(parent: Element | Document, ns: string, localName: string): Element[] {
  return Array.from(parent.getElementsByTagNameNS(ns, localName));
}
