// Signing in to the console through the product's own authorization server: the authorization code flow with
// PKCE (S256), state and nonce, against /oauth/authorize and /oauth/token of this origin, with the console's
// first-party public client of the chosen environment. Tokens stay in memory (TokenStore); the access token is
// refreshed before it expires with the rotating refresh token (offline_access); signing out revokes the refresh
// token (which ends the whole grant, access tokens included) and forgets everything. Every URL is relative: the
// authorization server is this origin, and the console asks nothing of any other.
//
// Only the sign-in in flight (state, nonce, PKCE verifier, environment, where to go back to) is kept across the
// redirect, in sessionStorage (this tab only), and removed as soon as the callback reads it: it holds no token.

import { checkIdToken, type IdClaims } from './id-token';
import { newPkce, randomToken } from './pkce';
import { TokenStore, tokenSetOf, type TokenResponse } from './token-store';

export type Environment = 'live' | 'test';
export const ENVIRONMENTS: readonly Environment[] = ['live', 'test'];

/** What the gateway tells the console before sign-in (GET /console/config.json). */
export interface ConsoleConfig {
  issuer: string;
  redirectUri: string;
  scope: string;
  environments: Partial<Record<Environment, { clientId: string }>>;
}

export interface SignedInUser {
  sub: string;
  email: string;
  name?: string;
}

/** The sign-in in flight, kept across the redirect. */
interface PendingSignIn {
  kind?: 'sign-in';
  state: string;
  nonce: string;
  verifier: string;
  environment: Environment;
  clientId: string;
  returnTo: string;
  createdAt: number;
}

/**
 * A sign-out in flight through the authorization server's end-session endpoint, kept across the redirect: it
 * comes back to the redirect URI with this state and no code.
 */
interface PendingSignOut {
  kind: 'sign-out';
  state: string;
  reason: string;
  createdAt: number;
}

export const PENDING_KEY = 'secsvc.console.signin';
/** Token endpoint errors after which a refresh can never succeed (others, like 429 or a 503, may pass). */
const TERMINAL_ERRORS = new Set(['invalid_grant', 'invalid_client', 'unauthorized_client', 'invalid_request', 'invalid_scope', 'unsupported_grant_type']);
const PENDING_TTL_MS = 10 * 60_000;

/** An OAuth error answer (RFC 6749 4.1.2.1, 5.2), or a sign-in that cannot be completed. */
export class SignInError extends Error {
  constructor(
    readonly error: string,
    description: string,
  ) {
    super(description);
    this.name = 'SignInError';
  }
}

/** The session ended on its own (refresh refused, grant revoked): sign in again. */
export class SessionEndedError extends Error {
  constructor(message = 'Your session has ended. Sign in again.') {
    super(message);
    this.name = 'SessionEndedError';
  }
}

export interface SessionDeps {
  config: ConsoleConfig;
  fetch: (input: string, init?: RequestInit) => Promise<Response>;
  storage: Pick<Storage, 'getItem' | 'setItem' | 'removeItem'>;
  /** Leaves the page for the authorization endpoint. */
  navigate: (url: string) => void;
  now?: () => number;
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (handle: unknown) => void;
}

export type SessionState =
  | { status: 'signed-out'; reason?: string }
  | { status: 'signed-in'; environment: Environment; user: SignedInUser };

export class OAuthSession {
  readonly tokens = new TokenStore();
  private state: SessionState = { status: 'signed-out' };
  private clientId = '';
  private refreshing: Promise<void> | undefined;
  private timer: unknown;
  /** After a sign-out the next sign-in shows the login page again (the authorization server's session lasts). */
  private forceLogin = false;
  private readonly listeners = new Set<() => void>();
  private readonly now: () => number;

  constructor(private readonly deps: SessionDeps) {
    this.now = deps.now ?? Date.now;
  }

  get current(): SessionState {
    return this.state;
  }

  /** The environments the gateway has a console client for. */
  get environments(): Environment[] {
    return ENVIRONMENTS.filter((e) => this.deps.config.environments[e]?.clientId);
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private setState(state: SessionState): void {
    this.state = state;
    for (const l of this.listeners) l();
  }

  /** Starts a sign-in: remembers the request in this tab and goes to the authorization endpoint. */
  async beginSignIn(environment: Environment, returnTo: string): Promise<void> {
    const clientId = this.deps.config.environments[environment]?.clientId;
    if (!clientId) throw new SignInError('unavailable', `The console has no OAuth client in the ${environment} environment.`);
    const pkce = await newPkce();
    const pending: PendingSignIn = { state: randomToken(), nonce: randomToken(), verifier: pkce.verifier, environment, clientId, returnTo, createdAt: this.now() };
    this.deps.storage.setItem(PENDING_KEY, JSON.stringify(pending));
    const params = new URLSearchParams({
      response_type: 'code',
      client_id: clientId,
      redirect_uri: this.deps.config.redirectUri,
      scope: this.deps.config.scope,
      state: pending.state,
      nonce: pending.nonce,
      code_challenge: pkce.challenge,
      code_challenge_method: pkce.method,
    });
    if (this.forceLogin) params.set('prompt', 'login');
    this.deps.navigate(`/oauth/authorize?${params.toString()}`);
  }

  /** Completes the sign-in the callback URL answers (?code&state&iss, or ?error); returns where to go back to. */
  async completeSignIn(query: URLSearchParams): Promise<{ returnTo: string }> {
    const raw = this.deps.storage.getItem(PENDING_KEY);
    this.deps.storage.removeItem(PENDING_KEY);
    const pending = raw ? (JSON.parse(raw) as PendingSignIn | PendingSignOut) : undefined;
    if (!pending || this.now() - pending.createdAt > PENDING_TTL_MS) throw new SignInError('invalid_request', 'This sign-in was not started here or has expired. Start again.');
    if (query.get('state') !== pending.state) throw new SignInError('invalid_request', 'The answer does not belong to this sign-in (state differs). Start again.');
    if (pending.kind === 'sign-out') {
      // Back from the end-session endpoint: the authorization server's login session is over too.
      this.end(pending.reason);
      return { returnTo: '/' };
    }
    const iss = query.get('iss');
    if (iss !== null && iss !== this.deps.config.issuer) throw new SignInError('invalid_request', `The answer comes from another issuer (${iss}).`);
    const error = query.get('error');
    if (error) throw new SignInError(error, query.get('error_description') ?? error);
    const code = query.get('code');
    if (!code) throw new SignInError('invalid_request', 'The answer carries no authorization code.');
    const res = await this.tokenRequest({ grant_type: 'authorization_code', code, redirect_uri: this.deps.config.redirectUri, code_verifier: pending.verifier, client_id: pending.clientId });
    const tokens = tokenSetOf(res, this.now());
    if (!tokens.idToken) throw new SignInError('invalid_grant', 'The token endpoint answered no ID token.');
    const claims: IdClaims = checkIdToken(tokens.idToken, { issuer: this.deps.config.issuer, clientId: pending.clientId, nonce: pending.nonce, now: this.now() });
    this.clientId = pending.clientId;
    this.forceLogin = false;
    this.tokens.set(tokens);
    this.schedule();
    this.setState({ status: 'signed-in', environment: pending.environment, user: { sub: claims.sub, email: claims.email ?? claims.sub, name: claims.name } });
    return { returnTo: pending.returnTo };
  }

  /** The access token for an API call, refreshed first when it is about to expire. */
  async accessToken(): Promise<string> {
    if (this.tokens.needsRefresh(this.now())) await this.refresh();
    const t = this.tokens.current;
    if (!t) throw new SessionEndedError();
    return t.accessToken;
  }

  /**
   * Trades the refresh token for new tokens. One at a time: refresh tokens rotate, and presenting a spent one
   * ends the grant, so concurrent callers share the refresh in flight. A refused refresh ends the session.
   */
  refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async doRefresh(): Promise<void> {
    const current = this.tokens.current;
    if (!current?.refreshToken) {
      this.end('Your session has ended. Sign in again.');
      throw new SessionEndedError();
    }
    let res: TokenResponse;
    try {
      res = await this.tokenRequest({ grant_type: 'refresh_token', refresh_token: current.refreshToken, client_id: this.clientId });
    } catch (err) {
      // A refusal (invalid_grant: revoked, expired, reused) ends the session; a network failure leaves it for a retry.
      if (err instanceof SignInError && TERMINAL_ERRORS.has(err.error)) {
        this.end('Your session has ended. Sign in again.');
        throw new SessionEndedError();
      }
      throw err;
    }
    this.tokens.set(tokenSetOf(res, this.now(), current));
    this.schedule();
  }

  /**
   * Revokes the refresh token (RFC 7009: its whole grant ends, access tokens included), then forgets every token.
   * A revocation that fails (network) still forgets them, and says so. With `endLoginSession`, the browser then
   * goes through the end-session endpoint (OpenID Connect RP-Initiated Logout, with the ID token as the hint),
   * which ends the authorization server's login session and comes back to the callback.
   */
  async signOut(options: { endLoginSession?: boolean } = {}): Promise<void> {
    const idToken = this.tokens.current?.idToken;
    await this.refreshing?.catch(() => undefined);
    const t = this.tokens.current;
    const token = t?.refreshToken ?? t?.accessToken;
    let told = true;
    if (t && token) {
      const body = new URLSearchParams({ token, token_type_hint: t.refreshToken ? 'refresh_token' : 'access_token', client_id: this.clientId });
      told = await this.deps
        .fetch('/oauth/revoke', { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, credentials: 'omit' })
        .then((res) => res.ok, () => false);
    }
    this.forceLogin = true;
    const reason = told ? 'You are signed out.' : 'You are signed out here, but the server could not be told: your session ends when its refresh token expires.';
    this.end(reason);
    if (!options.endLoginSession || !idToken) return;
    const pending: PendingSignOut = { kind: 'sign-out', state: randomToken(), reason, createdAt: this.now() };
    this.deps.storage.setItem(PENDING_KEY, JSON.stringify(pending));
    const params = new URLSearchParams({ id_token_hint: idToken, post_logout_redirect_uri: this.deps.config.redirectUri, state: pending.state });
    this.deps.navigate(`/oauth/logout?${params.toString()}`);
  }

  /** Switches environment: signs out of this one and starts a sign-in with the other's console client. */
  async switchEnvironment(environment: Environment, returnTo: string): Promise<void> {
    if (this.state.status === 'signed-in') {
      await this.signOut().catch(() => undefined);
      this.forceLogin = false;
    }
    await this.beginSignIn(environment, returnTo);
  }

  private end(reason: string): void {
    if (this.timer !== undefined) (this.deps.clearTimer ?? clearTimeout)(this.timer as ReturnType<typeof setTimeout>);
    this.timer = undefined;
    this.tokens.clear();
    this.setState({ status: 'signed-out', reason });
  }

  /** The next refresh, planned from the access token's lifetime. */
  private schedule(): void {
    const at = this.tokens.refreshAt();
    if (this.timer !== undefined) (this.deps.clearTimer ?? clearTimeout)(this.timer as ReturnType<typeof setTimeout>);
    this.timer = undefined;
    if (at === undefined || !this.tokens.current?.refreshToken) return;
    const set = this.deps.setTimer ?? ((fn: () => void, ms: number) => setTimeout(fn, ms));
    this.timer = set(() => {
      this.timer = undefined;
      this.refresh().catch(() => undefined);
    }, Math.max(1000, at - this.now()));
  }

  /** A token endpoint request (form body, public client); an OAuth error answer becomes a SignInError. */
  private async tokenRequest(fields: Record<string, string>): Promise<TokenResponse> {
    let res: Response;
    try {
      res = await this.deps.fetch('/oauth/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
        body: new URLSearchParams(fields),
        credentials: 'omit',
      });
    } catch (err) {
      throw new SignInError('network_error', `The token endpoint could not be reached (${(err as Error).message}).`);
    }
    const body = (await res.json().catch(() => ({}))) as TokenResponse & { error?: string; error_description?: string };
    if (!res.ok || body.error) throw new SignInError(body.error ?? `http_${res.status}`, body.error_description ?? `The token endpoint answered ${res.status}.`);
    return body;
  }
}
