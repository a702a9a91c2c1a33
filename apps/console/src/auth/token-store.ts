// The tokens of the signed-in user, in memory only: never in localStorage, sessionStorage or a cookie. A
// reload forgets them (signing in again is one redirect while the authorization server's login session lasts).

/** The token endpoint's answer (RFC 6749 5.1, OpenID Connect Core 3.1.3.3). */
export interface TokenResponse {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token?: string;
  id_token?: string;
  scope?: string;
}

export interface TokenSet {
  accessToken: string;
  /** Rotated on every refresh: the previous one is spent (using it again ends the grant). */
  refreshToken?: string;
  idToken?: string;
  /** When the access token expires (ms since the epoch, by this browser's clock). */
  expiresAt: number;
  /** When it was issued (same clock): refreshes are planned from its lifetime. */
  issuedAt: number;
  scope: string;
}

/** A token answer as a TokenSet; a refresh answer without an ID token keeps the previous one. */
export function tokenSetOf(res: TokenResponse, now: number, previous?: TokenSet): TokenSet {
  if (typeof res.access_token !== 'string' || !res.access_token) throw new Error('the token endpoint answered no access_token');
  if (String(res.token_type).toLowerCase() !== 'bearer') throw new Error(`unexpected token_type ${String(res.token_type)}`);
  const lifetime = Number.isFinite(res.expires_in) && res.expires_in > 0 ? res.expires_in : 60;
  return {
    accessToken: res.access_token,
    refreshToken: res.refresh_token ?? previous?.refreshToken,
    idToken: res.id_token ?? previous?.idToken,
    expiresAt: now + lifetime * 1000,
    issuedAt: now,
    scope: res.scope ?? previous?.scope ?? '',
  };
}

export class TokenStore {
  private tokens: TokenSet | undefined;
  private readonly listeners = new Set<() => void>();

  get current(): TokenSet | undefined {
    return this.tokens;
  }

  set(tokens: TokenSet): void {
    this.tokens = tokens;
    this.emit();
  }

  clear(): void {
    if (!this.tokens) return;
    this.tokens = undefined;
    this.emit();
  }

  /**
   * When to refresh: a minute before expiry, or at three quarters of a short lifetime, so a refresh has time to
   * finish before the access token stops working.
   */
  refreshAt(): number | undefined {
    const t = this.tokens;
    if (!t) return undefined;
    const lifetime = t.expiresAt - t.issuedAt;
    return t.expiresAt - Math.min(60_000, lifetime / 4);
  }

  /** The access token is (nearly) expired: refresh before using it. */
  needsRefresh(now: number): boolean {
    const at = this.refreshAt();
    return at !== undefined && now >= at;
  }

  subscribe(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => void this.listeners.delete(listener);
  }

  private emit(): void {
    for (const l of this.listeners) l();
  }
}
