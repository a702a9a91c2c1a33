import { AppError, eventOfCall, newId, type CallContext, type PoolClient } from '@secsvc/shared';
import { validateConnectionFields } from '../domain/sso';
import type { ssoConnectionsRepository, SsoConnectionFields, SsoConnectionRow } from '../repositories/sso';
import { listPage, type Database, type Outbox, type Page, type PageInput } from './ports';

export type SsoConnectionsRepository = Pick<typeof ssoConnectionsRepository, 'insert' | 'get' | 'findByDomain' | 'list' | 'domainOwner' | 'update' | 'delete'>;

export interface SsoConnectionsDeps {
  db: Database;
  connections: SsoConnectionsRepository;
  outbox: Outbox;
  /** Signs list cursors. */
  serverSecret: string;
}

/** A connection's fields as given: the attribute mapping as JSON text ('' for none). */
export type SsoConnectionInput = Omit<SsoConnectionFields, 'attributeMapping'> & { attributeMappingJson: string };

/** The fields an update gives (absent: unchanged). */
export type SsoConnectionChanges = Partial<SsoConnectionInput>;

/**
 * The SSO (SAML) connections of an environment, as the application registers them (the gateway has parsed the
 * IdP metadata and checked its certificates). A domain belongs to one connection of an environment.
 */
export class SsoConnectionsService {
  constructor(private readonly deps: SsoConnectionsDeps) {}

  private event(tx: PoolClient, call: CallContext, type: string, row: SsoConnectionRow, metadata: Record<string, unknown> = {}) {
    return this.deps.outbox.append(
      tx,
      eventOfCall(call, {
        environment: row.environment,
        type,
        target: { id: row.id, type: 'sso_connection' },
        result: 'success',
        metadata: { idpEntityId: row.idp_entity_id, ...metadata },
      }),
    );
  }

  private async refuseTakenDomains(tx: PoolClient, environment: string, domains: string[] | undefined, id: string): Promise<void> {
    if (!domains?.length) return;
    const owner = await this.deps.connections.domainOwner(tx, environment, domains, id);
    if (owner) throw new AppError('conflict', 'A domain belongs to another SSO connection', [{ field: 'domains', message: `${owner.domain} is used by ${owner.id}` }]);
  }

  async create(environment: string, fields: SsoConnectionInput | undefined, call: CallContext): Promise<SsoConnectionRow> {
    if (!fields) throw AppError.field('(body)', 'is required');
    const attributeMapping = validateConnectionFields(fields)!;
    return this.deps.db.transaction(async (tx) => {
      const id = newId('sso');
      await this.refuseTakenDomains(tx, environment, fields.domains, id);
      const inserted = await this.deps.connections.insert(tx, id, environment, { ...fields, name: fields.name.trim(), attributeMapping });
      await this.event(tx, call, 'sso_connection.created', inserted);
      return inserted;
    });
  }

  list(environment: string, page: PageInput): Promise<Page<SsoConnectionRow>> {
    const { db, connections, serverSecret } = this.deps;
    return listPage(serverSecret, 'sso_connections', environment, page, (limit, after) => connections.list(db.pool, environment, limit, after));
  }

  /** The connection in `environment`, or in any environment when null (the SP endpoints know only its id). */
  async get(environment: string | null, id: string): Promise<SsoConnectionRow> {
    const row = await this.deps.connections.get(this.deps.db.pool, environment, id);
    if (!row) throw AppError.notFound('SSO connection');
    return row;
  }

  /** The connection that owns an email domain (home realm discovery). */
  async findByDomain(environment: string, domain: string): Promise<SsoConnectionRow> {
    const row = await this.deps.connections.findByDomain(this.deps.db.pool, environment, domain.toLowerCase());
    if (!row) throw AppError.notFound('SSO connection');
    return row;
  }

  /** Changes the fields given; sso_connection.updated names them. */
  async update(environment: string, id: string, changes: SsoConnectionChanges, call: CallContext): Promise<SsoConnectionRow> {
    const { attributeMappingJson, ...given } = changes;
    const update = { ...given, name: given.name?.trim() };
    const attributeMapping = validateConnectionFields({ ...update, attributeMappingJson });
    const { db, connections } = this.deps;
    return db.transaction(async (tx) => {
      if (!(await connections.get(tx, environment, id))) throw AppError.notFound('SSO connection');
      await this.refuseTakenDomains(tx, environment, update.domains, id);
      // Deleted by a concurrent call since it was read: gone, as for a delete that came first.
      const row = await connections.update(tx, environment, id, { ...update, attributeMapping });
      if (!row) throw AppError.notFound('SSO connection');
      const changed = Object.entries({ ...update, attributeMapping }).filter(([, v]) => v !== undefined).map(([k]) => k);
      await this.event(tx, call, 'sso_connection.updated', row, { changed });
      return row;
    });
  }

  async delete(environment: string, id: string, call: CallContext): Promise<void> {
    const { db, connections } = this.deps;
    await db.transaction(async (tx) => {
      const row = await connections.get(tx, environment, id);
      if (!row) throw AppError.notFound('SSO connection');
      await connections.delete(tx, environment, id);
      await this.event(tx, call, 'sso_connection.deleted', row);
    });
  }
}
