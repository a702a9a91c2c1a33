// What the OAuth client pages compute: the redirect URIs typed one per line (each checked as an absolute
// http(s) URL while typing; the API adds its own rules: https unless loopback, the canonical form), the scopes
// offered, the console's own clients, and the changes an edit sends.
import type { operations, Schemas } from '@secsvc/client';
import type { FieldDetail } from '../../api/errors';

export type OAuthClient = Schemas['OAuthClient'];
export type ClientType = OAuthClient['type'];
export type UpdateClientBody = NonNullable<operations['updateOAuthClient']['requestBody']>['content']['application/json'];
type Scope = NonNullable<UpdateClientBody['scopes']>[number];

/** The API's limit of redirect URIs per client. */
export const MAX_REDIRECT_URIS = 10;

/** Every scope the authorization server knows (GET /.well-known/openid-configuration scopes_supported), with what it gives. */
export const SCOPES: { value: string; label: string; hint: string }[] = [
  { value: 'openid', label: 'openid', hint: 'an ID token (OpenID Connect)' },
  { value: 'profile', label: 'profile', hint: "the user's name" },
  { value: 'email', label: 'email', hint: "the user's email" },
  { value: 'offline_access', label: 'offline_access', hint: 'refresh tokens' },
  { value: 'read:users', label: 'read:users', hint: 'read users and sessions' },
  { value: 'write:users', label: 'write:users', hint: 'change users and sessions' },
  { value: 'read:policies', label: 'read:policies', hint: 'read policies, simulate' },
  { value: 'write:policies', label: 'write:policies', hint: 'change policies' },
  { value: 'read:logs', label: 'read:logs', hint: 'read and search the audit log' },
  { value: 'export:logs', label: 'export:logs', hint: 'export the audit log' },
  { value: 'read:api_keys', label: 'read:api_keys', hint: 'read API keys (masked)' },
  { value: 'write:api_keys', label: 'write:api_keys', hint: 'create, rotate, revoke API keys' },
  { value: 'read:clients', label: 'read:clients', hint: 'read OAuth clients' },
  { value: 'write:clients', label: 'write:clients', hint: 'register, change, delete OAuth clients' },
  { value: 'read:sso', label: 'read:sso', hint: 'read SSO connections' },
  { value: 'write:sso', label: 'write:sso', hint: 'change SSO connections' },
];

/** The scopes to offer for a client: the known ones, then any other the client holds (so an edit never drops one silently). */
export function scopeChoices(held: readonly string[]): { value: string; label: string; hint?: string }[] {
  const known = new Set(SCOPES.map((s) => s.value));
  return [...SCOPES, ...held.filter((s) => !known.has(s)).map((s) => ({ value: s, label: s }))];
}

/** In the order the choices list them (stable bodies and comparisons). */
export function orderScopes(scopes: readonly string[], held: readonly string[] = []): string[] {
  const order = scopeChoices(held).map((c) => c.value);
  return [...scopes].sort((a, b) => order.indexOf(a) - order.indexOf(b));
}

/**
 * The redirect URIs textarea: one URI a line (blank lines ignored). Problems are named like the API's
 * (`redirectUris[1]`), counted among the URIs given.
 */
export function parseRedirectUris(text: string): { uris: string[]; problems: FieldDetail[] } {
  const uris = text
    .split(/\s+/)
    .map((u) => u.trim())
    .filter(Boolean);
  const problems: FieldDetail[] = [];
  uris.forEach((u, i) => {
    const field = `redirectUris[${i}]`;
    let url: URL | undefined;
    try {
      url = new URL(u);
    } catch {
      url = undefined;
    }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) problems.push({ field, message: 'must be an absolute http(s) URL' });
    else if (uris.indexOf(u) !== i) problems.push({ field, message: 'is listed twice' });
  });
  if (uris.length > MAX_REDIRECT_URIS) problems.push({ field: 'redirectUris', message: `at most ${MAX_REDIRECT_URIS} entries` });
  return { uris, problems };
}

export const formatRedirectUris = (uris: readonly string[]) => uris.join('\n');

/** One of the console's own clients: first party, and a redirect URI of the console (`<ISSUER>/console/callback`). */
export function isConsoleClient(c: Pick<OAuthClient, 'firstParty' | 'redirectUris'>): boolean {
  return c.firstParty && c.redirectUris.some((u) => {
    try {
      return new URL(u).pathname === '/console/callback';
    } catch {
      return false;
    }
  });
}

export interface ClientEdit {
  name: string;
  redirectUris: string[];
  scopes: string[];
  firstParty: boolean;
}

/** What an edit changed (arrays replace the stored ones as a whole, so a changed list is sent whole). */
export function clientChanges(client: OAuthClient, edit: ClientEdit): UpdateClientBody {
  const body: UpdateClientBody = {};
  if (edit.name !== client.name) body.name = edit.name;
  if (edit.redirectUris.join('\n') !== client.redirectUris.join('\n')) body.redirectUris = edit.redirectUris;
  const scopes = orderScopes(edit.scopes, client.scopes);
  if (scopes.join(' ') !== orderScopes(client.scopes, client.scopes).join(' ')) body.scopes = scopes as Scope[]; // the API names a scope it does not know
  if (edit.firstParty !== client.firstParty) body.firstParty = edit.firstParty;
  return body;
}
