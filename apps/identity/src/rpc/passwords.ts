import type { identity } from '@secsvc/proto';
import { AppError, newId, withTransaction, type CallContext, type PoolClient } from '@secsvc/shared';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { callerOf, environmentOf, type IdentityContext } from '../context';
import { checkPasswordRules, dummyHash, hashPassword, verifyPassword } from '../domain/passwords';
import { SESSION_MAX_SECONDS, SESSION_MIN_SECONDS } from '../domain/sessions';
import type { MailComposer } from '../mail/queue';
import { mailRepository } from '../repositories/mail';
import { appendEvent } from '../repositories/outbox';
import { passwordsRepository } from '../repositories/passwords';
import { oauthGrantsRepository } from '../repositories/oauth';
import { sessionsRepository } from '../repositories/sessions';
import { usersRepository } from '../repositories/users';
import { openSession, toSessionMessage } from './sessions';

// Passwords, login and password reset live together: they share hashing, throttling and the event shape.

export const ACCOUNT_FAILURE_LIMIT = 5;
export const IP_FAILURE_LIMIT = 20;
const DEFAULT_SESSION_SECONDS = 24 * 3600;

const resetTokenHash = (token: string, secret: string) => createHmac('sha256', secret).update('password-reset:').update(token).digest();
const checksum = (s: string) => createHash('sha256').update(s).digest('base64url').slice(0, 6);

/** Who asked and in which request: from the call, or as stored with a queued job. */
interface Origin {
  caller: ReturnType<typeof callerOf>;
  traceId: string;
}

const originOf = (call: CallContext): Origin => ({ caller: callerOf(call), traceId: call.requestId });

function event(
  client: PoolClient,
  origin: Origin,
  environment: string,
  type: string,
  result: 'success' | 'failure',
  actor: { id?: string; email?: string; type: string },
  target?: { id: string; type: string },
  metadata: Record<string, unknown> = {},
) {
  return appendEvent(client, { ...origin.caller, actor, environment, type, target, result, traceId: origin.traceId, metadata });
}

export const setPassword =
  (ctx: IdentityContext) =>
  async (req: identity.SetPasswordRequest, call: CallContext): Promise<identity.SetPasswordResponse> => {
    const environment = environmentOf(req.environment);
    const user = await usersRepository.get(ctx.pool, environment, req.userId);
    if (!user) throw AppError.notFound('User');
    checkPasswordRules(req.password, user.email);
    const hash = await hashPassword(req.password);
    await withTransaction(ctx.pool, async (client) => {
      if (!(await passwordsRepository.setHash(client, environment, user.id, hash))) throw AppError.notFound('User');
      await event(client, originOf(call), environment, 'user.password_changed', 'success', callerOf(call).actor, { id: user.id, type: 'user' });
    });
    return {};
  };

export const login =
  (ctx: IdentityContext) =>
  async (req: identity.LoginRequest, call: CallContext): Promise<identity.CreatedSession> => {
    const environment = environmentOf(req.environment);
    const seconds = req.expiresInSeconds || DEFAULT_SESSION_SECONDS;
    if (seconds < SESSION_MIN_SECONDS || seconds > SESSION_MAX_SECONDS) throw AppError.field('expiresIn', 'must be from 1m to 30d');
    const email = req.email.slice(0, 320);
    const ip = req.ip || 'unknown';
    const f = await passwordsRepository.failures(ctx.pool, environment, email, ip);
    if (f.account >= ACCOUNT_FAILURE_LIMIT || f.by_ip >= IP_FAILURE_LIMIT) {
      const wait = Math.max(1, f.account >= ACCOUNT_FAILURE_LIMIT ? (f.account_wait ?? 1) : 0, f.by_ip >= IP_FAILURE_LIMIT ? (f.ip_wait ?? 1) : 0);
      throw new AppError('rate_limited', 'Too many failed logins; try again later', [], wait);
    }
    const user = await passwordsRepository.findByEmail(ctx.pool, environment, email);
    // The same work whether or not the account exists or has a password: no enumeration by timing.
    const ok = await verifyPassword(req.password, user?.password_hash ?? (await dummyHash()));
    const context = { ip: req.ip, userAgent: req.userAgent };
    // On an OAuth login page: authMethod oauth, with the client the user is logging in to.
    const loginMethod = req.oauthClientId ? { authMethod: 'oauth', clientId: req.oauthClientId.slice(0, 64) } : { authMethod: 'password' };
    if (!user || !user.password_hash || !ok) {
      await withTransaction(ctx.pool, async (client) => {
        await passwordsRepository.recordFailure(client, environment, email, ip);
        await appendEvent(client, {
          actor: user ? { id: user.id, email, type: 'user' } : { email, type: 'anonymous' },
          context,
          environment,
          type: 'user.login',
          result: 'failure',
          traceId: call.requestId,
          metadata: { ...loginMethod, mfaUsed: false, reason: 'invalid_credentials' },
        });
      });
      throw new AppError('unauthorized', 'Invalid email or password');
    }
    const { row, token } = await withTransaction(ctx.pool, async (client) => {
      await passwordsRepository.clearFailures(client, environment, email);
      const opened = await openSession(client, ctx, environment, user.id, seconds, { ip: req.ip, userAgent: req.userAgent });
      await appendEvent(client, {
        actor: { id: user.id, email: user.email, type: 'user' },
        context,
        environment,
        type: 'user.login',
        target: { id: opened.row.id, type: 'session' },
        result: 'success',
        traceId: call.requestId,
        metadata: { ...loginMethod, mfaUsed: false },
      });
      return opened;
    });
    return { session: toSessionMessage(row), token };
  };

/** The mail_jobs kind of password reset requests. */
export const PASSWORD_RESET_MAIL = 'password-reset';

/** What a queued password reset request holds: the email tried and who asked (no secret). */
interface ResetRequest extends Origin {
  email: string;
}

/**
 * Queues the request (one row in mail_jobs, the same work whether or not the account exists) and answers: the
 * response says nothing, not even by its timing, about whether the email has an account. The token is made
 * by the mail worker (passwordResetComposer) and goes only into the e-mail. Once this answers, the request
 * survives a crash; when the row cannot be written the call fails like any other.
 */
export const requestPasswordReset =
  (ctx: IdentityContext) =>
  async (req: identity.RequestPasswordResetRequest, call: CallContext): Promise<identity.RequestPasswordResetResponse> => {
    const environment = environmentOf(req.environment);
    const request: ResetRequest = { email: req.email.slice(0, 320), ...originOf(call) };
    await mailRepository.enqueue(ctx.pool, { kind: PASSWORD_RESET_MAIL, environment, request: { ...request } });
    ctx.mail?.wake();
    return {};
  };

/**
 * Composes a queued password reset request, in the mail worker's transaction: for an existing account a new
 * token (its HMAC stored) and the message that carries it; either way the user.password_reset.requested event
 * (a failure naming the email tried when there is no such account, and then no message).
 */
export const passwordResetComposer =
  (config: Pick<IdentityContext['config'], 'SERVER_SECRET'>): MailComposer =>
  async (client, job) => {
    const { email, ...origin } = job.request as unknown as ResetRequest;
    if (typeof email !== 'string' || typeof origin.traceId !== 'string' || !origin.caller) throw new Error('malformed password reset request');
    const { environment } = job;
    const user = await passwordsRepository.findByEmail(client, environment, email);
    const body = 'prt_' + randomBytes(32).toString('base64url');
    const token = body + checksum(body);
    if (user) await passwordsRepository.insertResetToken(client, { id: newId('prt'), environment, userId: user.id, hash: resetTokenHash(token, config.SERVER_SECRET) });
    await event(
      client,
      origin,
      environment,
      'user.password_reset.requested',
      user ? 'success' : 'failure',
      user ? { id: user.id, email: user.email, type: 'user' } : { email, type: 'anonymous' },
      user ? { id: user.id, type: 'user' } : undefined,
      user ? {} : { reason: 'unknown_email' },
    );
    if (!user) return undefined;
    return {
      to: user.email,
      subject: 'Reset your password',
      text: `Someone asked to reset the password of ${user.email}. This token works once, for one hour:\n\n${token}\n`,
      data: { kind: PASSWORD_RESET_MAIL, environment, email: user.email, token },
    };
  };

export const confirmPasswordReset =
  (ctx: IdentityContext) =>
  async (req: identity.ConfirmPasswordResetRequest, call: CallContext): Promise<identity.ConfirmPasswordResetResponse> => {
    const environment = environmentOf(req.environment);
    const invalid = () => AppError.field('token', 'invalid, used or expired token');
    const wellFormed = /^prt_[A-Za-z0-9_-]{43}[A-Za-z0-9_-]{6}$/.test(req.token) && checksum(req.token.slice(0, -6)) === req.token.slice(-6);
    const outcome = await withTransaction(ctx.pool, async (client) => {
      const row = wellFormed ? await passwordsRepository.lockResetToken(client, environment, resetTokenHash(req.token, ctx.config.SERVER_SECRET)) : undefined;
      const user = row ? await usersRepository.get(client, environment, row.user_id) : undefined;
      if (!row || !user || row.used_at || row.expires_at.getTime() <= Date.now()) {
        const actor = user ? { id: user.id, email: user.email, type: 'user' } : { type: 'anonymous' };
        await event(client, originOf(call), environment, 'user.password_reset.failed', 'failure', actor, user ? { id: user.id, type: 'user' } : undefined, {
          reason: !row ? 'unknown_token' : row.used_at ? 'used_token' : 'expired_token',
        });
        return 'invalid' as const;
      }
      checkPasswordRules(req.password, user.email);
      await passwordsRepository.setHash(client, environment, user.id, await hashPassword(req.password));
      await passwordsRepository.useResetToken(client, row.id);
      const ended = await sessionsRepository.revokeAllOfUser(client, environment, user.id);
      // Their OAuth grants end too: refresh tokens stop working and gateways refuse the access tokens.
      const grantsEnded = await oauthGrantsRepository.revokeAllOfUser(client, environment, user.id, 'password_reset');
      await event(client, originOf(call), environment, 'user.password_reset.completed', 'success', { id: user.id, email: user.email, type: 'user' }, { id: user.id, type: 'user' }, {
        sessionsRevoked: ended.length,
        oauthGrantsRevoked: grantsEnded.length,
      });
      return 'done' as const;
    });
    if (outcome === 'invalid') throw invalid();
    return {};
  };
