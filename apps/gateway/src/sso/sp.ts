import type { identity } from '@secsvc/proto';
import type { PromiseClient } from '@secsvc/shared';
import { SAML, ValidateInResponseTo, type CacheProvider, type Profile } from '@node-saml/node-saml';
import { XMLSerializer } from '@xmldom/xmldom';
import { descendantsNS, NS, parseXml } from './xml';
import { idpLogoutService } from './metadata';
import { rootSignedBy, signatureAlgorithms, signMetadata, type Sha1Policy } from './signatures';
import { CONTENT_ALGORITHMS, KEY_TRANSPORT_ALGORITHMS, RSA_OAEP, withDecryptionPolicy } from './xmlenc';

export interface KeyPair {
  privateKey: string;
  certificate: string;
}

/**
 * The service provider's key pair: signs AuthnRequests, decrypts encrypted assertions, published in SP metadata.
 * `rollover`, during a key change: the next pair (before the switch) or the previous one (after it), published
 * in metadata and accepted for decryption, never used to sign.
 */
export interface SpKeys extends KeyPair {
  rollover?: KeyPair;
}

export interface SpSettings {
  /** Public origin of the gateway (ISSUER): SP entity ids and ACS URLs are below it. */
  baseUrl: string;
  keys?: SpKeys;
  /** Allowed clock difference with the IdP for NotBefore / NotOnOrAfter. */
  clockSkewMs: number;
  /** How long an AuthnRequest id is accepted as InResponseTo. */
  requestTtlSeconds: number;
}

export function spUrls(baseUrl: string, connectionId: string) {
  const base = `${baseUrl.replace(/\/+$/, '')}/v1/sso/saml/${connectionId}`;
  return { entityId: `${base}/metadata`, metadataUrl: `${base}/metadata`, acsUrl: `${base}/acs`, loginUrl: `${base}/login`, continueUrl: `${base}/continue`, sloUrl: `${base}/slo` };
}

/** An SP-initiated login as stored with its AuthnRequest id. */
export interface SavedRequest {
  connectionId: string;
  /** Where the login continues after the ACS (the OAuth authorization request's query), or empty. */
  returnTo: string;
  /** SHA-256 of the nonce of the browser that started it (see binding.ts), or empty. */
  binding: string;
}

/** The AuthnRequest ids of SP-initiated logins, kept by identity (in Postgres) so every gateway replica knows them. */
export interface RequestIdStore {
  save(requestId: string, ttlSeconds: number, request: SavedRequest): Promise<void>;
  /** The request, once (later calls: undefined). */
  take(requestId: string): Promise<SavedRequest | undefined>;
}

/** The request-id store over identity's SaveSamlRequest / TakeSamlRequest (every replica sees the same ids). */
export function identityRequestStore(
  identityClient: Pick<PromiseClient<identity.IdentityServiceClient>, 'saveSamlRequest' | 'takeSamlRequest'>,
  call: { requestId: string; deadlineMs: number; headers: Record<string, string> },
): RequestIdStore {
  return {
    save: async (requestId, ttlSeconds, request) => {
      await identityClient.saveSamlRequest({ requestId, ttlSeconds, ...request }, call);
    },
    take: async (requestId) => {
      const r = await identityClient.takeSamlRequest({ requestId }, call);
      return r.found ? { connectionId: r.connectionId, returnTo: r.returnTo, binding: r.binding } : undefined;
    },
  };
}

/**
 * node-saml's cache of request ids for one connection and one request: saves go to the store; the first look-up
 * of an id takes it from the store (single use) and later look-ups in the same validation see the same answer.
 * An id issued for another connection is unknown here. `request` is saved with a new AuthnRequest; `taken()`
 * tells the stored request a response answered.
 */
export function requestIdCache(
  store: RequestIdStore,
  connectionId: string,
  ttlSeconds: number,
  request: Omit<SavedRequest, 'connectionId'> = { returnTo: '', binding: '' },
  kind: 'login' | 'logout' = 'login',
): CacheProvider & { taken(): SavedRequest | undefined } {
  const seen = new Map<string, string | null>();
  let taken: SavedRequest | undefined;
  // LogoutRequest ids are stored apart from AuthnRequest ids: one kind of response cannot use up the other.
  const storeKey = (key: string) => (kind === 'logout' ? `logout:${key}` : key);
  return {
    taken: () => taken,
    async saveAsync(key, value) {
      await store.save(storeKey(key), ttlSeconds, { connectionId, ...request });
      return { value, createdAt: Date.now() };
    },
    async getAsync(key) {
      if (!seen.has(key)) {
        const found = await store.take(storeKey(key));
        const ours = found?.connectionId === connectionId;
        if (ours) taken = found;
        seen.set(key, ours ? new Date().toISOString() : null);
      }
      return seen.get(key)!;
    },
    // Taking already removed it.
    removeAsync: async () => null,
  };
}

/** A node-saml service provider for one connection: signed requests, signed assertions required, strict conditions. */
export function samlFor(
  connection: identity.SsoConnection,
  settings: SpSettings & { keys: SpKeys },
  cache: CacheProvider,
  options: { decryptionKey?: string; logoutUrl?: string; forMetadata?: boolean; inResponseToCheckedByCaller?: boolean } = {},
): SAML {
  const urls = spUrls(settings.baseUrl, connection.id);
  return new SAML({
    logoutCallbackUrl: urls.sloUrl,
    ...(options.logoutUrl && { logoutUrl: options.logoutUrl }),
    issuer: urls.entityId,
    callbackUrl: urls.acsUrl,
    audience: urls.entityId,
    entryPoint: connection.idpSsoUrl,
    idpIssuer: connection.idpEntityId,
    idpCert: connection.idpCertificates,
    privateKey: settings.keys.privateKey,
    publicCert: settings.keys.certificate,
    decryptionPvk: options.decryptionKey ?? settings.keys.privateKey,
    signatureAlgorithm: 'sha256',
    digestAlgorithm: 'sha256',
    // A signature over the Response or over the assertion (node-saml then reads the assertion from what the
    // signature covers, so nothing outside it counts); metadata asks IdPs to sign assertions.
    wantAssertionsSigned: options.forMetadata === true,
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: settings.clockSkewMs,
    validateInResponseTo: options.inResponseToCheckedByCaller
      ? ValidateInResponseTo.never
      : connection.allowIdpInitiated
        ? ValidateInResponseTo.ifPresent
        : ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: settings.requestTtlSeconds * 1000,
    cacheProvider: cache,
    identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    disableRequestedAuthnContext: true,
  });
}

/** What RSA-OAEP says when an assertion was encrypted for another key. */
const WRONG_KEY = /oaep|decrypt|rsa routines/i;

/**
 * node-saml's validation with the active key; an encrypted assertion it cannot open (encrypted for the rollover
 * certificate by an IdP that read the metadata before or after the switch) is tried with the rollover key. The
 * request-id cache answers the second pass the same way (the id was taken once). Before node-saml runs, and on
 * the decrypted assertion, SHA-1 signatures are refused (unless the connection allows them); AES-CBC content is
 * decrypted only when the Response's own signature covers it.
 */
export async function validateResponse(
  connection: identity.SsoConnection,
  settings: SpSettings & { keys: SpKeys },
  cache: CacheProvider,
  samlResponse: string,
  xml: string,
  sha1: Sha1Policy,
): Promise<{ profile: Profile | null }> {
  const doc = parseXml(xml);
  sha1.check(signatureAlgorithms(doc), 'Response');
  let signed: boolean | undefined;
  const policy = {
    cbcAllowed: () => (signed ??= rootSignedBy(xml, doc, connection.idpCertificates)),
    checkPlaintext: (assertion: string) => sha1.check(signatureAlgorithms(parseXml(assertion)), 'encrypted Assertion'),
  };
  const encrypted = descendantsNS(doc, NS.saml, 'EncryptedAssertion').length > 0;
  return withDecryptionPolicy(policy, () => validateWithKeys(connection, settings, cache, samlResponse, encrypted));
}

async function validateWithKeys(
  connection: identity.SsoConnection,
  settings: SpSettings & { keys: SpKeys },
  cache: CacheProvider,
  samlResponse: string,
  encrypted: boolean,
): Promise<{ profile: Profile | null }> {
  try {
    return await samlFor(connection, settings, cache).validatePostResponseAsync({ SAMLResponse: samlResponse });
  } catch (first) {
    const rollover = settings.keys.rollover;
    if (!rollover || !encrypted) throw first;
    try {
      return await samlFor(connection, settings, cache, { decryptionKey: rollover.privateKey }).validatePostResponseAsync({ SAMLResponse: samlResponse });
    } catch (second) {
      // Report the failure of the pass that could read the assertion.
      throw WRONG_KEY.test((first as Error).message) ? second : first;
    }
  }
}

const PEM_BODY = (pem: string) => pem.replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');

/** node-saml's cache for SAML objects that validate no Response (metadata, logout). */
export const NO_REQUESTS: CacheProvider = { saveAsync: async () => null, getAsync: async () => null, removeAsync: async () => null };
/** A cache that knows every id: for a validation whose InResponseTo the caller checks itself, afterwards. */
export const ANY_REQUEST: CacheProvider = { saveAsync: async () => null, getAsync: async () => new Date().toISOString(), removeAsync: async () => null };

const REDIRECT_BINDING = 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect';
const XENC11 = 'http://www.w3.org/2009/xmlenc11#';

/**
 * The EncryptionMethods of an encryption KeyDescriptor: every content algorithm accepted (GCM first), then the
 * key transports (RSA-OAEP with SHA-256 and MGF1-SHA-256 first; any OAEP digest and MGF1 digest is read).
 */
function advertiseEncryption(doc: Document, keyDescriptor: Element): void {
  for (const old of descendantsNS(keyDescriptor, NS.md, 'EncryptionMethod')) keyDescriptor.removeChild(old);
  const method = (algorithm: string) => {
    const e = doc.createElementNS(NS.md, 'md:EncryptionMethod');
    e.setAttribute('Algorithm', algorithm);
    keyDescriptor.appendChild(e);
    return e;
  };
  for (const algorithm of CONTENT_ALGORITHMS) method(algorithm);
  const oaep = method(RSA_OAEP);
  const digest = doc.createElementNS(NS.ds, 'ds:DigestMethod');
  digest.setAttribute('Algorithm', 'http://www.w3.org/2001/04/xmlenc#sha256');
  oaep.appendChild(digest);
  const mgf = doc.createElementNS(XENC11, 'xenc11:MGF');
  mgf.setAttribute('Algorithm', `${XENC11}mgf1sha256`);
  oaep.appendChild(mgf);
  for (const algorithm of KEY_TRANSPORT_ALGORITHMS) method(algorithm);
}

/**
 * SP metadata, signed by the SP: entity id, ACS, single logout (HTTP-POST and HTTP-Redirect), and every SP
 * certificate for signing and for encryption. node-saml writes one encryption certificate and the POST logout
 * service; the rollover certificate and the Redirect logout service are added to its document.
 */
export function spMetadataXml(connection: identity.SsoConnection, settings: SpSettings & { keys: SpKeys }): string {
  const { keys } = settings;
  const certificates = keys.rollover ? [keys.certificate, keys.rollover.certificate] : [keys.certificate];
  const xml = samlFor(connection, settings, NO_REQUESTS, { forMetadata: true }).generateServiceProviderMetadata(keys.certificate, certificates);
  const doc = parseXml(xml);
  const slo = doc.getElementsByTagName('SingleLogoutService')[0]!;
  const redirect = slo.cloneNode(true) as typeof slo;
  redirect.setAttribute('Binding', REDIRECT_BINDING);
  slo.parentNode!.insertBefore(redirect, slo.nextSibling);
  const encryption = descendantsNS(doc, NS.md, 'KeyDescriptor').find((k) => k.getAttribute('use') === 'encryption')!;
  advertiseEncryption(doc, encryption);
  if (keys.rollover) {
    const next = encryption.cloneNode(true) as typeof encryption;
    descendantsNS(next, NS.ds, 'X509Certificate')[0]!.textContent = PEM_BODY(keys.rollover.certificate);
    encryption.parentNode!.insertBefore(next, encryption.nextSibling);
  }
  // Signed last, over the finished document, with the active key (enveloped, RSA-SHA256): IdPs that import
  // metadata by URL can check it came from us.
  return signMetadata(new XMLSerializer().serializeToString(doc), keys);
}

const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

/**
 * SP-initiated single logout: a signed LogoutRequest (HTTP-Redirect) for the subject of a SAML session, to the
 * IdP's SingleLogoutService; its id is stored (as a logout request) with where the browser goes once the IdP
 * answers. Undefined when the IdP metadata names no logout service.
 */
export async function singleLogoutUrl(
  connection: identity.SsoConnection,
  settings: SpSettings & { keys: SpKeys },
  store: RequestIdStore,
  subject: { nameId: string; nameIdFormat: string; sessionIndex: string },
  returnTo: string,
): Promise<string | undefined> {
  const logout = idpLogoutService(connection.idpMetadataXml);
  if (!logout) return undefined;
  const cache = requestIdCache(store, connection.id, settings.requestTtlSeconds, { returnTo, binding: '' }, 'logout');
  const saml = samlFor(connection, settings, cache, { logoutUrl: logout.url });
  const profile = { issuer: connection.idpEntityId, nameID: subject.nameId, nameIDFormat: subject.nameIdFormat || EMAIL_FORMAT, ...(subject.sessionIndex && { sessionIndex: subject.sessionIndex }) };
  return saml.getLogoutUrlAsync(profile, '', {});
}
