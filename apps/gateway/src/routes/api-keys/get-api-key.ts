import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { apiKeyForm, apiKeyIdParams, apiKeyOf } from './schemas';

export const getApiKeyRoute = defineRoute({
  method: 'get',
  path: '/api-keys/:id',
  scope: 'read:api_keys',
  operationId: 'getApiKey',
  summary: 'Get an API key (masked)',
  tags: ['api-keys'],
  params: apiKeyIdParams,
  responses: {
    200: { description: 'The key', schema: dataOf(apiKeyForm) },
    404: { description: 'No such key', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('key', params.id)) throw AppError.notFound('API key');
    const key = await ctx.clients.identity.getApiKey({ environment: ctx.principal.environment, id: params.id }, ctx.call);
    return { status: 200, body: { data: apiKeyOf(key) } };
  },
});
