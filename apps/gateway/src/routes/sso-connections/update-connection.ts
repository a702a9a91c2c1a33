import { AppError, isId } from '@secsvc/shared';
import { dataOf, defineRoute, errorSchema } from '../route';
import { connectionForm, connectionIdParams, connectionOf, updateConnectionBody } from './schemas';

export const updateConnectionRoute = defineRoute({
  method: 'patch',
  path: '/sso/connections/:id',
  scope: 'write:sso',
  // Roles given to users the connection creates: granting them needs assign_roles on <path>/roles (like a user's roles).
  alsoAuthorize: (req) => {
    const roles = (req.body as { defaultRoles?: unknown } | undefined)?.defaultRoles;
    return Array.isArray(roles) && roles.length > 0 ? { action: 'assign_roles', resource: `${req.path.replace(/\/+$/, '')}/roles` } : undefined;
  },
  operationId: 'updateSsoConnection',
  summary: 'Change an SSO connection: name, idpMetadataXml (validated again), domains and defaultRoles (replace the stored ones), attributeMapping, allowIdpInitiated, initiateLoginUrl, allowSha1Signatures, requireMfa',
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
    // the body names at least one field, and its metadata parsed (refinements of updateConnectionBody)
    const idp = body.idpMetadataXml?.idp;
    if (!isId('sso', params.id)) throw AppError.notFound('SSO connection');
    const c = await ctx.clients.identity.updateSsoConnection(
      {
        environment: ctx.principal.environment,
        id: params.id,
        name: body.name,
        idpMetadataXml: body.idpMetadataXml?.xml,
        idpEntityId: idp?.entityId,
        idpSsoUrl: idp?.ssoUrl,
        idpCertificates: idp ? { values: idp.certificates } : undefined,
        domains: body.domains ? { values: body.domains } : undefined,
        defaultRoles: body.defaultRoles ? { values: body.defaultRoles } : undefined,
        attributeMappingJson: body.attributeMapping ? JSON.stringify(body.attributeMapping) : undefined,
        allowIdpInitiated: body.allowIdpInitiated,
        initiateLoginUrl: body.initiateLoginUrl,
        allowSha1Signatures: body.allowSha1Signatures,
        requireMfa: body.requireMfa,
      },
      ctx.call,
    );
    return { status: 200, body: { data: connectionOf(c, ctx.sso?.baseUrl) } };
  },
});
