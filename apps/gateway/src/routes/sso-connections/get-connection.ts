import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { connectionForm, connectionIdParams, connectionOf } from './schemas';

export const getConnectionRoute = defineRoute({
  method: 'get',
  path: '/sso/connections/:id',
  scope: 'read:sso',
  operationId: 'getSsoConnection',
  summary: 'Get an SSO connection',
  tags: ['sso'],
  params: connectionIdParams,
  responses: {
    200: { description: 'The connection', schema: dataOf(connectionForm) },
    404: { description: 'No such connection', schema: errorSchema },
  },
  async handle({ params }, ctx) {
    if (!isId('sso', params.id)) throw AppError.notFound('SSO connection');
    const c = await ctx.clients.identity.getSsoConnection({ environment: ctx.principal.environment, id: params.id, anyEnvironment: false }, ctx.call);
    return { status: 200, body: { data: connectionOf(c, ctx.sso?.baseUrl) } };
  },
});
