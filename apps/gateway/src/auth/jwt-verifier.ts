import { createPublicKey, verify as verifySignature, type KeyObject } from 'node:crypto';
import { compactVerify, createLocalJWKSet, errors, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { AppError, type Logger, type Metrics } from '@secsvc/shared';
import { cacheStats, tokenDigest, type CacheStats } from './feed-cache';

// JwtVerifier: checks access tokens (ES256 JWTs) locally against identity's published key set; revocation
// is AuthCache's part (recently revoked sessions and grants).

/** A short reason code for auth.failed events (never the token). */
export function reasonCode(why: string): string {
  const code = why.toLowerCase().replace(/[^a-z]+/g, '_').replace(/^_|_$/g, '').slice(0, 40);
  return code || 'other';
}

type Claims = JWTPayload & { sid: string; env: string; sub: string };

/** A refusal, with how long it holds (ms since the epoch; Infinity: it cannot change). */
type Refusal = AppError & { reason: string; holdsUntil: number };

/** What was decided about one token, and until when (ms since the epoch) the decision holds. */
type Verdict = { claims: Claims; until: number } | { refused: Refusal; until: number };

const LEEWAY_SECONDS = 60;
/** The refusal of a token whose key the set does not hold (the code key set readers use). */
const NO_KEY = 'no applicable key found in the JSON Web Key Set';
/** How long a token naming an unknown key is refused before the key set may be fetched again for it. */
const UNKNOWN_KEY_MS = 10_000;

/** The exp claim of a compact JWT, read without verifying anything (undefined when unreadable). */
function unverifiedExp(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (!payload) return undefined;
  try {
    const exp = (JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown }).exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp : undefined;
  } catch {
    return undefined;
  }
}

/** The verification keys of a published key set usable for ES256 (EC P-256, for signatures), with their kid. */
function es256Keys(jwks: { keys?: unknown }): { kid: unknown; key: KeyObject }[] {
  const out: { kid: unknown; key: KeyObject }[] = [];
  for (const jwk of Array.isArray(jwks.keys) ? (jwks.keys as Record<string, unknown>[]) : []) {
    if (jwk.kty !== 'EC' || jwk.crv !== 'P-256' || (jwk.alg !== undefined && jwk.alg !== 'ES256')) continue;
    if (jwk.use !== undefined && jwk.use !== 'sig') continue;
    if (Array.isArray(jwk.key_ops) && !jwk.key_ops.includes('verify')) continue;
    try {
      out.push({ kid: jwk.kid, key: createPublicKey({ key: jwk as never, format: 'jwk' }) });
    } catch {
      // not a usable public key: skipped, as a key set reader skips it
    }
  }
  return out;
}

const B64URL = /^[A-Za-z0-9_-]*$/;
const jsonOf = (part: string): unknown => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** A `typ` value as RFC 8725 compares it: case-insensitive, without an `application/` prefix. */
const normalizedTyp = (typ: string) => typ.toLowerCase().replace(/^application\//, '');

/** Why a token is refused, in the codes auth.failed events carry (jose's, where jose names the case). */
class Refused extends Error {
  constructor(
    readonly why: string,
    readonly claim?: string,
    readonly payload?: Record<string, unknown>,
  ) {
    super(why);
  }
}

/**
 * Verifies access tokens locally against identity's published keys (no call per request): ES256 only,
 * iss and aud checked, exp/nbf with 60 s leeway. The key set is refreshed every 5 minutes, and at most every
 * 10 seconds when a token names an unknown kid (a rotation).
 *
 * Each token is judged once: the verdict is kept (by the token's SHA-256, in a bounded LRU) as long as it
 * cannot change: an acceptance until the token's exp, a refusal for an expired token, a bad signature or
 * wrong claims for good, one for an unknown key for 10 s, one for a token not yet valid until its nbf. A
 * token whose exp has passed is refused as expired without its signature being checked: whatever signed it,
 * it grants nothing. Revocation is not part of the verdict (AuthCache's part, checked on every use).
 */
export class JwtVerifier {
  private keys: JWTVerifyGetKey | undefined;
  /** The same key set for access tokens, checked synchronously (node:crypto, half the CPU of WebCrypto). */
  private es256: { kid: unknown; key: KeyObject }[] = [];
  private loadedAt = 0;
  private loading: Promise<void> | undefined;
  /** Verdicts by token digest, least recently used first. */
  private readonly verdicts = new Map<string, Verdict>();
  /** Lookups of `verdicts` (cache jwt). */
  private readonly stats: CacheStats;

  constructor(
    private readonly fetchJwks: () => Promise<string>,
    private readonly issuer: string,
    private readonly audience: string,
    private readonly logger: Logger,
    metrics?: Metrics,
    private readonly maxVerdicts = 10_000,
  ) {
    this.stats = cacheStats(metrics, 'jwt');
  }

  private refresh(minAgeMs: number): Promise<void> {
    if (this.keys && Date.now() - this.loadedAt < minAgeMs) return Promise.resolve();
    this.loading ??= this.fetchJwks()
      .then((json) => {
        const jwks = JSON.parse(json) as { keys: [] };
        this.keys = createLocalJWKSet(jwks);
        this.es256 = es256Keys(jwks);
        this.loadedAt = Date.now();
      })
      .finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** The token's claims, or a refusal (AppError unauthorized with a reason code) thrown. */
  async verify(token: string): Promise<Claims> {
    const key = tokenDigest(token);
    const now = Date.now();
    const hit = this.verdicts.get(key);
    if (hit) this.verdicts.delete(key);
    if (hit && hit.until > now) {
      this.stats.hit();
      this.verdicts.set(key, hit); // most recently used
      if ('refused' in hit) throw hit.refused;
      return hit.claims;
    }
    this.stats.miss();
    let verdict: Verdict;
    try {
      const claims = await this.verifyFully(token);
      // exp is checked again past the leeway, as jwtVerify applies it; a token without exp is not kept.
      verdict = { claims, until: claims.exp === undefined ? 0 : (claims.exp + LEEWAY_SECONDS) * 1000 };
    } catch (err) {
      // Only refusals are verdicts: a failed key set fetch says nothing about the token.
      if (!(err instanceof AppError) || typeof (err as Refusal).holdsUntil !== 'number') throw err;
      verdict = { refused: err as Refusal, until: (err as Refusal).holdsUntil };
    }
    if (verdict.until > Date.now()) {
      if (this.verdicts.size >= this.maxVerdicts) this.verdicts.delete(this.verdicts.keys().next().value!);
      this.verdicts.set(key, verdict);
    }
    if ('refused' in verdict) throw verdict.refused;
    return verdict.claims;
  }

  private async verifyFully(token: string): Promise<Claims> {
    const refused = (why: string, holdsUntil = Infinity): Refusal =>
      Object.assign(new AppError('unauthorized', `Invalid access token: ${why}`), { reason: reasonCode(why), holdsUntil });
    const exp = unverifiedExp(token);
    if (exp !== undefined && (exp + LEEWAY_SECONDS) * 1000 <= Date.now()) throw refused('expired');
    await this.refresh(5 * 60_000);
    let payload: Record<string, unknown>;
    try {
      try {
        payload = this.checked(token);
      } catch (err) {
        if (!(err instanceof Refused) || err.why !== NO_KEY) throw err;
        // A key rotated in since the key set was fetched: fetched again (at most every 10 s).
        await this.refresh(10_000).catch((e: unknown) => this.logger.warn({ err: { message: (e as Error).message } }, 'JWKS refresh failed'));
        payload = this.checked(token);
      }
    } catch (err) {
      if (!(err instanceof Refused)) throw err;
      if (err.why === NO_KEY) throw refused(err.why, Date.now() + UNKNOWN_KEY_MS);
      if (err.why === 'expired') throw refused('expired');
      // Not yet valid: it may become so (nbf is past the leeway then).
      if (err.claim === 'nbf') throw refused(err.why, ((err.payload!.nbf as number) - LEEWAY_SECONDS) * 1000);
      throw refused(err.why);
    }
    if (typeof payload.sub !== 'string' || typeof payload.sid !== 'string' || (payload.env !== 'live' && payload.env !== 'test')) {
      throw refused('missing claims');
    }
    return payload as Claims;
  }

  /**
   * The claims of an access token whose signature (ES256, by a key of the set) and claims (typ at+jwt, iss,
   * aud, exp and nbf with the leeway, iat a number) hold, in the order and with the codes of RFC 7515/7519
   * verifiers such as jose's; throws Refused.
   */
  private checked(token: string): Record<string, unknown> {
    const parts = token.split('.');
    if (parts.length !== 3 || !parts.every((p) => B64URL.test(p))) throw new Refused('ERR_JWS_INVALID');
    const [h, p, sig] = parts as [string, string, string];
    let header: unknown;
    try {
      header = jsonOf(h);
    } catch {
      throw new Refused('ERR_JWS_INVALID');
    }
    if (!isObject(header)) throw new Refused('ERR_JWS_INVALID');
    // No extension is understood here (RFC 7515 4.1.11): a token that names one critical is refused.
    if (header.crit !== undefined) {
      const named = Array.isArray(header.crit) && header.crit.length > 0 && header.crit.every((c) => typeof c === 'string' && c !== '');
      throw new Refused(named ? 'ERR_JOSE_NOT_SUPPORTED' : 'ERR_JWS_INVALID');
    }
    if (typeof header.alg !== 'string') throw new Refused('ERR_JWS_INVALID');
    if (header.alg !== 'ES256') throw new Refused('ERR_JOSE_ALG_NOT_ALLOWED');
    const candidates = this.es256.filter((k) => header.kid === undefined || k.kid === header.kid);
    if (!candidates.length) throw new Refused(NO_KEY);
    const data = Buffer.from(`${h}.${p}`);
    const signature = Buffer.from(sig, 'base64url');
    const valid = signature.length === 64 && candidates.some((k) => verifySignature('sha256', data, { key: k.key, dsaEncoding: 'ieee-p1363' }, signature));
    if (!valid) throw new Refused('ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
    let payload: unknown;
    try {
      payload = jsonOf(p);
    } catch {
      throw new Refused('ERR_JWT_INVALID');
    }
    if (!isObject(payload)) throw new Refused('ERR_JWT_INVALID');
    const failed = (claim: string) => new Refused('ERR_JWT_CLAIM_VALIDATION_FAILED', claim, payload as Record<string, unknown>);
    if (typeof header.typ !== 'string' || normalizedTyp(header.typ) !== 'at+jwt') throw failed('typ');
    if (payload.iss !== this.issuer) throw failed('iss');
    const aud = typeof payload.aud === 'string' ? [payload.aud] : payload.aud;
    if (!Array.isArray(aud) || !aud.includes(this.audience)) throw failed('aud');
    const now = Math.floor(Date.now() / 1000);
    for (const claim of ['iat', 'nbf', 'exp']) if (payload[claim] !== undefined && typeof payload[claim] !== 'number') throw failed(claim);
    if (typeof payload.nbf === 'number' && payload.nbf > now + LEEWAY_SECONDS) throw failed('nbf');
    if (typeof payload.exp === 'number' && payload.exp <= now - LEEWAY_SECONDS) throw new Refused('expired');
    return payload;
  }

  /**
   * An ID token this issuer signed, given back as a logout's id_token_hint (OpenID Connect RP-Initiated Logout
   * 1.0): its subject and audience (the client), or undefined when it is not one. Its signature and issuer are
   * checked; an expired one is still a hint (a logout comes after the token has served), so exp is not.
   */
  async idTokenHint(token: string): Promise<{ sub: string; clientId: string } | undefined> {
    try {
      await this.refresh(5 * 60_000);
      const verify = () => compactVerify(token, this.keys!, { algorithms: ['ES256'] });
      // A key rotated in since the key set was fetched: fetched again (at most every 10 s), as for access tokens.
      const { payload, protectedHeader } = await verify().catch(async (err: unknown) => {
        if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
        await this.refresh(10_000);
        return verify();
      });
      if (protectedHeader.typ !== 'JWT') return undefined; // not an access token (at+jwt)
      const claims = JSON.parse(new TextDecoder().decode(payload)) as JWTPayload;
      const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
      if (claims.iss !== this.issuer || typeof claims.sub !== 'string' || aud.length !== 1 || typeof aud[0] !== 'string') return undefined;
      return { sub: claims.sub, clientId: aud[0] };
    } catch (err) {
      // Not a token this issuer signed; but a key set that cannot be fetched says nothing about the token.
      if (err instanceof errors.JOSEError || err instanceof SyntaxError) return undefined;
      throw new AppError('unavailable', 'The signing keys cannot be read right now; retry shortly');
    }
  }
}
