import { dataOf, defineRoute, errorSchema } from '../route';
import { apiKeyOf, createApiKeyBody, createdApiKeyForm } from './schemas';

export const createApiKeyRoute = defineRoute({
  method: 'post',
  path: '/api-keys',
  scope: 'write:api_keys',
  operationId: 'createApiKey',
  summary: 'Create an API key (the full key is in this response only)',
  tags: ['api-keys'],
  body: createApiKeyBody,
  responses: {
    201: { description: 'Created', schema: dataOf(createdApiKeyForm) },
    400: { description: 'Invalid body', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const created = await ctx.clients.identity.createApiKey(
      {
        environment: ctx.principal.environment,
        name: body.name,
        type: body.type,
        plan: body.plan ?? 'free',
        rateLimit: body.rateLimit,
        expiresAt: body.expiresAt ? new Date(body.expiresAt).toISOString() : undefined,
      },
      ctx.call,
    );
    return { status: 201, body: { data: { ...apiKeyOf(created.apiKey!), key: created.key } } };
  },
});
