import type { identity } from '@secsvc/proto';
import { AppError, keysetPage, newId, pageRequest, withTransaction, type CallContext, type PoolClient } from '@secsvc/shared';
import { callerOf, environmentOf, type IdentityContext } from '../context';
import { validateClientFields } from '../domain/oauth';
import { generateOpaqueToken } from '../domain/opaque-tokens';
import { appendEvent } from '../repositories/outbox';
import { oauthClientsRepository, type OAuthClientRow } from '../repositories/oauth';
import { CLIENT_SECRET_PREFIX, hashClientSecret } from './oauth-support';

// The OAuth client registration RPCs live together: they share the row mapping, validation and event shape.

export function toClientMessage(row: OAuthClientRow): identity.OAuthClient {
  return {
    id: row.id,
    environment: row.environment,
    name: row.name,
    type: row.type,
    redirectUris: row.redirect_uris,
    scopes: row.scopes,
    firstParty: row.first_party,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function clientEvent(db: PoolClient, call: CallContext, type: string, row: OAuthClientRow, metadata: Record<string, unknown> = {}) {
  return appendEvent(db, {
    ...callerOf(call),
    environment: row.environment,
    type,
    target: { id: row.id, type: 'oauth_client' },
    result: 'success',
    traceId: call.requestId,
    metadata: { clientType: row.type, ...metadata },
  });
}

export const createOAuthClient =
  (ctx: IdentityContext) =>
  async (req: identity.CreateOAuthClientRequest, call: CallContext): Promise<identity.CreatedOAuthClient> => {
    const environment = environmentOf(req.environment);
    const errors = validateClientFields({ name: req.name, type: req.type, redirectUris: req.redirectUris, scopes: req.scopes }, req.type);
    if (errors.length) throw AppError.invalid(errors);
    const secret = req.type === 'confidential' ? generateOpaqueToken(CLIENT_SECRET_PREFIX) : '';
    const row = await withTransaction(ctx.pool, async (db) => {
      const inserted = await oauthClientsRepository.insert(db, {
        id: newId('cli'),
        environment,
        name: req.name.trim(),
        type: req.type,
        secretHash: secret ? hashClientSecret(secret, ctx.config.SERVER_SECRET) : null,
        redirectUris: req.redirectUris,
        scopes: req.scopes,
        firstParty: req.firstParty,
      });
      await clientEvent(db, call, 'oauth_client.created', inserted, { firstParty: inserted.first_party });
      return inserted;
    });
    return { client: toClientMessage(row), clientSecret: secret };
  };

export const listOAuthClients =
  (ctx: IdentityContext) =>
  async (req: identity.ListOAuthClientsRequest): Promise<identity.ListOAuthClientsResponse> => {
    const environment = environmentOf(req.environment);
    const scope = { kind: 'oauth_clients', environment };
    const { limit, after } = pageRequest(req, scope, ctx.config.SERVER_SECRET);
    const rows = await oauthClientsRepository.list(ctx.pool, environment, limit, after);
    const { page, hasMore, nextCursor } = keysetPage(rows, limit, scope, ctx.config.SERVER_SECRET);
    return { clients: page.map(toClientMessage), hasMore, nextCursor };
  };

export const getOAuthClient =
  (ctx: IdentityContext) =>
  async (req: identity.GetOAuthClientRequest): Promise<identity.OAuthClient> => {
    const row = await oauthClientsRepository.get(ctx.pool, environmentOf(req.environment), req.id);
    if (!row) throw AppError.notFound('OAuth client');
    return toClientMessage(row);
  };

export const updateOAuthClient =
  (ctx: IdentityContext) =>
  async (req: identity.UpdateOAuthClientRequest, call: CallContext): Promise<identity.OAuthClient> => {
    const environment = environmentOf(req.environment);
    return withTransaction(ctx.pool, async (db) => {
      const before = await oauthClientsRepository.get(db, environment, req.id);
      if (!before) throw AppError.notFound('OAuth client');
      const update = { name: req.name, redirectUris: req.redirectUris?.values, scopes: req.scopes?.values, firstParty: req.firstParty };
      const errors = validateClientFields(update, before.type);
      if (errors.length) throw AppError.invalid(errors);
      // Deleted by a concurrent call since it was read: gone, as for a delete that came first.
      const row = await oauthClientsRepository.update(db, environment, req.id, { ...update, name: update.name?.trim() });
      if (!row) throw AppError.notFound('OAuth client');
      const changed = Object.entries(update).filter(([, v]) => v !== undefined).map(([k]) => k);
      await clientEvent(db, call, 'oauth_client.updated', row, { changed });
      return toClientMessage(row);
    });
  };

export const deleteOAuthClient =
  (ctx: IdentityContext) =>
  async (req: identity.DeleteOAuthClientRequest, call: CallContext): Promise<identity.DeleteOAuthClientResponse> => {
    const environment = environmentOf(req.environment);
    return withTransaction(ctx.pool, async (db) => {
      const row = await oauthClientsRepository.get(db, environment, req.id);
      if (!row) throw AppError.notFound('OAuth client');
      // Its grants are deleted with it: each one is announced and leaves a tombstone, so gateways refuse
      // the access tokens at once; the refresh tokens are gone.
      const { activeGrants } = await oauthClientsRepository.delete(db, environment, req.id);
      await clientEvent(db, call, 'oauth_client.deleted', row, { grantsRevoked: activeGrants });
      return { grantsRevoked: activeGrants };
    });
  };
