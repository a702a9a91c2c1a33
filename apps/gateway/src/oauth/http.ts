import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import { readCookie, setCookie } from '../http/cookies';

// HTTP details of the OAuth endpoints: the CSRF cookie, form parameters, client authentication (RFC 6749
// 2.3.1) and the JSON error answers of RFC 6749 5.2. The cookies themselves are in http/cookies.ts.

export const CSRF_COOKIE = 'secsvc_oauth_csrf';

/** A fresh CSRF token (32 random bytes). */
export const newCsrfToken = () => randomBytes(32).toString('base64url');

/** A fresh CSRF token in its cookie (Strict, Secure under an https issuer), for the page about to be sent. */
export function csrfFor(res: Response, deps: { issuer: string }): string {
  const csrf = newCsrfToken();
  setCookie(res, CSRF_COOKIE, csrf, { secure: deps.issuer.startsWith('https:'), sameSite: 'Strict' });
  return csrf;
}

/** Double submit: the form's token equals the HttpOnly cookie's (compared in constant time); the OAuth pages' cookie unless named. */
export function csrfValid(req: Request, formValue: string, cookieName = CSRF_COOKIE): boolean {
  const cookie = readCookie(req, cookieName);
  if (!cookie || !formValue || cookie.length !== formValue.length || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) return false;
  return timingSafeEqual(Buffer.from(cookie), Buffer.from(formValue));
}

/** Parameters of a query or an urlencoded body: single values, and the names given more than once. */
export function paramsOf(source: unknown): { get: (name: string) => string; repeated: string[] } {
  const record = (typeof source === 'object' && source !== null ? source : {}) as Record<string, unknown>;
  const repeated = Object.keys(record).filter((k) => Array.isArray(record[k]));
  return {
    get: (name) => {
      const v = Object.hasOwn(record, name) ? record[name] : undefined;
      return typeof v === 'string' ? v : '';
    },
    repeated,
  };
}

/** The parameters of an authorization request, carried through the pages' forms (identity takes all but acr_values). */
export const AUTHORIZATION_PARAMS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  // Read by the gateway (urn:secsvc:acr:mfa asks for a step-up), carried like the others; identity refuses it repeated.
  'acr_values',
] as const;

export function authorizationRequest(p: ReturnType<typeof paramsOf>) {
  return {
    clientId: p.get('client_id'),
    redirectUri: p.get('redirect_uri'),
    responseType: p.get('response_type'),
    scope: p.get('scope'),
    state: p.get('state'),
    nonce: p.get('nonce'),
    codeChallenge: p.get('code_challenge'),
    codeChallengeMethod: p.get('code_challenge_method'),
    prompt: p.get('prompt'),
    maxAge: p.get('max_age'),
    repeatedParams: p.repeated.filter((n) => (AUTHORIZATION_PARAMS as readonly string[]).includes(n)),
  };
}

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
  clientAuthMethod: 'client_secret_basic' | 'client_secret_post' | 'none';
}

const formDecode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));

/**
 * How the client authenticates (RFC 6749 2.3.1): HTTP Basic (client_id and secret form-encoded), or
 * client_id and client_secret in the body, or client_id alone (public clients). Using two methods at once,
 * or naming two different client ids, is an error.
 */
export function clientCredentialsOf(req: Request, p: ReturnType<typeof paramsOf>): ClientCredentials | { error: string; invalidClient?: true } {
  const header = req.get('authorization');
  const bodyId = p.get('client_id');
  const bodySecret = p.get('client_secret');
  if (p.repeated.includes('client_id') || p.repeated.includes('client_secret')) return { error: 'client_id or client_secret given more than once' };
  if (header) {
    // RFC 6749 5.2: an unsupported authentication method is invalid_client (401), as a malformed one is not.
    if (!/^Basic /i.test(header)) return { error: 'clients authenticate with HTTP Basic or client_secret_post, not another Authorization scheme', invalidClient: true };
    const m = /^Basic ([A-Za-z0-9+/=]{1,2048})$/i.exec(header);
    if (!m) return { error: 'Authorization must be HTTP Basic client credentials' };
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return { error: 'malformed HTTP Basic credentials' };
    let id: string;
    let secret: string;
    try {
      id = formDecode(decoded.slice(0, colon));
      secret = formDecode(decoded.slice(colon + 1));
    } catch {
      return { error: 'malformed HTTP Basic credentials' };
    }
    if (bodySecret) return { error: 'use one client authentication method, not two' };
    if (bodyId && bodyId !== id) return { error: 'client_id in the body differs from the HTTP Basic credentials' };
    return { clientId: id, clientSecret: secret, clientAuthMethod: 'client_secret_basic' };
  }
  if (bodySecret) return { clientId: bodyId, clientSecret: bodySecret, clientAuthMethod: 'client_secret_post' };
  return { clientId: bodyId, clientSecret: '', clientAuthMethod: 'none' };
}

/** An RFC 6749 5.2 error: JSON, no-store, WWW-Authenticate for invalid_client, Retry-After for 429. */
export function sendOAuthError(
  res: Response,
  f: { error: string; errorDescription: string; status: number; retryAfterSeconds?: number },
  basic = false,
): void {
  res.setHeader('Cache-Control', 'no-store');
  if (f.status === 401) res.setHeader('WWW-Authenticate', basic ? 'Basic realm="secsvc"' : 'Bearer realm="secsvc"');
  if (f.retryAfterSeconds) res.setHeader('Retry-After', String(f.retryAfterSeconds));
  res.status(f.status || 400).json({ error: f.error, error_description: f.errorDescription });
}

/** OAuth requests carry their parameters form-encoded (RFC 6749 3.2). */
export function isForm(req: Request): boolean {
  return req.is('application/x-www-form-urlencoded') === 'application/x-www-form-urlencoded';
}
