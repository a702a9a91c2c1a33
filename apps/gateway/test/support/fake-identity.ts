import type { identity } from '@secsvc/proto';
import { AppError, newId, type CallOptions, type PromiseClient } from '@secsvc/shared';

/** The identity port as the gateway sees it. */
export type IdentityPort = PromiseClient<identity.IdentityServiceClient>;
export type IdentityMethod = keyof IdentityPort;

/** The one API key the fake accepts, and the principal it resolves to. */
export const VALID_KEY = `svc_sk_${'a'.repeat(40)}`;
export const KEY_ID = newId('key');
export const PRINCIPAL: identity.ApiKeyPrincipal = { keyId: KEY_ID, keyType: 'secret', environment: 'live', plan: 'enterprise', name: 'test admin key' };
/** A public key the fake accepts (for the 403 rules of public keys). */
export const PUBLIC_KEY = `svc_pk_${'p'.repeat(40)}`;

export interface RecordedCall<M extends IdentityMethod = IdentityMethod> {
  method: M;
  request: Parameters<IdentityPort[M]>[0];
  options: Partial<CallOptions> | undefined;
}

const CURSOR = /^cur_(user_[0-9a-z]{26})$/;

/**
 * In-memory identity service: users in a Map, errors thrown as AppError like the real service
 * (not_found, conflict with an email field detail, invalid_request for a bad cursor).
 */
export class FakeIdentity implements Partial<IdentityPort> {
  readonly users = new Map<string, identity.User>();
  /** More API keys the fake accepts (besides VALID_KEY and PUBLIC_KEY), with their principals. */
  readonly apiKeys = new Map<string, identity.ApiKeyPrincipal>();
  /** Session tokens the fake accepts, with their principals. */
  readonly sessions = new Map<string, identity.SessionPrincipal>();
  readonly calls: RecordedCall[] = [];
  private readonly failures = new Map<IdentityMethod, unknown>();

  /** The next calls of `method` throw `err` (until reset). */
  failWith(method: IdentityMethod, err: unknown): void {
    this.failures.set(method, err);
  }

  reset(): void {
    this.users.clear();
    this.apiKeys.clear();
    this.sessions.clear();
    this.calls.length = 0;
    this.failures.clear();
  }

  callsOf<M extends IdentityMethod>(method: M): RecordedCall<M>[] {
    return this.calls.filter((c): c is RecordedCall<M> => c.method === method);
  }

  private enter<M extends IdentityMethod>(method: M, request: Parameters<IdentityPort[M]>[0], options?: Partial<CallOptions>): void {
    this.calls.push({ method, request, options } as RecordedCall);
    if (this.failures.has(method)) throw this.failures.get(method);
  }

  private find(environment: string, id: string): identity.User {
    const user = this.users.get(id);
    if (!user || user.environment !== environment) throw AppError.notFound('User');
    return user;
  }

  async authenticateApiKey(req: identity.AuthenticateApiKeyRequest, opts?: Partial<CallOptions>): Promise<identity.ApiKeyPrincipal> {
    this.enter('authenticateApiKey', req, opts);
    if (req.key === PUBLIC_KEY) return { ...PRINCIPAL, keyId: 'key_public', keyType: 'public' };
    const extra = this.apiKeys.get(req.key);
    if (extra) return { ...extra };
    if (req.key !== VALID_KEY) throw new AppError('unauthorized', 'Invalid API key');
    return { ...PRINCIPAL };
  }

  async authenticateSession(req: identity.AuthenticateSessionRequest, opts?: Partial<CallOptions>): Promise<identity.SessionPrincipal> {
    this.enter('authenticateSession', req, opts);
    const session = this.sessions.get(req.token);
    if (!session) throw new AppError('unauthorized', 'Invalid session token');
    return { ...session };
  }

  async reportRateLimitExceeded(
    req: identity.ReportRateLimitExceededRequest,
    opts?: Partial<CallOptions>,
  ): Promise<identity.ReportRateLimitExceededResponse> {
    this.enter('reportRateLimitExceeded', req, opts);
    return {};
  }

  async createUser(req: identity.CreateUserRequest, opts?: Partial<CallOptions>): Promise<identity.User> {
    this.enter('createUser', req, opts);
    const email = req.email.toLowerCase();
    for (const u of this.users.values()) {
      if (u.environment === req.environment && u.email.toLowerCase() === email) {
        throw new AppError('conflict', 'A user with this email already exists', [{ field: 'email', message: 'already in use' }]);
      }
    }
    const now = new Date().toISOString();
    const user: identity.User = {
      id: newId('user'),
      environment: req.environment,
      email: req.email,
      name: req.name,
      emailVerified: false,
      roles: [...req.roles],
      metadataJson: req.metadataJson,
      createdAt: now,
      updatedAt: now,
    };
    this.users.set(user.id, user);
    return { ...user };
  }

  async createApiKey(req: identity.CreateApiKeyRequest, opts?: Partial<CallOptions>): Promise<identity.CreatedApiKey> {
    this.enter('createApiKey', req, opts);
    const key = `svc_sk_${'n'.repeat(49)}`;
    const now = new Date().toISOString();
    return {
      key,
      apiKey: { id: newId('key'), environment: 'live', name: req.name, type: req.type, plan: req.plan, rateLimit: req.rateLimit, prefix: 'svc_sk_', last4: 'nnnn', createdAt: now, expiresAt: req.expiresAt },
    };
  }

  async rotateApiKey(req: identity.RotateApiKeyRequest, opts?: Partial<CallOptions>): Promise<identity.CreatedApiKey> {
    this.enter('rotateApiKey', req, opts);
    const now = new Date().toISOString();
    return { key: `svc_sk_${'r'.repeat(49)}`, apiKey: { id: req.id, environment: 'live', name: 'k', type: 'secret', plan: 'free', prefix: 'svc_sk_', last4: 'rrrr', createdAt: now } };
  }

  async getUser(req: identity.GetUserRequest, opts?: Partial<CallOptions>): Promise<identity.User> {
    this.enter('getUser', req, opts);
    return { ...this.find(req.environment, req.id) };
  }

  async updateUser(req: identity.UpdateUserRequest, opts?: Partial<CallOptions>): Promise<identity.User> {
    this.enter('updateUser', req, opts);
    const user = this.find(req.environment, req.id);
    if (req.name !== undefined) user.name = req.name;
    if (req.metadataJson !== undefined) user.metadataJson = req.metadataJson;
    if (req.roles !== undefined) user.roles = [...req.roles.values];
    user.updatedAt = new Date().toISOString();
    return { ...user };
  }

  async deleteUser(req: identity.DeleteUserRequest, opts?: Partial<CallOptions>): Promise<identity.DeleteUserResponse> {
    this.enter('deleteUser', req, opts);
    this.find(req.environment, req.id);
    this.users.delete(req.id);
    return {};
  }

  /** The admin console's clients, as identity answers them (none when `consoleClients` is cleared). */
  consoleClients: identity.ConsoleClients = { liveClientId: 'cli_console_live', testClientId: 'cli_console_test', redirectUri: 'http://127.0.0.1:8080/console/callback', scope: 'openid offline_access' };

  async getConsoleClients(req: identity.GetConsoleClientsRequest, opts?: Partial<CallOptions>): Promise<identity.ConsoleClients> {
    this.enter('getConsoleClients', req, opts);
    return { ...this.consoleClients };
  }

  async listUsers(req: identity.ListUsersRequest, opts?: Partial<CallOptions>): Promise<identity.ListUsersResponse> {
    this.enter('listUsers', req, opts);
    const match = (u: identity.User) => !req.email || u.email.toLowerCase().includes(req.email.toLowerCase());
    let all = [...this.users.values()].filter((u) => u.environment === req.environment && match(u)).sort((a, b) => (a.id < b.id ? 1 : -1));
    if (req.cursor) {
      const after = CURSOR.exec(req.cursor)?.[1];
      if (!after) throw AppError.field('cursor', 'invalid or expired cursor');
      all = all.filter((u) => u.id < after);
    }
    const page = all.slice(0, req.limit);
    const hasMore = all.length > req.limit;
    return { users: page.map((u) => ({ ...u })), hasMore, nextCursor: hasMore ? `cur_${page[page.length - 1]!.id}` : '' };
  }
}
