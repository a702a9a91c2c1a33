import { Metadata } from '@grpc/grpc-js';
import { AppError, type CallContext, type EventInput, type Pool, type PoolClient } from '@secsvc/shared';
import type { ApiKeyRow } from '../../repositories/api-keys';
import type { PasswordHasher } from '../../domain/passwords';
import type { OAuthClientRow } from '../../repositories/oauth';
import type { ResetTokenRow } from '../../repositories/passwords';
import type { SessionAuthentication, SessionRow } from '../../repositories/sessions';
import type { SsoConnectionFields, SsoConnectionRow } from '../../repositories/sso';
import type { UserRow } from '../../repositories/users';
import type { ApiKeysRepository } from '../api-keys';
import type { AuthEventsService, RefusedCredential } from '../auth-events';
import type { OAuthClientsRepository } from '../oauth-clients';
import type { PasswordsRepository } from '../passwords';
import type { SamlSubject, SessionsDeps, SessionsRepository } from '../sessions';
import type { SsoConnectionsRepository } from '../sso-connections';
import type { Database, Db, Outbox } from '../ports';
import type { UsersRepository } from '../users';

// In-memory fakes of the ports and repositories the identity services are given, for unit tests without
// PostgreSQL. They keep rows in maps and answer as the SQL does for what the services ask; the database's
// own guarantees they imitate are named where they matter (unique emails, the outbox's transactions).

/** The W3C trace id of fake calls (the server sets a call's trace id). */
export const FAKE_TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/** A call as the gateway makes it: its metadata names the caller (x-actor-id, x-actor-type, ...). */
export function fakeCall(headers: Record<string, string> = {}, requestId = 'req_fakecall00000000000000'): CallContext {
  const metadata = new Metadata();
  for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
  return { requestId, metadata, traceId: FAKE_TRACE_ID };
}

/** An API key's call (the gateway's usual caller). */
export const keyCall = (keyId = 'key_caller', ip = '203.0.113.7') => fakeCall({ 'x-actor-id': keyId, 'x-actor-type': 'api_key', 'x-client-ip': ip, 'x-auth-method': 'secret' });

/**
 * The database and the outbox together: events written in a transaction count only once it commits (a
 * transaction that throws leaves none, as in PostgreSQL); an event written with a transaction that has ended
 * is a bug and throws. Rows the fake repositories change are not rolled back.
 */
export class FakeDatabase implements Database, Outbox {
  readonly pool = { fake: 'pool' } as unknown as Pool;
  /** Committed events, in order. */
  readonly events: EventInput[] = [];
  /** Transactions run, committed or not. */
  transactions = 0;
  private readonly open = new Map<unknown, EventInput[]>();

  async transaction<T>(fn: (tx: PoolClient) => Promise<T>): Promise<T> {
    const tx = { fake: `tx${++this.transactions}` } as unknown as PoolClient;
    const pending: EventInput[] = [];
    this.open.set(tx, pending);
    try {
      const result = await fn(tx);
      this.events.push(...pending);
      return result;
    } finally {
      this.open.delete(tx);
    }
  }

  async append(db: Db, event: EventInput): Promise<string> {
    const pending = this.open.get(db);
    if (pending) pending.push(event);
    else if (db === this.pool) this.events.push(event);
    else throw new Error('event written with a transaction that has ended');
    return `log_${this.events.length + (pending?.length ?? 0)}`;
  }

  async appendAll(db: Db, events: EventInput[]): Promise<string[]> {
    const ids: string[] = [];
    for (const e of events) ids.push(await this.append(db, e));
    return ids;
  }

  /** The committed events of `type`. */
  eventsOf(type: string): EventInput[] {
    return this.events.filter((e) => e.type === type);
  }
}

/** Newest first, after `after`, `limit + 1` rows: the list repositories' keyset contract. */
export function keyset<R extends { id: string }>(rows: Iterable<R>, limit: number, after?: string): R[] {
  return [...rows]
    .filter((r) => after === undefined || r.id < after)
    .sort((a, b) => (a.id < b.id ? 1 : -1))
    .slice(0, limit + 1);
}

let clock = 0;
/** Distinct, increasing timestamps (rows created in one test never share one). */
export const tick = () => new Date(Date.UTC(2026, 10, 1) + ++clock * 1000);

/** usersRepository in memory: emails unique per environment, case-insensitively (users_email_unique). */
export class FakeUsers implements UsersRepository {
  readonly rows = new Map<string, UserRow & { password_hash?: string | null }>();

  async insert(_db: Db, u: { id: string; environment: string; email: string; name: string; roles: string[]; metadata: string }): Promise<UserRow> {
    if ([...this.rows.values()].some((r) => r.environment === u.environment && r.email.toLowerCase() === u.email.toLowerCase())) {
      throw new AppError('conflict', 'A user with this email already exists', [{ field: 'email', message: 'already in use' }]);
    }
    const at = tick();
    const row: UserRow = { ...u, email_verified: false, created_at: at, updated_at: at };
    this.rows.set(u.id, row);
    return { ...row };
  }

  /** A stored user, for a test's setup. */
  add(u: Partial<UserRow> & { id: string; email: string }, passwordHash?: string): UserRow {
    const at = tick();
    const row = { environment: 'live', name: 'U', roles: [], metadata: '{}', email_verified: false, created_at: at, updated_at: at, ...u, password_hash: passwordHash ?? null };
    this.rows.set(u.id, row);
    return row;
  }

  async get(_db: Db, environment: string, id: string): Promise<UserRow | undefined> {
    const row = this.rows.get(id);
    return row && row.environment === environment ? { ...row } : undefined;
  }

  async update(_db: Db, environment: string, id: string, changes: { name?: string; metadata?: string; roles?: string[] }): Promise<UserRow | undefined> {
    const row = this.rows.get(id);
    if (!row || row.environment !== environment) return undefined;
    if (changes.name !== undefined) row.name = changes.name;
    if (changes.metadata !== undefined) row.metadata = changes.metadata;
    if (changes.roles !== undefined) row.roles = [...changes.roles];
    row.updated_at = tick();
    return { ...row };
  }

  async delete(_db: Db, environment: string, id: string): Promise<boolean> {
    const row = this.rows.get(id);
    return !!row && row.environment === environment && this.rows.delete(id);
  }

  async list(_db: Db, environment: string, limit: number, afterId?: string, emailContains?: string): Promise<UserRow[]> {
    const match = (r: UserRow) => !emailContains || r.email.toLowerCase().includes(emailContains.toLowerCase());
    return keyset([...this.rows.values()].filter((r) => r.environment === environment && match(r)), limit, afterId);
  }
}

/** apiKeysRepository in memory: test callers see only test keys; live callers every key. */
export class FakeApiKeys implements ApiKeysRepository {
  readonly rows = new Map<string, ApiKeyRow>();
  /** Ids whose use was recorded (touch). */
  readonly touched: string[] = [];

  private visible(callerEnvironment: string, row: ApiKeyRow | undefined): row is ApiKeyRow {
    return !!row && (callerEnvironment !== 'test' || row.environment === 'test');
  }

  async insert(
    _db: Db,
    k: { id: string; environment: string; type: string; name: string; plan: string; hash: Buffer; prefix: string; last4: string; rateLimit?: number | null; expiresAt?: Date | null },
  ): Promise<ApiKeyRow> {
    const row: ApiKeyRow = {
      id: k.id,
      environment: k.environment,
      type: k.type as ApiKeyRow['type'],
      name: k.name,
      plan: k.plan,
      rate_limit: k.rateLimit ?? null,
      key_hash: k.hash,
      prefix: k.prefix,
      last4: k.last4,
      created_at: tick(),
      last_used_at: null,
      expires_at: k.expiresAt ?? null,
      revoked_at: null,
      previous_key_hash: null,
      previous_expires_at: null,
    };
    this.rows.set(row.id, row);
    return { ...row };
  }

  async findByHash(_db: Db, hash: Buffer): Promise<ApiKeyRow | undefined> {
    const now = Date.now();
    const rows = [...this.rows.values()];
    const row =
      rows.find((r) => r.key_hash.equals(hash)) ??
      rows.find((r) => r.previous_key_hash?.equals(hash) && r.previous_expires_at !== null && r.previous_expires_at.getTime() > now);
    return row && { ...row };
  }

  async get(_db: Db, callerEnvironment: string, id: string): Promise<ApiKeyRow | undefined> {
    const row = this.rows.get(id);
    return this.visible(callerEnvironment, row) ? { ...row } : undefined;
  }

  async list(_db: Db, callerEnvironment: string, limit: number, afterId?: string): Promise<ApiKeyRow[]> {
    return keyset([...this.rows.values()].filter((r) => this.visible(callerEnvironment, r)), limit, afterId);
  }

  async revoke(_db: Db, callerEnvironment: string, id: string): Promise<ApiKeyRow | undefined> {
    const row = this.rows.get(id);
    if (!this.visible(callerEnvironment, row)) return undefined;
    row.revoked_at ??= new Date();
    row.previous_key_hash = null;
    row.previous_expires_at = null;
    return { ...row };
  }

  async rotate(_db: Db, id: string, hash: Buffer, last4: string, previousUntil: Date | null): Promise<ApiKeyRow> {
    const row = this.rows.get(id)!;
    row.previous_key_hash = previousUntil === null ? null : row.key_hash;
    row.previous_expires_at = previousUntil;
    row.key_hash = hash;
    row.last4 = last4;
    return { ...row };
  }

  async touch(_db: Db, id: string): Promise<void> {
    this.touched.push(id);
  }
}

/** An AuthEventsService.authFailed that keeps what it is told. */
export function fakeAuthFailures(): Pick<AuthEventsService, 'authFailed'> & { refused: { credential: RefusedCredential; prefix: string; reason: string }[] } {
  const refused: { credential: RefusedCredential; prefix: string; reason: string }[] = [];
  return { refused, authFailed: async (_call, credential, prefix, reason) => void refused.push({ credential, prefix, reason }) };
}

/** A logger that keeps its warnings. */
export function fakeLogger(): { warn: (obj: object, msg: string) => void; warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, warn: (_obj, msg) => void warnings.push(msg) };
}

/** sessionsRepository in memory: active = not revoked and not expired. */
export class FakeSessions implements SessionsRepository {
  readonly rows = new Map<string, SessionRow>();

  private active(r: SessionRow): boolean {
    return r.revoked_at === null && r.expires_at.getTime() > Date.now();
  }

  async insert(
    _db: Db,
    s: { id: string; environment: string; userId: string; hash: Buffer; metadata: string; expiresInSeconds: number; auth?: SessionAuthentication },
  ): Promise<SessionRow> {
    const created = new Date();
    const row: SessionRow = {
      id: s.id,
      environment: s.environment,
      user_id: s.userId,
      token_hash: s.hash,
      metadata: s.metadata,
      created_at: created,
      expires_at: new Date(created.getTime() + s.expiresInSeconds * 1000),
      revoked_at: null,
      amr: s.auth?.amr ?? [],
      acr: s.auth?.acr ?? '',
      mfa_at: s.auth?.mfa ? created : null,
    };
    this.rows.set(row.id, row);
    return { ...row };
  }

  async findActiveByHash(_db: Db, environment: string | null, hash: Buffer): Promise<SessionRow | undefined> {
    const row = [...this.rows.values()].find((r) => r.token_hash.equals(hash) && (environment === null || r.environment === environment) && this.active(r));
    return row && { ...row };
  }

  async revokeByHash(db: Db, environment: string, hash: Buffer): Promise<SessionRow | undefined> {
    const found = await this.findActiveByHash(db, environment, hash);
    if (!found) return undefined;
    const row = this.rows.get(found.id)!;
    row.revoked_at = new Date();
    return { ...row };
  }

  async listActive(_db: Db, environment: string, userId: string): Promise<SessionRow[]> {
    return keyset([...this.rows.values()].filter((r) => r.user_id === userId && r.environment === environment && this.active(r)), 999);
  }

  async revokeAllOfUser(db: Db, environment: string, userId: string, sessionId?: string): Promise<SessionRow[]> {
    const rows = (await this.listActive(db, environment, userId)).filter((r) => sessionId === undefined || r.id === sessionId);
    for (const r of rows) this.rows.get(r.id)!.revoked_at = new Date();
    return rows.map((r) => ({ ...this.rows.get(r.id)! }));
  }

  async lockActive(_db: Db, environment: string, userId: string, id: string): Promise<SessionRow | undefined> {
    const row = this.rows.get(id);
    return row && row.environment === environment && row.user_id === userId && this.active(row) ? { ...row } : undefined;
  }

  async stepUp(_db: Db, environment: string, userId: string, id: string, amr: string[], acr: string): Promise<SessionRow | undefined> {
    const row = this.rows.get(id);
    if (!row || row.environment !== environment || row.user_id !== userId || !this.active(row)) return undefined;
    Object.assign(row, { amr, acr, mfa_at: new Date() });
    return { ...row };
  }
}

/** samlSessionsRepository.subjectOf over the subjects a test gives. */
export function fakeSamlSubjects(subjects: Record<string, NonNullable<SamlSubject>> = {}): SessionsDeps['samlSessions'] & { subjects: Record<string, NonNullable<SamlSubject>> } {
  return { subjects, subjectOf: async (_db, sessionId) => subjects[sessionId] };
}

/**
 * passwordsRepository in memory, over the users of a FakeUsers (their password_hash): failures are counted
 * without a clock (every recorded one is in the window, which a test ends with clearFailures or `failed.length = 0`).
 */
export class FakePasswords implements PasswordsRepository {
  readonly failed: { environment: string; email: string; ip: string }[] = [];
  readonly resetTokens = new Map<string, ResetTokenRow & { hash: Buffer; created_at: Date }>();

  constructor(private readonly users: FakeUsers) {}

  async setHash(_db: Db, environment: string, userId: string, hash: string): Promise<boolean> {
    const row = this.users.rows.get(userId);
    if (!row || row.environment !== environment) return false;
    row.password_hash = hash;
    row.updated_at = tick();
    return true;
  }

  async rehash(_db: Db, environment: string, userId: string, previous: string, hash: string): Promise<boolean> {
    const row = this.users.rows.get(userId);
    if (!row || row.environment !== environment || row.password_hash !== previous) return false;
    row.password_hash = hash;
    return true;
  }

  async findByEmail(_db: Db, environment: string, email: string) {
    const row = [...this.users.rows.values()].find((r) => r.environment === environment && r.email.toLowerCase() === email.toLowerCase());
    return row && { id: row.id, email: row.email, password_hash: row.password_hash ?? null };
  }

  async failures(_db: Db, environment: string, email: string, ip: string) {
    const account = this.failed.filter((f) => f.environment === environment && f.email.toLowerCase() === email.toLowerCase()).length;
    const byIp = this.failed.filter((f) => f.ip === ip).length;
    return { account, account_wait: account ? 900 : null, by_ip: byIp, ip_wait: byIp ? 900 : null };
  }

  async recordFailure(_db: Db, environment: string, email: string, ip: string): Promise<void> {
    this.failed.push({ environment, email: email.slice(0, 320), ip });
  }

  async clearFailures(_db: Db, environment: string, email: string): Promise<void> {
    for (let i = this.failed.length - 1; i >= 0; i--) {
      if (this.failed[i]!.environment === environment && this.failed[i]!.email.toLowerCase() === email.toLowerCase()) this.failed.splice(i, 1);
    }
  }

  async insertResetToken(_db: Db, t: { id: string; environment: string; userId: string; hash: Buffer }): Promise<void> {
    this.resetTokens.set(t.id, { id: t.id, environment: t.environment, user_id: t.userId, hash: t.hash, expires_at: new Date(Date.now() + 3600_000), used_at: null, created_at: new Date() });
  }

  async countRecentResetTokens(_db: Db, environment: string, userId: string, seconds: number): Promise<number> {
    const since = Date.now() - seconds * 1000;
    return [...this.resetTokens.values()].filter((t) => t.environment === environment && t.user_id === userId && t.created_at.getTime() > since).length;
  }

  async lockResetToken(_db: Db, environment: string, hash: Buffer): Promise<ResetTokenRow | undefined> {
    const row = [...this.resetTokens.values()].find((t) => t.hash.equals(hash) && t.environment === environment);
    if (!row) return undefined;
    const { hash: _hash, ...token } = row;
    return token;
  }

  async useResetToken(_db: Db, id: string): Promise<void> {
    this.resetTokens.get(id)!.used_at = new Date();
  }
}

/**
 * A cheap hasher with the scrypt hasher's contract: `v2$` hashes are current, `v1$` ones older (verified, and
 * to be rehashed). It counts its work: a login must verify once whether or not the account exists.
 */
export function fakeHasher(): PasswordHasher & { hashed: number; verified: string[] } {
  const hasher = {
    hashed: 0,
    verified: [] as string[],
    async hash(password: string) {
      hasher.hashed++;
      return `v2$${password}`;
    },
    async verify(password: string, stored: string) {
      hasher.verified.push(stored);
      return stored === `v2$${password}` || stored === `v1$${password}`;
    },
    needsRehash: (stored: string) => stored.startsWith('v1$'),
    dummy: async () => 'v2$dummy-password-nobody-knows',
  };
  return hasher;
}

/** oauthClientsRepository in memory; a client's live grants are what a test says (`activeGrants`). */
export class FakeOAuthClients implements OAuthClientsRepository {
  readonly rows = new Map<string, OAuthClientRow>();
  readonly activeGrants = new Map<string, number>();

  async insert(
    _db: Db,
    c: { id: string; environment: string; name: string; type: string; secretHash: Buffer | null; redirectUris: string[]; scopes: string[]; firstParty: boolean },
  ): Promise<OAuthClientRow> {
    const at = tick();
    const row: OAuthClientRow = {
      id: c.id,
      environment: c.environment,
      name: c.name,
      type: c.type as OAuthClientRow['type'],
      secret_hash: c.secretHash,
      redirect_uris: c.redirectUris,
      scopes: c.scopes,
      first_party: c.firstParty,
      created_at: at,
      updated_at: at,
    };
    this.rows.set(row.id, row);
    return { ...row };
  }

  async get(_db: Db, environment: string | null, id: string): Promise<OAuthClientRow | undefined> {
    const row = this.rows.get(id);
    return row && (environment === null || row.environment === environment) ? { ...row } : undefined;
  }

  async list(_db: Db, environment: string, limit: number, after: string | undefined): Promise<OAuthClientRow[]> {
    return keyset([...this.rows.values()].filter((r) => r.environment === environment), limit, after);
  }

  async update(_db: Db, environment: string, id: string, u: { name?: string; redirectUris?: string[]; scopes?: string[]; firstParty?: boolean }) {
    const row = this.rows.get(id);
    if (!row || row.environment !== environment) return undefined;
    if (u.name !== undefined) row.name = u.name;
    if (u.redirectUris !== undefined) row.redirect_uris = u.redirectUris;
    if (u.scopes !== undefined) row.scopes = u.scopes;
    if (u.firstParty !== undefined) row.first_party = u.firstParty;
    row.updated_at = tick();
    return { ...row };
  }

  async delete(_db: Db, environment: string, id: string): Promise<{ deleted: boolean; activeGrants: number }> {
    const row = this.rows.get(id);
    const deleted = !!row && row.environment === environment && this.rows.delete(id);
    return { deleted, activeGrants: this.activeGrants.get(id) ?? 0 };
  }
}

/** ssoConnectionsRepository in memory: a domain belongs to one connection of an environment. */
export class FakeSsoConnections implements SsoConnectionsRepository {
  readonly rows = new Map<string, SsoConnectionRow>();

  async insert(_db: Db, id: string, environment: string, f: SsoConnectionFields): Promise<SsoConnectionRow> {
    const at = tick();
    const row: SsoConnectionRow = {
      id,
      environment,
      name: f.name,
      idp_metadata_xml: f.idpMetadataXml,
      idp_entity_id: f.idpEntityId,
      idp_sso_url: f.idpSsoUrl,
      idp_certificates: f.idpCertificates,
      domains: f.domains,
      default_roles: f.defaultRoles,
      attribute_mapping: f.attributeMapping,
      allow_idp_initiated: f.allowIdpInitiated,
      initiate_login_url: f.initiateLoginUrl,
      allow_sha1_signatures: f.allowSha1Signatures,
      require_mfa: f.requireMfa,
      created_at: at,
      updated_at: at,
    };
    this.rows.set(id, row);
    return { ...row };
  }

  async get(_db: Db, environment: string | null, id: string): Promise<SsoConnectionRow | undefined> {
    const row = this.rows.get(id);
    return row && (environment === null || row.environment === environment) ? { ...row } : undefined;
  }

  async findByDomain(_db: Db, environment: string, domain: string): Promise<SsoConnectionRow | undefined> {
    const row = [...this.rows.values()].find((r) => r.environment === environment && r.domains.includes(domain));
    return row && { ...row };
  }

  async list(_db: Db, environment: string, limit: number, after: string | undefined): Promise<SsoConnectionRow[]> {
    return keyset([...this.rows.values()].filter((r) => r.environment === environment), limit, after);
  }

  async domainOwner(_db: Db, environment: string, domains: string[], exceptId: string): Promise<{ id: string; domain: string } | undefined> {
    for (const r of this.rows.values()) {
      if (r.environment !== environment || r.id === exceptId) continue;
      const domain = r.domains.find((d) => domains.includes(d));
      if (domain) return { id: r.id, domain };
    }
    return undefined;
  }

  async update(_db: Db, environment: string, id: string, u: Partial<SsoConnectionFields>): Promise<SsoConnectionRow | undefined> {
    const row = this.rows.get(id);
    if (!row || row.environment !== environment) return undefined;
    const columns: [keyof SsoConnectionFields, keyof SsoConnectionRow][] = [
      ['name', 'name'],
      ['idpMetadataXml', 'idp_metadata_xml'],
      ['idpEntityId', 'idp_entity_id'],
      ['idpSsoUrl', 'idp_sso_url'],
      ['idpCertificates', 'idp_certificates'],
      ['domains', 'domains'],
      ['defaultRoles', 'default_roles'],
      ['attributeMapping', 'attribute_mapping'],
      ['allowIdpInitiated', 'allow_idp_initiated'],
      ['initiateLoginUrl', 'initiate_login_url'],
      ['allowSha1Signatures', 'allow_sha1_signatures'],
      ['requireMfa', 'require_mfa'],
    ];
    for (const [field, column] of columns) if (u[field] !== undefined) Object.assign(row, { [column]: u[field] });
    row.updated_at = tick();
    return { ...row };
  }

  async delete(_db: Db, environment: string, id: string): Promise<boolean> {
    const row = this.rows.get(id);
    return !!row && row.environment === environment && this.rows.delete(id);
  }
}
