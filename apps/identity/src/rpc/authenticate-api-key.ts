import type { identity } from '@secsvc/proto';
import { AppError } from '@secsvc/shared';
import type { IdentityContext } from '../context';
import { hashesEqual, hashKey, looksLikeKey } from '../domain/api-keys';
import { apiKeysRepository } from '../repositories/api-keys';

const refused = () => new AppError('unauthorized', 'Invalid API key');

export const authenticateApiKey =
  (ctx: IdentityContext) =>
  async (req: identity.AuthenticateApiKeyRequest): Promise<identity.ApiKeyPrincipal> => {
    if (!looksLikeKey(req.key)) throw refused();
    const hash = hashKey(req.key, ctx.config.SERVER_SECRET);
    const row = await apiKeysRepository.findByHash(ctx.pool, hash);
    if (!row || !(hashesEqual(row.key_hash, hash) || (row.previous_key_hash !== null && hashesEqual(row.previous_key_hash, hash)))) {
      throw refused();
    }
    if (row.revoked_at) throw new AppError('unauthorized', 'API key has been revoked');
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw new AppError('unauthorized', 'API key has expired');
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
      environment: row.environment,
      plan: row.plan,
      expiresAt: expiresAt?.toISOString(),
    };
  };
