import type { identity } from '@secsvc/proto';
import { AppError, newId, withTransaction, type CallContext, type PoolClient } from '@secsvc/shared';
import { callerOf, environmentOf, toUserMessage, type IdentityContext } from '../context';
import {
  generateSessionToken,
  hashSessionToken,
  looksLikeSessionToken,
  SESSION_MAX_SECONDS,
  SESSION_MIN_SECONDS,
} from '../domain/sessions';
import { parseMetadataJson } from '../domain/users';
import { appendEvent, recordAuthFailure } from '../repositories/outbox';
import { sessionsRepository, type SessionRow } from '../repositories/sessions';
import { samlSessionsRepository } from '../repositories/sso';
import { usersRepository } from '../repositories/users';

// The session RPCs live together: they share the token hashing, the row mapping and the event shape.

export function toSessionMessage(row: SessionRow): identity.Session {
  return {
    id: row.id,
    environment: row.environment,
    userId: row.user_id,
    metadataJson: row.metadata,
    createdAt: row.created_at.toISOString(),
    expiresAt: row.expires_at.toISOString(),
    revokedAt: row.revoked_at?.toISOString(),
  };
}

/**
 * How the application authenticated a call that acted on a user's session: `authMethod` and the key (or the
 * user) that made it.
 */
function madeBy(caller: ReturnType<typeof callerOf>): Record<string, unknown> {
  if (caller.actor.type === 'api_key') return { authMethod: caller.authMethod, apiKeyId: caller.actor.id };
  return { authMethod: caller.authMethod, ...(caller.actor.id && { callerUserId: caller.actor.id }) };
}

/** An event about a session; the actor is the caller unless given (the session's user). */
function sessionEvent(
  client: PoolClient,
  call: CallContext,
  type: string,
  row: SessionRow,
  options: { actor?: { id: string; email?: string; type: string }; metadata?: Record<string, unknown> } = {},
) {
  const caller = callerOf(call);
  return appendEvent(client, {
    ...caller,
    actor: options.actor ?? caller.actor,
    environment: row.environment,
    type,
    target: { id: row.id, type: 'session' },
    result: 'success',
    traceId: call.requestId,
    metadata: { userId: row.user_id, ...(options.metadata ?? { authMethod: caller.authMethod }) },
  });
}

export const createSession =
  (ctx: IdentityContext) =>
  async (req: identity.CreateSessionRequest, call: CallContext): Promise<identity.CreatedSession> => {
    const environment = environmentOf(req.environment);
    const seconds = req.expiresInSeconds;
    if (!Number.isInteger(seconds) || seconds < SESSION_MIN_SECONDS || seconds > SESSION_MAX_SECONDS) {
      throw AppError.field('expiresIn', 'must be from 1m to 30d');
    }
    const metadata = parseMetadataJson(req.metadataJson);
    const { row, token } = await withTransaction(ctx.pool, async (client) => {
      const user = await usersRepository.get(client, environment, req.userId);
      if (!user) throw new AppError('not_found', 'User not found', [{ field: 'userId', message: 'no such user' }]);
      const opened = await openSession(client, ctx, environment, req.userId, seconds, metadata);
      // The application logs its user in (SPEC: user.login, the target is the session).
      await sessionEvent(client, call, 'user.login', opened.row, {
        actor: { id: user.id, email: user.email, type: 'user' },
        metadata: madeBy(callerOf(call)),
      });
      return opened;
    });
    return { session: toSessionMessage(row), token };
  };

/** Inserts a session (in the caller's transaction) and returns it with its token. */
export async function openSession(
  client: PoolClient,
  ctx: IdentityContext,
  environment: string,
  userId: string,
  expiresInSeconds: number,
  metadata: Record<string, unknown>,
): Promise<{ row: SessionRow; token: string }> {
  const token = generateSessionToken();
  const row = await sessionsRepository.insert(client, {
    id: newId('ses'),
    environment,
    userId,
    hash: hashSessionToken(token, ctx.config.SERVER_SECRET),
    metadata: JSON.stringify(metadata),
    expiresInSeconds,
  });
  return { row, token };
}

export const verifySession =
  (ctx: IdentityContext) =>
  async (req: identity.VerifySessionRequest): Promise<identity.VerifySessionResponse> => {
    const environment = environmentOf(req.environment);
    if (!looksLikeSessionToken(req.token)) return { valid: false };
    const row = await sessionsRepository.findActiveByHash(ctx.pool, environment, hashSessionToken(req.token, ctx.config.SERVER_SECRET));
    if (!row) return { valid: false };
    const user = await usersRepository.get(ctx.pool, environment, row.user_id);
    if (!user) return { valid: false };
    return { valid: true, user: toUserMessage(user), session: toSessionMessage(row) };
  };

/**
 * Ends the session of a token. Its holder (the session's user, with that token or another of theirs) or the
 * application's key on the user's behalf: user.logout, actor the user (the key in metadata). Another user
 * (allowed by policy): session.revoked, actor that user. Unknown or ended tokens: revoked=false.
 */
export const revokeSession =
  (ctx: IdentityContext) =>
  async (req: identity.RevokeSessionRequest, call: CallContext): Promise<identity.RevokeSessionResponse> => {
    const environment = environmentOf(req.environment);
    if (!looksLikeSessionToken(req.token)) return { revoked: false, saml: undefined };
    return withTransaction(ctx.pool, async (client) => {
      const row = await sessionsRepository.revokeByHash(client, environment, hashSessionToken(req.token, ctx.config.SERVER_SECRET));
      if (!row) return { revoked: false, saml: undefined };
      const caller = callerOf(call);
      const byAnotherUser = caller.actor.type === 'user' && caller.actor.id !== row.user_id;
      if (byAnotherUser) await sessionEvent(client, call, 'session.revoked', row);
      else await sessionEvent(client, call, 'user.logout', row, { actor: { id: row.user_id, type: 'user' }, metadata: madeBy(caller) });
      return { revoked: true, saml: await samlSessionsRepository.subjectOf(client, row.id) };
    });
  };

async function requireUser(client: PoolClient | IdentityContext['pool'], environment: string, userId: string) {
  if (!(await usersRepository.get(client, environment, userId))) throw AppError.notFound('User');
}

export const listUserSessions =
  (ctx: IdentityContext) =>
  async (req: identity.ListUserSessionsRequest): Promise<identity.ListUserSessionsResponse> => {
    const environment = environmentOf(req.environment);
    await requireUser(ctx.pool, environment, req.userId);
    const rows = await sessionsRepository.listActive(ctx.pool, environment, req.userId);
    return { sessions: rows.map(toSessionMessage) };
  };

export const revokeUserSessions =
  (ctx: IdentityContext) =>
  async (req: identity.RevokeUserSessionsRequest, call: CallContext): Promise<identity.RevokeUserSessionsResponse> => {
    const environment = environmentOf(req.environment);
    return withTransaction(ctx.pool, async (client) => {
      await requireUser(client, environment, req.userId);
      const rows = await sessionsRepository.revokeAllOfUser(client, environment, req.userId);
      for (const row of rows) await sessionEvent(client, call, 'session.revoked', row);
      return { revoked: rows.length };
    });
  };

/** The gateway's authentication of a session token: the session's user, environment and roles. */
export const authenticateSession =
  (ctx: IdentityContext) =>
  async (req: identity.AuthenticateSessionRequest, call: CallContext): Promise<identity.SessionPrincipal> => {
    const refuse = async (reason: string) => {
      await recordAuthFailure(ctx.pool, call, 'session', 'sst_', reason, ctx.logger);
      return new AppError('unauthorized', 'Invalid or expired session token');
    };
    if (!looksLikeSessionToken(req.token)) throw await refuse('malformed');
    const row = await sessionsRepository.findActiveByHash(ctx.pool, null, hashSessionToken(req.token, ctx.config.SERVER_SECRET));
    if (!row) throw await refuse('unknown_or_ended');
    const user = await usersRepository.get(ctx.pool, row.environment, row.user_id);
    if (!user) throw await refuse('unknown_or_ended');
    return {
      sessionId: row.id,
      userId: user.id,
      environment: row.environment,
      roles: user.roles,
      expiresAt: row.expires_at.toISOString(),
      email: user.email,
    };
  };
