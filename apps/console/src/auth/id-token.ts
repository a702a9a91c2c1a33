// The claims of the ID token the token endpoint answered. Its signature is not checked here: the token comes
// straight from this origin's token endpoint over the connection the browser opened (OpenID Connect Core
// 3.1.3.7: TLS validation may stand in for it in the code flow); its issuer, audience, nonce and expiry are.

export interface IdClaims {
  iss: string;
  sub: string;
  aud: string | string[];
  exp: number;
  iat?: number;
  nonce?: string;
  azp?: string;
  email?: string;
  name?: string;
}

/** The payload of a compact JWS, as JSON (base64url, UTF-8). */
export function decodeJwtPayload(jwt: string): Record<string, unknown> {
  const parts = jwt.split('.');
  if (parts.length !== 3) throw new Error('the ID token is not a JWT');
  const b64 = parts[1]!.replace(/-/g, '+').replace(/_/g, '/');
  const binary = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  const value: unknown = JSON.parse(new TextDecoder().decode(bytes));
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new Error('the ID token payload is not an object');
  return value as Record<string, unknown>;
}

/** The ID token's claims once iss, aud (and azp), nonce and exp hold (OpenID Connect Core 3.1.3.7); else throws. */
export function checkIdToken(idToken: string, expected: { issuer: string; clientId: string; nonce: string; now: number; skewSeconds?: number }): IdClaims {
  const c = decodeJwtPayload(idToken) as Partial<IdClaims>;
  const skew = expected.skewSeconds ?? 120;
  if (c.iss !== expected.issuer) throw new Error(`the ID token's issuer is ${String(c.iss)}, not ${expected.issuer}`);
  const audiences = Array.isArray(c.aud) ? c.aud : [c.aud];
  if (!audiences.includes(expected.clientId)) throw new Error('the ID token is not for this client');
  if (audiences.length > 1 && c.azp !== expected.clientId) throw new Error('the ID token names another authorized party');
  if (c.nonce !== expected.nonce) throw new Error('the ID token does not carry the nonce of this sign-in');
  if (typeof c.exp !== 'number' || c.exp + skew < expected.now / 1000) throw new Error('the ID token has expired');
  if (typeof c.sub !== 'string' || !c.sub) throw new Error('the ID token names no subject');
  return c as IdClaims;
}
