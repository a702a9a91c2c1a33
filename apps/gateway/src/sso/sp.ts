import type { identity } from '@secsvc/proto';
import { SAML, ValidateInResponseTo, type CacheProvider } from '@node-saml/node-saml';

/** The service provider's key pair: signs AuthnRequests, decrypts encrypted assertions, published in SP metadata. */
export interface SpKeys {
  privateKey: string;
  certificate: string;
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
  return { entityId: `${base}/metadata`, metadataUrl: `${base}/metadata`, acsUrl: `${base}/acs`, loginUrl: `${base}/login`, continueUrl: `${base}/continue` };
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
): CacheProvider & { taken(): SavedRequest | undefined } {
  const seen = new Map<string, string | null>();
  let taken: SavedRequest | undefined;
  return {
    taken: () => taken,
    async saveAsync(key, value) {
      await store.save(key, ttlSeconds, { connectionId, ...request });
      return { value, createdAt: Date.now() };
    },
    async getAsync(key) {
      if (!seen.has(key)) {
        const stored = await store.take(key);
        const ours = stored?.connectionId === connectionId;
        if (ours) taken = stored;
        seen.set(key, ours ? new Date().toISOString() : null);
      }
      return seen.get(key)!;
    },
    // Taking already removed it.
    removeAsync: async () => null,
  };
}

/** A node-saml service provider for one connection: signed requests, signed assertions required, strict conditions. */
export function samlFor(connection: identity.SsoConnection, settings: SpSettings & { keys: SpKeys }, cache: CacheProvider): SAML {
  const urls = spUrls(settings.baseUrl, connection.id);
  return new SAML({
    issuer: urls.entityId,
    callbackUrl: urls.acsUrl,
    audience: urls.entityId,
    entryPoint: connection.idpSsoUrl,
    idpIssuer: connection.idpEntityId,
    idpCert: connection.idpCertificates,
    privateKey: settings.keys.privateKey,
    publicCert: settings.keys.certificate,
    decryptionPvk: settings.keys.privateKey,
    signatureAlgorithm: 'sha256',
    digestAlgorithm: 'sha256',
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: settings.clockSkewMs,
    validateInResponseTo: connection.allowIdpInitiated ? ValidateInResponseTo.ifPresent : ValidateInResponseTo.always,
    requestIdExpirationPeriodMs: settings.requestTtlSeconds * 1000,
    cacheProvider: cache,
    identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
    disableRequestedAuthnContext: true,
  });
}

export function spMetadataXml(connection: identity.SsoConnection, settings: SpSettings & { keys: SpKeys }): string {
  const saml = samlFor(connection, settings, { saveAsync: async () => null, getAsync: async () => null, removeAsync: async () => null });
  return saml.generateServiceProviderMetadata(settings.keys.certificate, settings.keys.certificate);
}
