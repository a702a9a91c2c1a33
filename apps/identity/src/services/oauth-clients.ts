import { AppError, eventOfCall, newId, type CallContext, type PoolClient } from '@secsvc/shared';
import { CLIENT_SECRET_PREFIX, hashClientSecret, administrativeScopeErrors, validateClientFields } from '../domain/oauth';
import { generateOpaqueToken } from '../domain/opaque-tokens';
import type { oauthClientsRepository, OAuthClientRow } from '../repositories/oauth';
import type { OAuthClientCache } from './oauth-client-cache';
import { listPage, type Database, type Outbox, type Page, type PageInput } from './ports';

export type OAuthClientsRepository = Pick<typeof oauthClientsRepository, 'insert' | 'get' | 'list' | 'update' | 'delete'>;

export interface OAuthClientsDeps {
  db: Database;
  clients: OAuthClientsRepository;
  outbox: Outbox;
  /** Client secrets are stored as HMACs under it; it signs list cursors too. */
  serverSecret: string;
  /** The token endpoints' clients: a change made here is dropped from it at once. */
  clientCache?: Pick<OAuthClientCache, 'drop'>;
}

export interface NewClientInput {
  name: string;
  type: string;
  redirectUris: string[];
  scopes: string[];
  firstParty: boolean;
}

export interface ClientChanges {
  name?: string;
  redirectUris?: string[];
  scopes?: string[];
  firstParty?: boolean;
}

/** The registration of OAuth clients by the application: each change with its oauth_client.* event. */
export class OAuthClientsService {
  constructor(private readonly deps: OAuthClientsDeps) {}

  private event(tx: PoolClient, call: CallContext, type: string, row: OAuthClientRow, metadata: Record<string, unknown> = {}) {
    return this.deps.outbox.append(
      tx,
      eventOfCall(call, { environment: row.environment, type, target: { id: row.id, type: 'oauth_client' }, result: 'success', metadata: { clientType: row.type, ...metadata } }),
    );
  }

  /** A new client; a confidential one gets its secret (shown once, '' for a public client). */
  async create(environment: string, input: NewClientInput, call: CallContext): Promise<{ row: OAuthClientRow; secret: string }> {
    const errors = validateClientFields({ name: input.name, type: input.type, redirectUris: input.redirectUris, scopes: input.scopes }, input.type);
    errors.push(...administrativeScopeErrors(input.scopes, input.firstParty, true));
    if (errors.length) throw AppError.invalid(errors);
    const { db, clients, serverSecret } = this.deps;
    const secret = input.type === 'confidential' ? generateOpaqueToken(CLIENT_SECRET_PREFIX) : '';
    const row = await db.transaction(async (tx) => {
      const inserted = await clients.insert(tx, {
        id: newId('cli'),
        environment,
        name: input.name.trim(),
        type: input.type,
        secretHash: secret ? hashClientSecret(secret, serverSecret) : null,
        redirectUris: input.redirectUris,
        scopes: input.scopes,
        firstParty: input.firstParty,
      });
      await this.event(tx, call, 'oauth_client.created', inserted, { firstParty: inserted.first_party });
      return inserted;
    });
    return { row, secret };
  }

  list(environment: string, page: PageInput): Promise<Page<OAuthClientRow>> {
    const { db, clients, serverSecret } = this.deps;
    return listPage(serverSecret, 'oauth_clients', environment, page, (limit, after) => clients.list(db.pool, environment, limit, after));
  }

  async get(environment: string, id: string): Promise<OAuthClientRow> {
    const row = await this.deps.clients.get(this.deps.db.pool, environment, id);
    if (!row) throw AppError.notFound('OAuth client');
    return row;
  }

  /** Changes the fields given (checked against the client's type); oauth_client.updated names them. */
  async update(environment: string, id: string, changes: ClientChanges, call: CallContext): Promise<OAuthClientRow> {
    const { db, clients } = this.deps;
    const row = await db.transaction(async (tx) => {
      const before = await clients.get(tx, environment, id);
      if (!before) throw AppError.notFound('OAuth client');
      const update = { name: changes.name, redirectUris: changes.redirectUris, scopes: changes.scopes, firstParty: changes.firstParty };
      const errors = validateClientFields(update, before.type);
      errors.push(...administrativeScopeErrors(update.scopes ?? before.scopes, update.firstParty ?? before.first_party, update.scopes !== undefined));
      if (errors.length) throw AppError.invalid(errors);
      // Deleted by a concurrent call since it was read: gone, as for a delete that came first.
      const row = await clients.update(tx, environment, id, { ...update, name: update.name?.trim() });
      if (!row) throw AppError.notFound('OAuth client');
      const changed = Object.entries(update).filter(([, v]) => v !== undefined).map(([k]) => k);
      await this.event(tx, call, 'oauth_client.updated', row, { changed });
      return row;
    });
    this.deps.clientCache?.drop(id);
    return row;
  }

  /**
   * Deletes the client. Its grants are deleted with it: each one is announced and leaves a tombstone, so
   * gateways refuse the access tokens at once; the refresh tokens are gone. Answers how many grants were live.
   */
  async delete(environment: string, id: string, call: CallContext): Promise<number> {
    const { db, clients } = this.deps;
    const activeGrants = await db.transaction(async (tx) => {
      const row = await clients.get(tx, environment, id);
      if (!row) throw AppError.notFound('OAuth client');
      const { activeGrants } = await clients.delete(tx, environment, id);
      await this.event(tx, call, 'oauth_client.deleted', row, { grantsRevoked: activeGrants });
      return activeGrants;
    });
    this.deps.clientCache?.drop(id);
    return activeGrants;
  }
}
