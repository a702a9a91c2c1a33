import type { Request, Response } from 'express';

// Cookies of the browser-facing endpoints, shared by the OAuth authorization server (oauth/*) and the SAML
// service provider (sso/*): reading one, setting one, and the login session cookie both of them set.

/** The login session at the authorization server: set by the login page and by a SAML login. */
export const SESSION_COOKIE = 'secsvc_oauth_session';

export function readCookie(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** A cookie scoped to /oauth (or `path`), HttpOnly, Secure when the issuer is https. */
export function setCookie(
  res: Response,
  name: string,
  value: string,
  opts: { secure: boolean; sameSite: 'Strict' | 'Lax'; maxAgeSeconds?: number; path?: string },
): void {
  const parts = [`${name}=${value}`, `Path=${opts.path ?? '/oauth'}`, 'HttpOnly', `SameSite=${opts.sameSite}`];
  if (opts.secure) parts.push('Secure');
  if (opts.maxAgeSeconds !== undefined) parts.push(`Max-Age=${opts.maxAgeSeconds}`);
  res.append('Set-Cookie', parts.join('; '));
}
