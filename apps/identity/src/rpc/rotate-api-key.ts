import type { identity } from '@secsvc/proto';
import { environmentOf, type CallContext } from '@secsvc/shared';
import type { ApiKeysService } from '../services/api-keys';
import { toApiKeyMessage } from './messages';

export const rotateApiKey =
  (apiKeys: ApiKeysService) =>
  async (req: identity.RotateApiKeyRequest, call: CallContext): Promise<identity.CreatedApiKey> => {
    const { row, key } = await apiKeys.rotate(environmentOf(req.environment), req.id, req.gracePeriodSeconds, call);
    return { apiKey: toApiKeyMessage(row), key };
  };
