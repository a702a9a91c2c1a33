import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { ApiKeysService } from '../services/api-keys';
import { toApiKeyMessage } from './messages';

export const getApiKey =
  (apiKeys: ApiKeysService) =>
  async (req: identity.GetApiKeyRequest): Promise<identity.ApiKey> =>
    toApiKeyMessage(await apiKeys.get(environmentOf(req.environment), req.id));
