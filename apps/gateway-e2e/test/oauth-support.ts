import { createHash, randomBytes } from 'node:crypto';
import type { LocalStack } from '@secsvc/dev/stack';
import { startTestStack, type Api } from './support';

export const PASSWORD = 'correct horse battery staple';

export interface OAuthStack {
  stack: LocalStack;
  api: Api;
  /** The issuer: the gateway's origin. */
  issuer: string;
  stop: () => Promise<void>;
}

/** The whole stack on free ports, its anonymous (per-ip) budget raised for the many OAuth calls of one suite. */
export async function startOAuthStack(name: string, key: string, env: Record<string, string> = {}): Promise<OAuthStack> {
  const t = await startTestStack(name, key, { RATE_LIMIT_ANONYMOUS_PER_MINUTE: '100000', ...env });
  return { ...t, issuer: new URL(t.stack.baseUrl).origin };
}

/** A user with a password, and an allow-all policy for that user so API calls are decided by scopes alone. */
export async function userWithPassword(api: Api, email: string, roles: string[] = []) {
  const user = (await api('POST', '/users', { email, name: 'Ada Lovelace', roles })).body.data;
  const set = await api('PUT', `/users/${user.id}/password`, { password: PASSWORD });
  if (set.status !== 204) throw new Error(`set password: ${set.status} ${JSON.stringify(set.body)}`);
  return user as { id: string; email: string; name: string };
}

/**
 * An authorization request (code flow, PKCE S256) with a fresh verifier: `params` gives client_id,
 * redirect_uri, scope, state and any extra parameter.
 */
export function authorizationRequest(issuer: string, params: Record<string, string>): { url: URL; verifier: string } {
  const verifier = randomBytes(32).toString('base64url');
  const url = new URL(`${issuer}/oauth/authorize`);
  url.search = new URLSearchParams({
    response_type: 'code',
    ...params,
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  return { url, verifier };
}

export async function registerClient(api: Api, body: Record<string, unknown>) {
  const res = await api('POST', '/oauth/clients', body);
  if (res.status !== 201) throw new Error(`client: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { clientId: string; clientSecret?: string; redirectUris: string[]; scopes: string[] };
}

/** A tiny cookie jar for one origin. */
export class Jar {
  private readonly cookies = new Map<string, string>();
  take(res: Response): void {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      this.cookies.set(pair!.slice(0, eq), pair!.slice(eq + 1));
    }
  }
  header(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  get(name: string): string | undefined {
    return this.cookies.get(name);
  }
}

/**
 * The hidden inputs of a page's first form (name -> value), with HTML entities decoded: the login form, not
 * the "Sign in with SSO" form below it (whose `action` differs).
 */
export function hiddenInputs(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.split('</form>')[0]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) {
    out[m[1]!] = m[2]!.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  }
  return out;
}

export const get = (url: string, jar?: Jar) => fetch(url, { redirect: 'manual', headers: jar ? { cookie: jar.header() } : {} });

export const postForm = (url: string, fields: Record<string, string>, jar?: Jar, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(jar ? { cookie: jar.header() } : {}), ...headers },
    body: new URLSearchParams(fields).toString(),
  });

/**
 * Goes through the authorization endpoint as a browser without JavaScript would: the login page (form post
 * with its CSRF token), then the consent page when one is shown (allowing), to the redirect back to the
 * client. Returns that redirect's URL.
 */
export async function authorizeInteractively(authorizationUrl: URL, email: string, password = PASSWORD, jar = new Jar()): Promise<URL> {
  let res = await get(authorizationUrl.href, jar);
  jar.take(res);
  for (let step = 0; step < 3; step++) {
    if (res.status === 302 || res.status === 303) return new URL(res.headers.get('location')!);
    const html = await res.text();
    if (res.status !== 200) throw new Error(`authorization page answered ${res.status}: ${html.slice(0, 300)}`);
    const fields = hiddenInputs(html);
    const body = fields.action === 'login' ? { ...fields, email, password } : { ...fields, consent: 'allow' };
    res = await postForm(new URL('/oauth/authorize', authorizationUrl).href, body, jar);
    jar.take(res);
  }
  throw new Error('no redirect after login and consent');
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON bodies of varying shapes, asserted field by field
export type Json = any;
export const json = (res: Response): Promise<Json> => res.json();

/** The code a browser brought back to a confidential client, exchanged at the token endpoint (PKCE). */
export async function exchangeCode(issuer: string, o: { code: string; redirectUri: string; verifier: string; client: { clientId: string; clientSecret?: string } }) {
  return json(
    await postForm(`${issuer}/oauth/token`, {
      grant_type: 'authorization_code',
      code: o.code,
      redirect_uri: o.redirectUri,
      code_verifier: o.verifier,
      client_id: o.client.clientId,
      client_secret: o.client.clientSecret!,
    }),
  );
}
