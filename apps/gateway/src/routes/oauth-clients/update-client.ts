import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { clientForm, clientIdParams, clientOf, refuseTokenClientChange, updateClientBody } from './schemas';

export const updateClientRoute = defineRoute({
  method: 'patch',
  path: '/oauth/clients/:id',
  scope: 'write:clients',
  operationId: 'updateOAuthClient',
  summary: 'Change an OAuth client: name, redirectUris and scopes (arrays replace the stored ones), firstParty',
  tags: ['oauth'],
  params: clientIdParams,
  body: updateClientBody,
  responses: {
    200: { description: 'The client', schema: dataOf(clientForm) },
    400: { description: 'Invalid body', schema: errorSchema },
    403: { description: 'Denied by policy; or an OAuth access token changing a first-party client or one with scopes it lacks (id), giving scopes it lacks (scopes[i]) or making it first party (firstParty)', schema: errorSchema },
    404: { description: 'No such client', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    // the body names at least one field (a refinement of updateClientBody)
    if (!isId('cli', params.id)) throw AppError.notFound('OAuth client');
    if (ctx.principal.scopes) {
      const existing = await ctx.clients.identity.getOAuthClient({ environment: ctx.principal.environment, id: params.id }, ctx.call);
      refuseTokenClientChange(ctx.principal, body, existing);
    }
    const client = await ctx.clients.identity.updateOAuthClient(
      {
        environment: ctx.principal.environment,
        id: params.id,
        name: body.name,
        redirectUris: body.redirectUris ? { values: body.redirectUris } : undefined,
        scopes: body.scopes ? { values: body.scopes } : undefined,
        firstParty: body.firstParty,
      },
      ctx.call,
    );
    return { status: 200, body: { data: clientOf(client) } };
  },
});
