import { AppError, eventOfCall, newId, type CallContext, type PoolClient } from '@secsvc/shared';
import {
  checkGracePeriod,
  environmentOf as keyEnvironment,
  hashesEqual,
  hashKey,
  looksLikeKey,
  mintKey,
  presentedPrefix,
  validateNewKey,
  type NewKeyInput,
} from '../domain/api-keys';
import type { apiKeysRepository, ApiKeyRow } from '../repositories/api-keys';
import type { AuthEventsService } from './auth-events';
import { listPage, type Database, type Outbox, type Page, type PageInput, type WarningLog } from './ports';

export type ApiKeysRepository = Pick<typeof apiKeysRepository, 'insert' | 'findByHash' | 'get' | 'list' | 'revoke' | 'rotate' | 'touch'>;

export interface ApiKeysDeps {
  db: Database;
  apiKeys: ApiKeysRepository;
  outbox: Outbox;
  /** Keys are stored and looked up as HMACs under it; it signs list cursors too. */
  serverSecret: string;
  authEvents: Pick<AuthEventsService, 'authFailed'>;
  logger: WarningLog;
}

/** A key and its secret, shown once. */
export interface MintedKey {
  row: ApiKeyRow;
  key: string;
}

/** Who an authenticated key is: its row, and when what was presented stops working (undefined: never). */
export interface KeyPrincipal {
  row: ApiKeyRow;
  expiresAt: Date | undefined;
}

/**
 * The API keys: created, listed, revoked and rotated by the application's keys, and the gateway's
 * authentication of a presented key. Test callers see only test keys; live callers manage every key.
 */
export class ApiKeysService {
  constructor(private readonly deps: ApiKeysDeps) {}

  /**
   * An event about a key, in the caller's environment (actors never cross environments; a test key made with
   * a live key is recorded in live). Never the secret: its prefix and last 4 characters at most.
   */
  private event(tx: PoolClient, call: CallContext, type: string, row: ApiKeyRow, environment: string, metadata: Record<string, unknown> = {}) {
    return this.deps.outbox.append(
      tx,
      eventOfCall(call, {
        environment,
        type,
        target: { id: row.id, type: 'api_key' },
        result: 'success',
        metadata: { keyType: row.type, keyEnvironment: row.environment, plan: row.plan, prefix: row.prefix, last4: row.last4, ...metadata },
      }),
    );
  }

  async create(callerEnvironment: string, input: NewKeyInput, call: CallContext): Promise<MintedKey> {
    const valid = validateNewKey(input, callerEnvironment);
    const minted = mintKey(valid.type, this.deps.serverSecret);
    const row = await this.deps.db.transaction(async (tx) => {
      const inserted = await this.deps.apiKeys.insert(tx, { id: newId('key'), environment: keyEnvironment(valid.type), ...valid, ...minted });
      await this.event(tx, call, 'api_key.created', inserted, callerEnvironment);
      return inserted;
    });
    return { row, key: minted.key };
  }

  list(environment: string, page: PageInput): Promise<Page<ApiKeyRow>> {
    const { db, apiKeys, serverSecret } = this.deps;
    return listPage(serverSecret, 'api_keys', environment, page, (limit, after) => apiKeys.list(db.pool, environment, limit, after));
  }

  async get(environment: string, id: string): Promise<ApiKeyRow> {
    const row = await this.deps.apiKeys.get(this.deps.db.pool, environment, id);
    if (!row) throw AppError.notFound('API key');
    return row;
  }

  /** Revokes the key (idempotent: api_key.revoked only when it was live); its previous secret ends too. */
  async revoke(environment: string, id: string, call: CallContext): Promise<void> {
    const { db, apiKeys } = this.deps;
    await db.transaction(async (tx) => {
      const before = await apiKeys.get(tx, environment, id);
      if (!before) throw AppError.notFound('API key');
      // Deleted by a concurrent call since it was read: gone.
      const row = await apiKeys.revoke(tx, environment, id);
      if (!row) throw AppError.notFound('API key');
      if (!before.revoked_at) await this.event(tx, call, 'api_key.revoked', row, environment);
    });
  }

  /** A new secret for the key; the current one keeps working for `graceSeconds` (none when 0). Not for revoked keys. */
  async rotate(environment: string, id: string, graceSeconds: number, call: CallContext): Promise<MintedKey> {
    const grace = checkGracePeriod(graceSeconds);
    const { db, apiKeys, serverSecret } = this.deps;
    return db.transaction(async (tx) => {
      const current = await apiKeys.get(tx, environment, id);
      if (!current) throw AppError.notFound('API key');
      if (current.revoked_at) throw new AppError('conflict', 'A revoked key cannot be rotated');
      const minted = mintKey(current.type, serverSecret);
      const row = await apiKeys.rotate(tx, current.id, minted.hash, minted.last4, grace > 0 ? new Date(Date.now() + grace * 1000) : null);
      await this.event(tx, call, 'api_key.rotated', row, environment, { gracePeriodSeconds: grace });
      return { row, key: minted.key };
    });
  }

  /**
   * The gateway's authentication of a presented key: malformed, unknown, revoked and expired keys are refused
   * (401, with auth.failed naming only the prefix). A previous secret (rotation grace period) works until
   * previous_expires_at. A use is recorded (at most once a minute) without delaying the answer.
   */
  async authenticate(key: string, call: CallContext): Promise<KeyPrincipal> {
    const { db, apiKeys, serverSecret, logger } = this.deps;
    const refuse = async (reason: string, message = 'Invalid API key') => {
      await this.deps.authEvents.authFailed(call, 'api_key', presentedPrefix(key), reason);
      return new AppError('unauthorized', message);
    };
    if (!looksLikeKey(key)) throw await refuse('malformed');
    const hash = hashKey(key, serverSecret);
    const row = await apiKeys.findByHash(db.pool, hash);
    if (!row || !(hashesEqual(row.key_hash, hash) || (row.previous_key_hash !== null && hashesEqual(row.previous_key_hash, hash)))) {
      throw await refuse('unknown');
    }
    if (row.revoked_at) throw await refuse('revoked', 'API key has been revoked');
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw await refuse('expired', 'API key has expired');
    const viaPrevious = !hashesEqual(row.key_hash, hash);
    const ends = [row.expires_at, viaPrevious ? row.previous_expires_at : null].filter((d): d is Date => d !== null);
    const expiresAt = ends.length ? new Date(Math.min(...ends.map((d) => d.getTime()))) : undefined;
    void apiKeys.touch(db.pool, row.id).catch((err: unknown) => logger.warn({ err: { message: (err as Error).message }, keyId: row.id }, 'could not record API key use'));
    return { row, expiresAt };
  }
}
