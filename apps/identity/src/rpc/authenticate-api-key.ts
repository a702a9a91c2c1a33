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
    if (!row || !hashesEqual(row.key_hash, hash)) throw refused();
    if (row.revoked_at) throw new AppError('unauthorized', 'API key has been revoked');
    if (row.expires_at && row.expires_at.getTime() <= Date.now()) throw new AppError('unauthorized', 'API key has expired');
    return {
      keyId: row.id,
      keyType: row.type,
      environment: row.environment,
      plan: row.plan,
      expiresAt: row.expires_at?.toISOString(),
    };
  };
