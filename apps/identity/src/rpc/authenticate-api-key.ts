import type { identity } from '@secsvc/proto';
import type { CallContext } from '@secsvc/shared';
import type { ApiKeysService } from '../services/api-keys';

export const authenticateApiKey =
  (apiKeys: ApiKeysService) =>
  async (req: identity.AuthenticateApiKeyRequest, call: CallContext): Promise<identity.ApiKeyPrincipal> => {
    const { row, expiresAt } = await apiKeys.authenticate(req.key, call);
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
