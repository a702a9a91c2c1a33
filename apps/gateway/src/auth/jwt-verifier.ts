import { createLocalJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { AppError, type Logger, type Metrics } from '@secsvc/shared';
import { cacheStats, tokenDigest, type CacheStats } from './feed-cache';

// JwtVerifier: checks access tokens (ES256 JWTs) locally against identity's published key set; revocation
// is AuthCache's part (recently revoked sessions and grants).

/** A short reason code for auth.failed events (never the token). */
export function reasonCode(why: string): string {
  const code = why.toLowerCase().replace(/[^a-z]+/g, '_').replace(/^_|_$/g, '').slice(0, 40);
  return code || 'other';
}

/**
 * Verifies access tokens locally against identity's published keys (no call per request): ES256 only,
 * iss and aud checked, exp/nbf with 60 s leeway. The key set is refreshed every 5 minutes, and at most every
 * 10 seconds when a token names an unknown kid (a rotation).
 */
export class JwtVerifier {
  private keys: JWTVerifyGetKey | undefined;
  private loadedAt = 0;
  private loading: Promise<void> | undefined;
  /** Tokens whose signature was already checked (by digest), until their exp: repeat requests skip ES256. */
  private readonly verified = new Map<string, { claims: JWTPayload & { sid: string; env: string; sub: string }; exp: number }>();
  /** Lookups of `verified` (cache jwt). */
  private readonly stats: CacheStats;

  constructor(
    private readonly fetchJwks: () => Promise<string>,
    private readonly issuer: string,
    private readonly audience: string,
    private readonly logger: Logger,
    metrics?: Metrics,
  ) {
    this.stats = cacheStats(metrics, 'jwt');
  }

  private refresh(minAgeMs: number): Promise<void> {
    if (this.keys && Date.now() - this.loadedAt < minAgeMs) return Promise.resolve();
    this.loading ??= this.fetchJwks()
      .then((json) => {
        this.keys = createLocalJWKSet(JSON.parse(json) as { keys: [] });
        this.loadedAt = Date.now();
      })
      .finally(() => (this.loading = undefined));
    return this.loading;
  }

  async verify(token: string): Promise<JWTPayload & { sid: string; env: string; sub: string }> {
    const key = tokenDigest(token);
    const hit = this.verified.get(key);
    // exp is re-checked on every use (60 s leeway, as jwtVerify applies it)
    if (hit && hit.exp + 60 > Date.now() / 1000) {
      this.stats.hit();
      return hit.claims;
    }
    this.stats.miss();
    if (hit) this.verified.delete(key);
    const claims = await this.verifyFully(token);
    if (this.verified.size >= 10_000) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(key, { claims, exp: claims.exp ?? 0 });
    return claims;
  }

  private async verifyFully(token: string): Promise<JWTPayload & { sid: string; env: string; sub: string }> {
    const refused = (why: string) => Object.assign(new AppError('unauthorized', `Invalid access token: ${why}`), { reason: reasonCode(why) });
    await this.refresh(5 * 60_000);
    const attempt = () =>
      jwtVerify(token, this.keys!, { issuer: this.issuer, audience: this.audience, algorithms: ['ES256'], clockTolerance: 60, typ: 'at+jwt' });
    let result;
    try {
      result = await attempt();
    } catch (err) {
      if (err instanceof errors.JWKSNoMatchingKey) {
        await this.refresh(10_000).catch((e: unknown) => this.logger.warn({ err: { message: (e as Error).message } }, 'JWKS refresh failed'));
        try {
          result = await attempt();
        } catch (again) {
          throw refused((again as Error).message);
        }
      } else if (err instanceof errors.JWTExpired) {
        throw refused('expired');
      } else {
        throw refused(err instanceof errors.JOSEError ? err.code : 'malformed');
      }
    }
    const { payload } = result;
    if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || (payload.env !== 'live' && payload.env !== 'test')) {
      throw refused('missing claims');
    }
    return payload as JWTPayload & { sid: string; env: string; sub: string };
  }
}
