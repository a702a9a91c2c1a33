import { createHash } from 'node:crypto';
import { ADMINISTRATIVE_SCOPES, OAUTH_SCOPES, type FieldError } from '@secsvc/shared';
import { hashOpaqueToken, sameHash } from './opaque-tokens';

// The rules of the OAuth 2.0 authorization server that need no I/O: scopes, redirect URIs, PKCE and the
// validation of authorization requests and client registrations.

/** Every scope the server knows: OpenID Connect's and one per API area. */
export const SCOPES = OAUTH_SCOPES;

/** Scopes about a user: meaningless for client_credentials tokens, which act as the client itself. */
export const USER_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);

export const CODE_TTL_SECONDS = 60;
export const CLIENT_TYPES = ['public', 'confidential'] as const;
export type ClientType = (typeof CLIENT_TYPES)[number];

/** An OAuth protocol error (RFC 6749 4.1.2.1 and 5.2): a result, not an exception. */
export interface OAuthError {
  error: string;
  description: string;
}

export const oauthError = (error: string, description: string): OAuthError => ({ error, description });

/** "a b c" -> ['a', 'b', 'c'] (RFC 6749 3.3: space-delimited, case-sensitive), duplicates dropped. */
export function parseScope(scope: string): string[] {
  return [...new Set(scope.split(' ').filter(Boolean))];
}

/** The scopes of `requested` that `allowed` does not contain. */
export function scopesOutside(requested: string[], allowed: readonly string[]): string[] {
  const set = new Set(allowed);
  return requested.filter((s) => !set.has(s));
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/**
 * A redirect URI a client may register: absolute, no fragment, no credentials, https, or http for a
 * loopback host only (RFC 8252 7.3). Matched exactly at authorization time (no wildcards).
 */
export function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > 2000) return 'must be at most 2000 characters';
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https URL (http only for loopback hosts)';
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) return 'http is allowed only for loopback hosts (127.0.0.1, [::1], localhost)';
  if (uri.includes('#')) return 'must not contain a fragment';
  if (uri.includes('*')) return 'must not contain wildcards (redirect URIs are matched exactly)';
  if (url.username || url.password) return 'must not contain credentials';
  if (url.href !== uri && url.href !== `${uri}/`) return 'must be in canonical form (as the URL standard writes it)';
  return undefined;
}

/** Validates a client registration (create, or the fields given to an update). */
export function validateClientFields(
  input: { name?: string; type?: string; redirectUris?: string[]; scopes?: string[] },
  type: string | undefined,
): FieldError[] {
  const errors: FieldError[] = [];
  if (input.name !== undefined && (!input.name.trim() || input.name.length > 100)) errors.push({ field: 'name', message: 'must be 1 to 100 characters' });
  if (input.type !== undefined && !CLIENT_TYPES.includes(input.type as ClientType)) errors.push({ field: 'type', message: 'must be public or confidential' });
  if (input.redirectUris !== undefined) {
    if (input.redirectUris.length > 10) errors.push({ field: 'redirectUris', message: 'at most 10 redirect URIs' });
    if (type === 'public' && input.redirectUris.length === 0) errors.push({ field: 'redirectUris', message: 'a public client needs at least one redirect URI' });
    input.redirectUris.forEach((uri, i) => {
      const problem = redirectUriProblem(uri);
      if (problem) errors.push({ field: `redirectUris[${i}]`, message: problem });
      else if (input.redirectUris!.indexOf(uri) !== i) errors.push({ field: `redirectUris[${i}]`, message: 'duplicate' });
    });
  }
  if (input.scopes !== undefined) {
    if (input.scopes.length === 0) errors.push({ field: 'scopes', message: 'at least one scope' });
    input.scopes.forEach((scope, i) => {
      if (!(SCOPES as readonly string[]).includes(scope)) errors.push({ field: `scopes[${i}]`, message: `unknown scope; one of ${SCOPES.join(', ')}` });
      else if (input.scopes!.indexOf(scope) !== i) errors.push({ field: `scopes[${i}]`, message: 'duplicate' });
    });
  }
  return errors;
}

/**
 * Administrative scopes belong to first-party clients only (ADMINISTRATIVE_SCOPES): on a client that is not (or
 * stops being) first party each is named, as `scopes[i]`, or as `firstParty` when the change is the flag's.
 */
export function administrativeScopeErrors(scopes: readonly string[], firstParty: boolean, scopesGiven: boolean): FieldError[] {
  if (firstParty) return [];
  const admin = scopes.flatMap((s, i) => (ADMINISTRATIVE_SCOPES.includes(s) ? [{ i, s }] : []));
  if (!admin.length) return [];
  if (!scopesGiven) return [{ field: 'firstParty', message: `must stay true while the client has ${admin.map((a) => a.s).join(', ')} (administrative scopes are for first-party clients)` }];
  return admin.map(({ i, s }) => ({ field: `scopes[${i}]`, message: `${s} is an administrative scope: only a first-party client may have it` }));
}

const PKCE_VALUE = /^[A-Za-z0-9._~-]{43,128}$/;

/** RFC 7636 4.6: BASE64URL(SHA256(code_verifier)) equals the code challenge (compared in constant time). */
export function pkceMatches(verifier: string, challenge: string): boolean {
  if (!PKCE_VALUE.test(verifier)) return false;
  const derived = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  return sameHash(derived, Buffer.from(challenge));
}

/** OpenID Connect Core 3.1.3.6: at_hash is the left half of SHA-256 of the access token, base64url. */
export function atHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest().subarray(0, 16).toString('base64url');
}

export interface AuthorizationParams {
  responseType: string;
  scope: string;
  state: string;
  nonce: string;
  codeChallenge: string;
  codeChallengeMethod: string;
  prompt: string;
  maxAge: string;
  repeatedParams: string[];
}

export interface CheckedAuthorization {
  scopes: string[];
  prompts: Set<string>;
  /** Seconds; undefined when not asked. */
  maxAge: number | undefined;
}

/**
 * Validates an authorization request once its client and redirect URI are trusted: every failure here is
 * reported to the client by redirect (RFC 6749 4.1.2.1).
 */
export function checkAuthorization(p: AuthorizationParams, client: { type: string; scopes: string[] }): CheckedAuthorization | OAuthError {
  const repeated = p.repeatedParams.filter((n) => n !== 'client_id' && n !== 'redirect_uri');
  if (repeated.length) return oauthError('invalid_request', `${repeated[0]}: given more than once`);
  if (!p.responseType) return oauthError('invalid_request', 'response_type: is required');
  if (p.responseType !== 'code') return oauthError('unsupported_response_type', 'response_type: only "code" is supported');
  if (p.state.length > 1024) return oauthError('invalid_request', 'state: at most 1024 characters');
  if (p.nonce.length > 512) return oauthError('invalid_request', 'nonce: at most 512 characters');
  if (p.codeChallengeMethod && !p.codeChallenge) return oauthError('invalid_request', 'code_challenge: is required with code_challenge_method');
  if (p.codeChallenge) {
    if ((p.codeChallengeMethod || 'plain') !== 'S256') return oauthError('invalid_request', 'code_challenge_method: only S256 is accepted (plain is refused)');
    if (!/^[A-Za-z0-9_-]{43}$/.test(p.codeChallenge)) return oauthError('invalid_request', 'code_challenge: must be the 43-character base64url SHA-256 of the verifier');
  } else if (client.type === 'public') {
    return oauthError('invalid_request', 'code_challenge: PKCE (S256) is required for public clients');
  }
  const prompts = new Set(p.prompt.split(' ').filter(Boolean));
  for (const v of prompts) if (!['none', 'login', 'consent', 'select_account'].includes(v)) return oauthError('invalid_request', `prompt: unknown value ${v}`);
  if (prompts.has('none') && prompts.size > 1) return oauthError('invalid_request', 'prompt: none cannot be combined with other values');
  let maxAge: number | undefined;
  if (p.maxAge) {
    if (!/^\d{1,9}$/.test(p.maxAge)) return oauthError('invalid_request', 'max_age: must be a number of seconds');
    maxAge = Number(p.maxAge);
  }
  const scopes = parseScope(p.scope);
  if (!scopes.length) return oauthError('invalid_scope', 'scope: at least one scope is required');
  const outside = scopesOutside(scopes, client.scopes);
  if (outside.length) return oauthError('invalid_scope', `scope: not allowed for this client: ${outside.join(' ')}`);
  return { scopes, prompts, maxAge };
}

/** RFC 6749 4.1.2 / 4.1.2.1 and RFC 9207: the redirect URI with the response parameters added. */
export function redirectWith(redirectUri: string, params: Record<string, string | undefined>): string {
  const url = new URL(redirectUri);
  for (const [k, v] of Object.entries(params)) if (v) url.searchParams.append(k, v);
  return url.href;
}

// Secrets of the authorization server, handed out once and stored as keyed hashes (opaque-tokens.ts).
export const CLIENT_SECRET_PREFIX = 'ocs_';
export const CODE_PREFIX = 'ocd_';
export const REFRESH_TOKEN_PREFIX = 'ort_';

export const hashClientSecret = (secret: string, serverSecret: string) => hashOpaqueToken('oauth-client-secret', secret, serverSecret);
export const hashCode = (code: string, serverSecret: string) => hashOpaqueToken('oauth-code', code, serverSecret);
export const hashRefreshToken = (token: string, serverSecret: string) => hashOpaqueToken('oauth-refresh', token, serverSecret);

/** An OAuth error answer: RFC 6749 error code, description and the HTTP status to send. */
export interface Failure {
  error: string;
  errorDescription: string;
  status: number;
  retryAfterSeconds: number;
}

export const failure = (error: string, errorDescription: string, status = 400, retryAfterSeconds = 0): Failure => ({
  error,
  errorDescription,
  status,
  retryAfterSeconds,
});

export const isFailure = (x: unknown): x is Failure => typeof x === 'object' && x !== null && 'error' in x && 'status' in x;

/** The tokens of one grant as the token endpoint answers them. */
export interface IssuedTokens {
  accessToken: string;
  tokenType: 'Bearer';
  expiresIn: number;
  scope: string;
  refreshToken: string;
  idToken: string;
}

/** The claims of one of our access tokens. */
export type AccessClaims = { sub: string; sid: string; env: string; scope?: string; client_id?: string; [claim: string]: unknown };

export const grantTarget = (grantId: string) => ({ id: grantId, type: 'oauth_grant' });

/** Who acts through a grant: its user, or the client itself (client_credentials). */
export const actorOf = (grant: { user_id: string | null; client_id: string }) =>
  grant.user_id ? { id: grant.user_id, type: 'user' } : { id: grant.client_id, type: 'oauth_client' };

/** The OpenID Connect claims `scopes` release about a user (profile: name, updated_at; email: email, email_verified). */
export function userClaims(user: { name: string; email: string; email_verified: boolean; updated_at: Date }, scopes: string[]): Record<string, unknown> {
  return {
    ...(scopes.includes('profile') ? { name: user.name, updated_at: Math.floor(user.updated_at.getTime() / 1000) } : {}),
    ...(scopes.includes('email') ? { email: user.email, email_verified: user.email_verified } : {}),
  };
}

/** How a user authenticated, as a session, a code and a grant record it. */
export interface Authentication {
  /** RFC 8176 methods (pwd, otp, hwk, user, mfa); empty when nothing is known (a session the application opened). */
  amr: string[];
  /** The authentication context class (urn:secsvc:acr:1fa or urn:secsvc:acr:mfa); empty when unknown. */
  acr: string;
  /** When the user last authenticated; null for grants without a user (client_credentials). */
  authTime: Date | null;
}

/**
 * OpenID Connect auth_time of a session: its latest completed MFA (a step-up authenticates the user again),
 * else when it was opened (its login).
 */
export const sessionAuthTime = (s: { created_at: Date; mfa_at: Date | null }): Date => s.mfa_at ?? s.created_at;

/** A session's authentication (amr, acr, auth_time). */
export const authenticationOfSession = (s: { amr: string[]; acr: string; created_at: Date; mfa_at: Date | null }): Authentication => ({
  amr: s.amr,
  acr: s.acr,
  authTime: sessionAuthTime(s),
});

/**
 * The claims of ID tokens, access tokens (RFC 9068 2.2.1) and introspection answers that tell how the user
 * authenticated: amr (an array, RFC 8176), acr and auth_time (epoch seconds). Unknown values are left out.
 */
export function authenticationClaims(a: Authentication): { amr?: string[]; acr?: string; auth_time?: number } {
  return {
    ...(a.amr.length ? { amr: [...a.amr] } : {}),
    ...(a.acr ? { acr: a.acr } : {}),
    ...(a.authTime ? { auth_time: Math.floor(a.authTime.getTime() / 1000) } : {}),
  };
}

/** Scopes of a client_credentials token must be API scopes: the user ones have no user to speak of. */
export const apiScopesOf = (scopes: string[]) => scopes.filter((s) => !USER_SCOPES.has(s));

/** The key failed client authentications are counted under, per client (as failed logins are per account). */
export const clientThrottleKey = (clientId: string) => `oauth-client:${clientId.slice(0, 64)}`;

/** The shape of a client id: anything else is not looked up. */
export const looksLikeClientId = (id: string) => /^cli_[0-9a-z]{26}$/.test(id);
