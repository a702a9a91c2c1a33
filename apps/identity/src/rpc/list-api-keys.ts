import type { identity } from '@secsvc/proto';
import { environmentOf } from '@secsvc/shared';
import type { ApiKeysService } from '../services/api-keys';
import { toApiKeyMessage } from './messages';

export const listApiKeys =
  (apiKeys: ApiKeysService) =>
  async (req: identity.ListApiKeysRequest): Promise<identity.ListApiKeysResponse> => {
    const { page, hasMore, nextCursor } = await apiKeys.list(environmentOf(req.environment), req);
    return { apiKeys: page.map(toApiKeyMessage), hasMore, nextCursor };
  };
