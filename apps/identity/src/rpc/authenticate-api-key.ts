import type { identity } from '@secsvc/proto';
import { AppError, type CallContext } from '@secsvc/shared';
import type { IdentityContext } from '../context';
import { hashesEqual, hashKey, looksLikeKey } from '../domain/api-keys';
import { apiKeysRepository } from '../repositories/api-keys';
import { recordAuthFailure } from '../repositories/outbox';

const prefixOf = (key: string) => /^svc_(sk|pk|test)_/.exec(key)?.[0] ?? '';

export const authenticateApiKey =
  (ctx: IdentityContext) =>
  async (req: identity.AuthenticateApiKeyRequest, call: CallContext): Promise<identity.ApiKeyPrincipal> => {
    const refuse = async (reason: string, message = 'Invalid API key') => {
      await recordAuthFailure(ctx.pool, call, 'api_key', prefixOf(req.key), reason, ctx.logger);
      return new AppError('unauthorized', message);
    };
    if (!looksLikeKey(req.key)) throw await refuse('malformed');
    const hash = hashKey(req.key, ctx.config.SERVER_SECRET);
    const row = await apiKeysRepository.findByHash(ctx.pool, hash);
    if (!row || !(hashesEqual(row.key_hash, hash) || (row.previous_key_hash !== null && hashesEqual(row.previous_key_hash, hash)))) {
      throw await refuse('unknown');
    }
    if (row.revoked_at) throw await refuse('revoked', 'API key has been revoked');
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw await refuse('expired', 'API key has expired');
    // A previous secret (rotation grace period) stops working at previous_expires_at.
    const viaPrevious = !hashesEqual(row.key_hash, hash);
    const ends = [row.expires_at, viaPrevious ? row.previous_expires_at : null].filter((d): d is Date => d !== null);
    const expiresAt = ends.length ? new Date(Math.min(...ends.map((d) => d.getTime()))) : undefined;
    void apiKeysRepository.touch(ctx.pool, row.id).catch((err: unknown) =>
      ctx.logger.warn({ err: { message: (err as Error).message }, keyId: row.id }, 'could not record API key use'),
    );
    return {
      keyId: row.id,
      keyType: row.type,
      name: row.name,
      environment: row.environment,
      plan: row.plan,
      expiresAt: expiresAt?.toISOString(),
      rateLimit: row.rate_limit ?? undefined,
    };
  };
