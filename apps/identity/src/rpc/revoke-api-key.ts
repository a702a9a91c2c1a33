import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { ApiKeysService } from '../services/api-keys';

export const revokeApiKey =
  (apiKeys: ApiKeysService) =>
  async (req: identity.RevokeApiKeyRequest, call: CallContext): Promise<identity.RevokeApiKeyResponse> => {
    await apiKeys.revoke(environmentOf(req.environment), req.id, call);
    return {};
  };
