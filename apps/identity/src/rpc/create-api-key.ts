import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { ApiKeysService } from '../services/api-keys';
import { toApiKeyMessage } from './messages';

export const createApiKey =
  (apiKeys: ApiKeysService) =>
  async (req: identity.CreateApiKeyRequest, call: CallContext): Promise<identity.CreatedApiKey> => {
    const { row, key } = await apiKeys.create(environmentOf(req.environment), req, call);
    return { apiKey: toApiKeyMessage(row), key };
  };
