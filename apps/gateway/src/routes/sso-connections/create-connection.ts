import { dataOf, defineRoute, errorSchema } from '../route';
import { connectionForm, connectionOf, createConnectionBody } from './schemas';

export const createConnectionRoute = defineRoute({
  method: 'post',
  path: '/sso/connections',
  scope: 'write:sso',
  // Roles given to users the connection creates: granting them needs assign_roles on <path>/roles (like a user's roles).
  alsoAuthorize: (req) => {
    const roles = (req.body as { defaultRoles?: unknown } | undefined)?.defaultRoles;
    return Array.isArray(roles) && roles.length > 0 ? { action: 'assign_roles', resource: `${req.path.replace(/\/+$/, '')}/roles` } : undefined;
  },
  operationId: 'createSsoConnection',
  summary: 'Connect a SAML 2.0 identity provider (its metadata is validated: entity id, SSO endpoint, signing certificates)',
  tags: ['sso'],
  body: createConnectionBody,
  responses: {
    201: { description: 'Created, with the SP metadata URL to give the identity provider', schema: dataOf(connectionForm) },
    400: { description: 'Invalid body or metadata (idpMetadataXml named: unparsable, no or expired signing certificate)', schema: errorSchema },
    409: { description: 'A domain belongs to another connection', schema: errorSchema },
  },
  async handle({ body }, ctx) {
    const { xml, idp } = body.idpMetadataXml; // parsed and checked by the body schema
    const created = await ctx.clients.identity.createSsoConnection(
      {
        environment: ctx.principal.environment,
        fields: {
          name: body.name,
          idpMetadataXml: xml,
          idpEntityId: idp.entityId,
          idpSsoUrl: idp.ssoUrl,
          idpCertificates: idp.certificates,
          domains: body.domains,
          defaultRoles: body.defaultRoles ?? [],
          attributeMappingJson: JSON.stringify(body.attributeMapping ?? {}),
          allowIdpInitiated: body.allowIdpInitiated ?? false,
          initiateLoginUrl: body.initiateLoginUrl ?? '',
          allowSha1Signatures: body.allowSha1Signatures ?? false,
          requireMfa: body.requireMfa ?? false,
        },
      },
      ctx.call,
    );
    return { status: 201, body: { data: connectionOf(created, ctx.sso?.baseUrl) } };
  },
});
