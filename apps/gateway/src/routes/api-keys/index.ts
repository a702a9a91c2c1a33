import { createApiKeyRoute } from './create-api-key';
import { getApiKeyRoute } from './get-api-key';
import { listApiKeysRoute } from './list-api-keys';
import { revokeApiKeyRoute } from './revoke-api-key';
import { rotateApiKeyRoute } from './rotate-api-key';

export const apiKeyRoutes = [listApiKeysRoute, createApiKeyRoute, getApiKeyRoute, revokeApiKeyRoute, rotateApiKeyRoute];
