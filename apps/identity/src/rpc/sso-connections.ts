import type { identity } from '@secsvc/proto';
import { AppError, keysetPage, newId, pageRequest, withTransaction, type CallContext, type PoolClient } from '@secsvc/shared';
import { callerOf, environmentOf, type IdentityContext } from '../context';
import { validateConnectionFields } from '../domain/sso';
import { appendEvent } from '../repositories/outbox';
import { ssoConnectionsRepository, type SsoConnectionRow } from '../repositories/sso';

// The SSO connection RPCs live together: they share the row mapping, validation and event shape.

export function toConnectionMessage(row: SsoConnectionRow): identity.SsoConnection {
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    idpMetadataXml: row.idp_metadata_xml,
    idpEntityId: row.idp_entity_id,
    idpSsoUrl: row.idp_sso_url,
    idpCertificates: row.idp_certificates,
    domains: row.domains,
    defaultRoles: row.default_roles,
    attributeMappingJson: row.attribute_mapping,
    allowIdpInitiated: row.allow_idp_initiated,
    initiateLoginUrl: row.initiate_login_url,
    allowSha1Signatures: row.allow_sha1_signatures,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function connectionEvent(db: PoolClient, call: CallContext, type: string, row: SsoConnectionRow, metadata: Record<string, unknown> = {}) {
  return appendEvent(db, {
    ...callerOf(call),
    environment: row.environment,
    type,
    target: { id: row.id, type: 'sso_connection' },
    result: 'success',
    traceId: call.requestId,
    metadata: { idpEntityId: row.idp_entity_id, ...metadata },
  });
}

async function refuseTakenDomains(db: PoolClient, environment: string, domains: string[] | undefined, id: string): Promise<void> {
  if (!domains?.length) return;
  const owner = await ssoConnectionsRepository.domainOwner(db, environment, domains, id);
  if (owner) throw new AppError('conflict', 'A domain belongs to another SSO connection', [{ field: 'domains', message: `${owner.domain} is used by ${owner.id}` }]);
}

export const createSsoConnection =
  (ctx: IdentityContext) =>
  async (req: identity.CreateSsoConnectionRequest, call: CallContext): Promise<identity.SsoConnection> => {
    const environment = environmentOf(req.environment);
    const f = req.fields;
    if (!f) throw AppError.field('(body)', 'is required');
    const attributeMapping = validateConnectionFields({ ...f, attributeMappingJson: f.attributeMappingJson })!;
    const row = await withTransaction(ctx.pool, async (db) => {
      const id = newId('sso');
      await refuseTakenDomains(db, environment, f.domains, id);
      const inserted = await ssoConnectionsRepository.insert(db, id, environment, { ...f, name: f.name.trim(), attributeMapping });
      await connectionEvent(db, call, 'sso_connection.created', inserted);
      return inserted;
    });
    return toConnectionMessage(row);
  };

export const listSsoConnections =
  (ctx: IdentityContext) =>
  async (req: identity.ListSsoConnectionsRequest): Promise<identity.ListSsoConnectionsResponse> => {
    const environment = environmentOf(req.environment);
    const scope = { kind: 'sso_connections', environment };
    const { limit, after } = pageRequest(req, scope, ctx.config.SERVER_SECRET);
    const rows = await ssoConnectionsRepository.list(ctx.pool, environment, limit, after);
    const { page, hasMore, nextCursor } = keysetPage(rows, limit, scope, ctx.config.SERVER_SECRET);
    return { connections: page.map(toConnectionMessage), hasMore, nextCursor };
  };

export const getSsoConnection =
  (ctx: IdentityContext) =>
  async (req: identity.GetSsoConnectionRequest): Promise<identity.SsoConnection> => {
    const row = await ssoConnectionsRepository.get(ctx.pool, req.anyEnvironment ? null : environmentOf(req.environment), req.id);
    if (!row) throw AppError.notFound('SSO connection');
    return toConnectionMessage(row);
  };

export const findSsoConnection =
  (ctx: IdentityContext) =>
  async (req: identity.FindSsoConnectionRequest): Promise<identity.SsoConnection> => {
    const row = await ssoConnectionsRepository.findByDomain(ctx.pool, environmentOf(req.environment), req.domain.toLowerCase());
    if (!row) throw AppError.notFound('SSO connection');
    return toConnectionMessage(row);
  };

export const updateSsoConnection =
  (ctx: IdentityContext) =>
  async (req: identity.UpdateSsoConnectionRequest, call: CallContext): Promise<identity.SsoConnection> => {
    const environment = environmentOf(req.environment);
    const update = {
      name: req.name?.trim(),
      idpMetadataXml: req.idpMetadataXml,
      idpEntityId: req.idpEntityId,
      idpSsoUrl: req.idpSsoUrl,
      idpCertificates: req.idpCertificates?.values,
      domains: req.domains?.values,
      defaultRoles: req.defaultRoles?.values,
      allowIdpInitiated: req.allowIdpInitiated,
      initiateLoginUrl: req.initiateLoginUrl,
      allowSha1Signatures: req.allowSha1Signatures,
    };
    const attributeMapping = validateConnectionFields({ ...update, attributeMappingJson: req.attributeMappingJson });
    return withTransaction(ctx.pool, async (db) => {
      if (!(await ssoConnectionsRepository.get(db, environment, req.id))) throw AppError.notFound('SSO connection');
      await refuseTakenDomains(db, environment, update.domains, req.id);
      // Deleted by a concurrent call since it was read: gone, as for a delete that came first.
      const row = await ssoConnectionsRepository.update(db, environment, req.id, { ...update, attributeMapping });
      if (!row) throw AppError.notFound('SSO connection');
      const changed = Object.entries({ ...update, attributeMapping }).filter(([, v]) => v !== undefined).map(([k]) => k);
      await connectionEvent(db, call, 'sso_connection.updated', row, { changed });
      return toConnectionMessage(row);
    });
  };

export const deleteSsoConnection =
  (ctx: IdentityContext) =>
  async (req: identity.DeleteSsoConnectionRequest, call: CallContext): Promise<identity.DeleteSsoConnectionResponse> => {
    const environment = environmentOf(req.environment);
    return withTransaction(ctx.pool, async (db) => {
      const row = await ssoConnectionsRepository.get(db, environment, req.id);
      if (!row) throw AppError.notFound('SSO connection');
      await ssoConnectionsRepository.delete(db, environment, req.id);
      await connectionEvent(db, call, 'sso_connection.deleted', row);
      return {};
    });
  };
