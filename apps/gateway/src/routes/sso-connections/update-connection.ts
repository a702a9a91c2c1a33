import { AppError, isId } from '@secsvc/shared';
import { parseIdpMetadata } from '../../sso/metadata';
import { dataOf, defineRoute, errorSchema } from '../route';
import { connectionForm, connectionIdParams, connectionOf, updateConnectionBody } from './schemas';

export const updateConnectionRoute = defineRoute({
  method: 'patch',
  path: '/sso/connections/:id',
  operationId: 'updateSsoConnection',
  summary: 'Change an SSO connection: name, idpMetadataXml (validated again), domains and defaultRoles (replace the stored ones), attributeMapping, allowIdpInitiated, initiateLoginUrl',
  tags: ['sso'],
  params: connectionIdParams,
  body: updateConnectionBody,
  responses: {
    200: { description: 'The connection', schema: dataOf(connectionForm) },
    400: { description: 'Invalid body or metadata', schema: errorSchema },
    404: { description: 'No such connection', schema: errorSchema },
    409: { description: 'A domain belongs to another connection', schema: errorSchema },
  },
  async handle({ params, body }, ctx) {
    if (Object.values(body).every((v) => v === undefined)) {
      throw AppError.invalid([{ field: '(body)', message: 'give at least one of name, idpMetadataXml, domains, defaultRoles, attributeMapping, allowIdpInitiated, initiateLoginUrl' }]);
    }
    const idp = body.idpMetadataXml === undefined ? undefined : parseIdpMetadata(body.idpMetadataXml);
    if (!isId('sso', params.id)) throw AppError.notFound('SSO connection');
    const c = await ctx.clients.identity.updateSsoConnection(
      {
        environment: ctx.principal.environment,
        id: params.id,
        name: body.name,
        idpMetadataXml: body.idpMetadataXml,
        idpEntityId: idp?.entityId,
        idpSsoUrl: idp?.ssoUrl,
        idpCertificates: idp ? { values: idp.certificates } : undefined,
        domains: body.domains ? { values: body.domains } : undefined,
        defaultRoles: body.defaultRoles ? { values: body.defaultRoles } : undefined,
        attributeMappingJson: body.attributeMapping ? JSON.stringify(body.attributeMapping) : undefined,
        allowIdpInitiated: body.allowIdpInitiated,
        initiateLoginUrl: body.initiateLoginUrl,
      },
      ctx.call,
    );
    return { status: 200, body: { data: connectionOf(c, ctx.sso?.baseUrl) } };
  },
});
