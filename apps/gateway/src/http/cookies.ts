import type { Request, Response } from 'express';

// Cookies of the browser-facing endpoints, shared by the OAuth authorization server (oauth/*) and the SAML
// service provider (sso/*): reading one, setting one, and the login session cookie both of them set.

/** The login session at the authorization server: set by the login page and by a SAML login, ended by /oauth/logout. */
export const SESSION_COOKIE = 'secsvc_oauth_session';
/** How long a login session at the authorization server lasts (its session and its cookie). */
export const LOGIN_SESSION_SECONDS = 24 * 3600;

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

/** Sets the login session cookie (Lax: it must come along on the client's redirect to /oauth/authorize), or with '' ends it. */
export function setLoginSession(res: Response, token: string, secure: boolean): void {
  setCookie(res, SESSION_COOKIE, token, { secure, sameSite: 'Lax', maxAgeSeconds: token ? LOGIN_SESSION_SECONDS : 0 });
}
