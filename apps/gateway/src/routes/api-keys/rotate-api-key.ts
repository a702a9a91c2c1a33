import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { apiKeyIdParams, apiKeyOf, createdApiKeyForm, rotateApiKeyBody } from './schemas';

export const DEFAULT_GRACE_SECONDS = 24 * 3600;

export const rotateApiKeyRoute = defineRoute({
  method: 'post',
  path: '/api-keys/:id/rotate',
  scope: 'write:api_keys',
  operationId: 'rotateApiKey',
  summary: 'New secret for a key; the previous one keeps working for gracePeriod (default 24h, at most 7d)',
  tags: ['api-keys'],
  params: apiKeyIdParams,
  body: rotateApiKeyBody,
  responses: {
    200: { description: 'The key with its new secret (shown once)', schema: dataOf(createdApiKeyForm) },
    400: { description: 'Invalid gracePeriod', schema: errorSchema },
    404: { description: 'No such key', schema: errorSchema },
    409: { description: 'The key is revoked', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    if (!isId('key', params.id)) throw AppError.notFound('API key');
    const rotated = await ctx.clients.identity.rotateApiKey(
      { environment: ctx.principal.environment, id: params.id, gracePeriodSeconds: body.gracePeriod ?? DEFAULT_GRACE_SECONDS },
      ctx.call,
    );
    return { status: 200, body: { data: { ...apiKeyOf(rotated.apiKey!), key: rotated.key } } };
  },
});
