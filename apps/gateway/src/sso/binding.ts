import { createCipheriv, createDecipheriv, createHash, createPrivateKey, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request } from 'express';
import { readCookie } from '../http/cookies';

// Binding an SP-initiated login to the browser that started it (no login CSRF: a SAML response obtained in one
// browser cannot sign in another). `/login` gives the browser a random nonce in an HttpOnly cookie and stores
// its SHA-256 with the AuthnRequest id. The IdP's POST to the ACS is cross-site, so a SameSite=Lax cookie does
// not come with it: the ACS validates the response, seals what it learnt into a short-lived `state`, and sends
// the browser on with a GET (a top-level navigation, which carries Lax cookies) to `/continue`, where the login
// completes only if the cookie's nonce matches.

/**
 * The nonce cookie. Under https it is a `__Host-` cookie (Secure, Path=/, no Domain): a sibling subdomain or a
 * plain-http response cannot set or overwrite it, so an attacker cannot plant their own nonce in a victim's
 * browser (which would let the victim finish the attacker's login). Plain http (local profile): path-scoped.
 */
export function bindingCookie(secure: boolean): { name: string; path: string } {
  return secure ? { name: '__Host-secsvc_saml_binding', path: '/' } : { name: 'secsvc_saml_binding', path: '/v1/sso/saml/' };
}
const NONCE = /^[A-Za-z0-9_-]{43}$/;
/** How long the sealed state of a validated response may wait for its browser. */
export const STATE_TTL_MS = 120_000;

/** The browser's nonce: the one in its cookie (several tabs share it), else a new one. */
export function browserNonce(req: Request, cookieName: string): string {
  const cookie = readCookie(req, cookieName);
  return cookie && NONCE.test(cookie) ? cookie : randomBytes(32).toString('base64url');
}

/** What identity stores: the nonce's SHA-256 (base64url). */
export const bindingOf = (nonce: string) => createHash('sha256').update(nonce).digest('base64url');

/** True when this browser's cookie holds the nonce of `binding` (compared in constant time). */
export function sameBrowser(req: Request, cookieName: string, binding: string): boolean {
  const cookie = readCookie(req, cookieName);
  if (!cookie || !NONCE.test(cookie) || !binding) return false;
  const a = Buffer.from(bindingOf(cookie));
  const b = Buffer.from(binding);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A validated response waiting for its browser. */
export interface PendingLogin {
  connectionId: string;
  assertionId: string;
  assertionExpiresAt: string;
  nameId: string;
  /** The NameID's Format and the AuthnStatement's SessionIndex (single logout), or empty. */
  nameIdFormat: string;
  sessionIndex: string;
  email: string;
  name: string;
  returnTo: string;
  relayState: string;
  /** The assertion's AuthnContextClassRef values (absent in a state sealed before they were kept). */
  authnContextClassRefs?: string[];
  binding: string;
  /** Epoch ms after which the state is refused. */
  expires: number;
}

/**
 * The key sealing pending logins, derived from the SP private key (every gateway replica has it; nothing else
 * to configure). HKDF with its own label keeps it independent of the key's RSA use.
 */
export function stateKey(privateKeyPem: string): Buffer {
  const der = createPrivateKey(privateKeyPem).export({ format: 'der', type: 'pkcs8' });
  return Buffer.from(hkdfSync('sha256', der, 'secsvc-saml', 'pending-login-state-v1', 32));
}

/** AES-256-GCM, the connection id as associated data: a state for one connection does not open at another. */
export function sealState(key: Buffer, state: PendingLogin): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(state.connectionId));
  const body = Buffer.concat([cipher.update(JSON.stringify(state), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}

function open(key: Buffer, raw: Buffer, connectionId: string): PendingLogin | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(connectionId));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as PendingLogin;
  } catch {
    return undefined;
  }
}

/**
 * The state, or why not: tampered, sealed for another connection or key, or expired. `keys`: the active key's
 * and, during an SP key rollover, the other pair's (a state sealed just before the switch still opens).
 */
export function openState(keys: Buffer[], token: string, connectionId: string, now = Date.now()): PendingLogin | 'invalid_state' | 'expired_state' {
  if (!/^[A-Za-z0-9_-]{40,8192}$/.test(token)) return 'invalid_state';
  const raw = Buffer.from(token, 'base64url');
  let state: PendingLogin | undefined;
  for (const key of keys) state ??= open(key, raw, connectionId);
  if (!state || state.connectionId !== connectionId) return 'invalid_state';
  return now > state.expires ? 'expired_state' : state;
}
