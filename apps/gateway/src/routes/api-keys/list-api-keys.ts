import { z } from 'zod';
import { cursorParam, defineRoute, errorSchema, limitParam, listOf, pageOf } from '../route';
import { apiKeyForm, apiKeyOf } from './schemas';

export const listApiKeysRoute = defineRoute({
  method: 'get',
  path: '/api-keys',
  scope: 'read:api_keys',
  operationId: 'listApiKeys',
  summary: 'List API keys (masked), newest first',
  tags: ['api-keys'],
  query: z.strictObject({ limit: limitParam, cursor: cursorParam }),
  responses: {
    200: { description: 'A page of keys', schema: listOf(apiKeyForm) },
    400: { description: 'Invalid limit or cursor', schema: errorSchema },
  },
  async handle({ query }, ctx) {
    const page = await ctx.clients.identity.listApiKeys(
      { environment: ctx.principal.environment, limit: query.limit, cursor: query.cursor ?? '' },
      ctx.call,
    );
    return pageOf(page.apiKeys.map(apiKeyOf), page.hasMore, page.nextCursor);
  },
});
