import { KeyObject, randomBytes, randomUUID, sign } from 'node:crypto';
import { exportJWK, generateKeyPair, importJWK, type JWK, type JWTPayload } from 'jose';
import { withStatementTimeout, type Metrics, type Pool } from '@secsvc/shared';
import { deriveKey, open, seal } from './sealing';

export const ALG = 'ES256';
/** PostgreSQL's statement timeout for (re)loading the keys: far above a normal load's few milliseconds. */
const KEY_LOAD_STATEMENT_TIMEOUT_MS = 5_000;

/** The AES-256 key that encrypts private JWKs: JWT_MASTER_KEY, else derived from SERVER_SECRET (HKDF). */
export function masterKey(configured: string | undefined, serverSecret: string): Buffer {
  return deriveKey(configured ?? serverSecret, 'jwt-signing-key-encryption');
}

export interface SigningKeys {
  /** The newest key: signs new tokens; createdAt in ms. */
  current: { kid: string; key: Awaited<ReturnType<typeof importJWK>>; createdAt: number };
  /** Public keys of every key still published (current + the overlap of the previous ones). */
  jwks: { keys: JWK[] };
}

/**
 * Keeps the signing keys: a new key when the newest is older than `rotationDays` (created under an advisory
 * lock, so replicas agree), old keys published for `overlapDays` more so tokens they signed still verify.
 */
export class SigningKeyStore {
  private cached: { at: number; keys: SigningKeys } | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly key: Buffer,
    private readonly rotationDays = 30,
    private readonly overlapDays = 1,
  ) {}

  async get(): Promise<SigningKeys> {
    if (this.cached && Date.now() - this.cached.at < 60_000) return this.cached.keys;
    // One reload at a time: concurrent callers share it (a burst of token requests would otherwise queue
    // on the advisory lock, one transaction each, every minute).
    this.loading ??= this.load()
      .then((keys) => {
        this.cached = { at: Date.now(), keys };
        return keys;
      })
      .finally(() => (this.loading = undefined));
    return this.loading;
  }

  private loading: Promise<SigningKeys> | undefined;

  private async load(): Promise<SigningKeys> {
    // Bounded (the advisory lock included): a stuck database fails the load, 503 for a request and a counted
    // refresh error for the scrape of oauth_signing_key_age_seconds, instead of holding a connection.
    await withStatementTimeout(this.pool, KEY_LOAD_STATEMENT_TIMEOUT_MS, async (client) => {
      await client.query(`SELECT pg_advisory_xact_lock(hashtext('secsvc:signing-keys'))`);
      const { rowCount } = await client.query(`SELECT 1 FROM signing_keys WHERE created_at > now() - make_interval(days => $1)`, [this.rotationDays]);
      if (rowCount) return;
      const { publicKey, privateKey } = await generateKeyPair(ALG, { extractable: true });
      const kid = `sk_${Date.now().toString(36)}_${randomBytes(6).toString('hex')}`;
      const pub = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
      const priv = JSON.stringify({ ...(await exportJWK(privateKey)), kid, alg: ALG });
      await client.query(`INSERT INTO signing_keys (kid, alg, public_jwk, private_jwk_enc) VALUES ($1, $2, $3, $4)`, [kid, ALG, pub, seal(this.key, kid, priv)]);
    });
    const { rows } = await this.pool.query<{ kid: string; public_jwk: JWK; private_jwk_enc: Buffer; created_at: Date }>(
      `SELECT kid, public_jwk, private_jwk_enc, created_at FROM signing_keys
       WHERE created_at > now() - make_interval(days => $1) ORDER BY created_at DESC`,
      [this.rotationDays + this.overlapDays],
    );
    const newest = rows[0]!;
    const privateJwk = JSON.parse(open(this.key, newest.kid, newest.private_jwk_enc)) as JWK;
    return {
      current: { kid: newest.kid, key: await importJWK(privateJwk, ALG), createdAt: newest.created_at.getTime() },
      jwks: { keys: rows.map((r) => r.public_jwk) },
    };
  }
}

/**
 * oauth_signing_key_age_seconds: the age of the newest signing key, read when /metrics is scraped through
 * `keys.get()`, which also rotates a key that is due (so a quiet system shows rotation working, and an age past
 * the rotation period means rotating fails). When the keys cannot be read, the age of the newest key known keeps growing.
 */
export function observeSigningKeyAge(metrics: Metrics, keys: Pick<SigningKeyStore, 'get'>): void {
  let newest: number | undefined;
  metrics.scrapedGauges('signing_key', { age: { name: 'oauth_signing_key_age_seconds', help: 'Age of the newest JWT signing key (rotated every 30 days)' } }, async (g) => {
    try {
      newest = (await keys.get()).current.createdAt;
    } finally {
      if (newest !== undefined) g.age.set(Math.max(0, (Date.now() - newest) / 1000));
    }
  });
}

/**
 * Signs a JWT with the current key: the given claims plus iss, sub, aud, iat, exp and a fresh jti. `typ` is
 * at+jwt for access tokens (RFC 9068) and JWT for ID tokens.
 */
export async function signJwt(
  keys: Pick<SigningKeyStore, 'get'>,
  typ: 'at+jwt' | 'JWT',
  claims: JWTPayload,
  std: { issuer: string; subject: string; audience: string; issuedAt: number; expiresAt: number },
): Promise<string> {
  const { current } = await keys.get();
  const header = { alg: ALG, kid: current.kid, typ };
  const payload = { ...claims, iss: std.issuer, sub: std.subject, aud: std.audience, iat: std.issuedAt, exp: std.expiresAt, jti: randomUUID() };
  const input = `${base64urlJson(header)}.${base64urlJson(payload)}`;
  // node:crypto signs in place (ECDSA P-256, r || s as JWS wants): a third of WebCrypto's CPU per token.
  const signature = sign('sha256', Buffer.from(input), { key: keyObjectOf(current.key), dsaEncoding: 'ieee-p1363' });
  return `${input}.${signature.toString('base64url')}`;
}

const base64urlJson = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

const keyObjects = new WeakMap<object, KeyObject>();
/** The node:crypto form of an imported signing key (once per key). */
function keyObjectOf(key: SigningKeys['current']['key']): KeyObject {
  if (key instanceof Uint8Array) throw new Error('a signing key must be an EC private key');
  let found = keyObjects.get(key);
  if (!found) keyObjects.set(key, (found = KeyObject.from(key)));
  return found;
}
