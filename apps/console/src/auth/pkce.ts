// PKCE (RFC 7636) with S256, and the random values of an authorization request (state, nonce), from the
// browser's Web Crypto (also Node's, for the unit tests).

/** Bytes as base64url without padding (RFC 4648 5). */
export function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** `bytes` random bytes as base64url: 32 give 43 characters, the shortest code_verifier RFC 7636 allows. */
export function randomToken(bytes = 32): string {
  const buf = new Uint8Array(bytes);
  crypto.getRandomValues(buf);
  return base64url(buf);
}

/** code_challenge = BASE64URL(SHA-256(ASCII(code_verifier))) (RFC 7636 4.2). */
export async function s256Challenge(verifier: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

export interface Pkce {
  verifier: string;
  challenge: string;
  method: 'S256';
}

/** A fresh verifier and its S256 challenge. */
export async function newPkce(): Promise<Pkce> {
  const verifier = randomToken(32);
  return { verifier, challenge: await s256Challenge(verifier), method: 'S256' };
}
