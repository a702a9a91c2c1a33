import { AppError, callerOf, eventOfCall, newId, type CallContext, type PoolClient } from '@secsvc/shared';
import { generateSessionToken, hashSessionToken, looksLikeSessionToken, SESSION_MAX_SECONDS, SESSION_MIN_SECONDS } from '../domain/sessions';
import { parseMetadataJson } from '../domain/users';
import type { SessionAuthentication, sessionsRepository, SessionRow } from '../repositories/sessions';
import type { samlSessionsRepository } from '../repositories/sso';
import type { UserRow } from '../repositories/users';
import type { AuthEventsService } from './auth-events';
import type { Database, Db, Outbox } from './ports';
import type { UsersRepository } from './users';

export type SessionsRepository = Pick<typeof sessionsRepository, 'insert' | 'findActiveByHash' | 'revokeByHash' | 'listActive' | 'revokeAllOfUser' | 'lockActive' | 'stepUp'>;

export interface SessionsDeps {
  db: Database;
  sessions: SessionsRepository;
  users: Pick<UsersRepository, 'get'>;
  samlSessions: Pick<typeof samlSessionsRepository, 'subjectOf'>;
  outbox: Outbox;
  /** Session tokens are stored and looked up as HMACs under it. */
  serverSecret: string;
  authEvents: Pick<AuthEventsService, 'authFailed'>;
}

/** A session just opened, with its token (shown once). */
export interface OpenedSession {
  row: SessionRow;
  token: string;
}

/** The SAML subject a session was opened for (single logout at the IdP), when a SAML login opened it. */
export type SamlSubject = Awaited<ReturnType<typeof samlSessionsRepository.subjectOf>>;

type Caller = ReturnType<typeof callerOf>;

/**
 * How the application authenticated a call that acted on a user's session: `authMethod` and the key (or the
 * user) that made it.
 */
function madeBy(caller: Caller): Record<string, unknown> {
  if (caller.actor.type === 'api_key') return { authMethod: caller.authMethod, apiKeyId: caller.actor.id };
  return { authMethod: caller.authMethod, ...(caller.actor.id && { callerUserId: caller.actor.id }) };
}

/**
 * The sessions of users: opened by the application (or by a login), checked, listed and ended. Tokens are
 * `sst_` opaque tokens stored as HMACs; every change has its event in the same transaction.
 */
export class SessionsService {
  constructor(private readonly deps: SessionsDeps) {}

  /** An event about a session; the actor is the caller unless given (the session's user). */
  private event(
    tx: PoolClient,
    call: CallContext,
    type: string,
    row: SessionRow,
    options: { actor?: { id: string; email?: string; type: string }; metadata?: Record<string, unknown> } = {},
  ) {
    return this.deps.outbox.append(
      tx,
      eventOfCall(call, {
        actor: options.actor,
        environment: row.environment,
        type,
        target: { id: row.id, type: 'session' },
        result: 'success',
        metadata: { userId: row.user_id, ...(options.metadata ?? { authMethod: callerOf(call).authMethod }) },
      }),
    );
  }

  private hash(token: string): Buffer {
    return hashSessionToken(token, this.deps.serverSecret);
  }

  /** Inserts a session in the caller's transaction (a login's) and returns it with its token and how its user authenticated. */
  async open(tx: Db, environment: string, userId: string, expiresInSeconds: number, metadata: Record<string, unknown>, auth?: SessionAuthentication): Promise<OpenedSession> {
    const token = generateSessionToken();
    const row = await this.deps.sessions.insert(tx, {
      id: newId('ses'),
      environment,
      userId,
      hash: this.hash(token),
      metadata: JSON.stringify(metadata),
      expiresInSeconds,
      auth,
    });
    return { row, token };
  }

  /** The application logs its user in: a session of 1 minute to 30 days, and user.login (the target is the session). */
  async create(environment: string, input: { userId: string; expiresInSeconds: number; metadataJson: string }, call: CallContext): Promise<OpenedSession> {
    const seconds = input.expiresInSeconds;
    if (!Number.isInteger(seconds) || seconds < SESSION_MIN_SECONDS || seconds > SESSION_MAX_SECONDS) {
      throw AppError.field('expiresIn', 'must be from 1m to 30d');
    }
    const metadata = parseMetadataJson(input.metadataJson);
    return this.deps.db.transaction(async (tx) => {
      const user = await this.deps.users.get(tx, environment, input.userId);
      if (!user) throw new AppError('not_found', 'User not found', [{ field: 'userId', message: 'no such user' }]);
      const opened = await this.open(tx, environment, input.userId, seconds, metadata);
      await this.event(tx, call, 'user.login', opened.row, { actor: { id: user.id, email: user.email, type: 'user' }, metadata: madeBy(callerOf(call)) });
      return opened;
    });
  }

  /** The active session of a token in `environment`, with its user; undefined for anything else. */
  async verify(environment: string, token: string): Promise<{ session: SessionRow; user: UserRow } | undefined> {
    if (!looksLikeSessionToken(token)) return undefined;
    const { db, sessions, users } = this.deps;
    const session = await sessions.findActiveByHash(db.pool, environment, this.hash(token));
    if (!session) return undefined;
    const user = await users.get(db.pool, environment, session.user_id);
    return user && { session, user };
  }

  /**
   * Ends the session of a token. Its holder (the session's user, with that token or another of theirs) or the
   * application's key on the user's behalf: user.logout, actor the user (the key in metadata). Another user
   * (allowed by policy): session.revoked, actor that user. Unknown or ended tokens: revoked=false.
   */
  async revoke(environment: string, token: string, call: CallContext): Promise<{ revoked: boolean; saml: SamlSubject }> {
    if (!looksLikeSessionToken(token)) return { revoked: false, saml: undefined };
    const { db, sessions, samlSessions } = this.deps;
    return db.transaction(async (tx) => {
      const row = await sessions.revokeByHash(tx, environment, this.hash(token));
      if (!row) return { revoked: false, saml: undefined };
      const caller = callerOf(call);
      const byAnotherUser = caller.actor.type === 'user' && caller.actor.id !== row.user_id;
      if (byAnotherUser) await this.event(tx, call, 'session.revoked', row);
      else await this.event(tx, call, 'user.logout', row, { actor: { id: row.user_id, type: 'user' }, metadata: madeBy(caller) });
      return { revoked: true, saml: await samlSessions.subjectOf(tx, row.id) };
    });
  }

  private async requireUser(db: Db, environment: string, userId: string): Promise<void> {
    if (!(await this.deps.users.get(db, environment, userId))) throw AppError.notFound('User');
  }

  /** The user's active sessions, newest first. */
  async listOfUser(environment: string, userId: string): Promise<SessionRow[]> {
    const { db, sessions } = this.deps;
    await this.requireUser(db.pool, environment, userId);
    return sessions.listActive(db.pool, environment, userId);
  }

  /** Ends every active session of the user, or only `sessionId` (not found unless it is one of them). */
  async revokeAllOfUser(environment: string, userId: string, call: CallContext, sessionId?: string): Promise<number> {
    return this.deps.db.transaction(async (tx) => {
      await this.requireUser(tx, environment, userId);
      const rows = await this.deps.sessions.revokeAllOfUser(tx, environment, userId, sessionId);
      if (sessionId !== undefined && rows.length === 0) throw AppError.notFound('Session');
      for (const row of rows) await this.event(tx, call, 'session.revoked', row);
      return rows.length;
    });
  }

  /** The gateway's authentication of a session token (any environment): the session and its user, or 401 with auth.failed. */
  async authenticate(token: string, call: CallContext): Promise<{ session: SessionRow; user: UserRow }> {
    const refuse = async (reason: string) => {
      await this.deps.authEvents.authFailed(call, 'session', 'sst_', reason);
      return new AppError('unauthorized', 'Invalid or expired session token');
    };
    if (!looksLikeSessionToken(token)) throw await refuse('malformed');
    const { db, sessions, users } = this.deps;
    const session = await sessions.findActiveByHash(db.pool, null, this.hash(token));
    if (!session) throw await refuse('unknown_or_ended');
    const user = await users.get(db.pool, session.environment, session.user_id);
    if (!user) throw await refuse('unknown_or_ended');
    return { session, user };
  }
}
