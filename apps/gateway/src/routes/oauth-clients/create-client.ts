import { dataOf, defineRoute, errorSchema } from '../route';
import { clientOf, createClientBody, createdClientForm, refuseTokenClientChange } from './schemas';

export const createClientRoute = defineRoute({
  method: 'post',
  path: '/oauth/clients',
  scope: 'write:clients',
  operationId: 'createOAuthClient',
  summary: 'Register an OAuth client (a confidential client gets its secret in this response only)',
  tags: ['oauth'],
  body: createClientBody,
  responses: {
    201: { description: 'Created', schema: dataOf(createdClientForm) },
    400: { description: 'Invalid body: each faulty field (redirectUris[i], scopes[i]) is named', schema: errorSchema },
    403: { description: 'Denied by policy; or an OAuth access token giving scopes it does not have (scopes[i]) or making a first-party client (firstParty)', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    refuseTokenClientChange(ctx.principal, body);
    const created = await ctx.clients.identity.createOAuthClient(
      {
        environment: ctx.principal.environment,
        name: body.name,
        type: body.type,
        redirectUris: body.redirectUris ?? [],
        scopes: body.scopes,
        firstParty: body.firstParty ?? false,
      },
      ctx.call,
    );
    const data = { ...clientOf(created.client!), ...(created.clientSecret ? { clientSecret: created.clientSecret } : {}) };
    return { status: 201, body: { data } };
  },
});
