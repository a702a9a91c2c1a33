import { AppError, isId } from '@secsvc/shared';
import { defineRoute, errorSchema } from '../route';
import { apiKeyIdParams } from './schemas';

export const revokeApiKeyRoute = defineRoute({
  method: 'delete',
  path: '/api-keys/:id',
  scope: 'write:api_keys',
  operationId: 'revokeApiKey',
  summary: 'Revoke an API key (at once, on every gateway)',
  tags: ['api-keys'],
  params: apiKeyIdParams,
  responses: {
    204: { description: 'Revoked (also when it already was)' },
    404: { description: 'No such key', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('key', params.id)) throw AppError.notFound('API key');
    await ctx.clients.identity.revokeApiKey({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 204 };
  },
});
