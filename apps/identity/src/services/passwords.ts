import { AppError, callerOf, eventOfCall, newId, traceIdOf, type CallContext, type CallEvent, type EventInput, type PoolClient } from '@secsvc/shared';
import { throttleWait } from '../domain/login-throttle';
import { checkPasswordRules, generateResetToken, hashResetToken, looksLikeResetToken, scryptHasher, type PasswordHasher } from '../domain/passwords';
import { SESSION_MAX_SECONDS, SESSION_MIN_SECONDS } from '../domain/sessions';
import type { MailComposer } from '../mail/queue';
import type { mailRepository } from '../repositories/mail';
import type { oauthGrantsRepository } from '../repositories/oauth';
import type { passwordsRepository } from '../repositories/passwords';
import { PASSWORD_ONLY } from '../domain/mfa';
import type { LoginChallenge, MfaService } from './mfa';
import type { Database, Db, Outbox } from './ports';
import type { OpenedSession, SessionsRepository, SessionsService } from './sessions';
import type { UsersRepository } from './users';

export type PasswordsRepository = Pick<
  typeof passwordsRepository,
  'setHash' | 'rehash' | 'findByEmail' | 'failures' | 'recordFailure' | 'clearFailures' | 'insertResetToken' | 'countRecentResetTokens' | 'lockResetToken' | 'useResetToken'
>;

export interface PasswordsDeps {
  db: Database;
  passwords: PasswordsRepository;
  users: Pick<UsersRepository, 'get'>;
  /** A login opens its session in its own transaction. */
  sessions: Pick<SessionsService, 'open'>;
  /** A password reset ends every session and OAuth grant of the user. */
  sessionRows: Pick<SessionsRepository, 'revokeAllOfUser'>;
  grants: Pick<typeof oauthGrantsRepository, 'revokeAllOfUser'>;
  mailJobs: Pick<typeof mailRepository, 'enqueue'>;
  /** Wakes this process's mail worker after a job was queued (absent: the next poll of any replica takes it). */
  mailWorker?: { wake(): void };
  outbox: Outbox;
  /** A login of a user with MFA factors (or whom the environment requires MFA of) answers with a challenge. */
  mfa?: Pick<MfaService, 'loginChallenge'>;
  /** Reset tokens are stored as HMACs under it. */
  serverSecret: string;
  hasher?: PasswordHasher;
}

/** The mail_jobs kind of password reset requests. */
export const PASSWORD_RESET_MAIL = 'password-reset';

const DEFAULT_SESSION_SECONDS = 24 * 3600;

/** Who asked and in which request, as stored with a queued reset request (no secret). */
interface Origin {
  caller: ReturnType<typeof callerOf>;
  traceId: string;
}

/** What a queued password reset request holds: the email tried and who asked. */
interface ResetRequest extends Origin {
  email: string;
}

export interface LoginInput {
  email: string;
  password: string;
  ip: string;
  userAgent: string;
  /** 0: a day. */
  expiresInSeconds: number;
  /** Set on an OAuth login page: the client the user is logging in to. */
  oauthClientId: string;
}

type Actor = { id?: string; email?: string; type: string };
const userActor = (user: { id: string; email: string }): Actor => ({ id: user.id, email: user.email, type: 'user' });
const userTarget = (userId: string) => ({ id: userId, type: 'user' });

/** Passwords, logins and password resets: hashing, throttling, and the user.* events of each. */
export class PasswordsService {
  private readonly hasher: PasswordHasher;

  constructor(private readonly deps: PasswordsDeps) {
    this.hasher = deps.hasher ?? scryptHasher;
  }

  /** An administrator sets a user's password (user.password_changed, by the caller). */
  async set(environment: string, userId: string, password: string, call: CallContext): Promise<void> {
    const { db, users, passwords, outbox } = this.deps;
    const user = await users.get(db.pool, environment, userId);
    if (!user) throw AppError.notFound('User');
    checkPasswordRules(password, user.email);
    const hash = await this.hasher.hash(password);
    await db.transaction(async (tx) => {
      if (!(await passwords.setHash(tx, environment, user.id, hash))) throw AppError.notFound('User');
      await outbox.append(tx, eventOfCall(call, { environment, type: 'user.password_changed', target: userTarget(user.id), result: 'success' }));
    });
  }

  /**
   * A password login: a session, or 401 alike for a wrong password, an unknown email and an account without a
   * password (the same scrypt work on every path, so timing tells nothing); 429 after 5 failures for the
   * account or 20 for the ip within 15 minutes. A stored hash made with parameters below the current ones is
   * replaced by a new hash of the password, in the login's transaction. A user with a TOTP or passkey factor
   * (or whom the environment requires MFA of) gets a challenge for the second step instead of a session; the
   * user.login event is then written when that step succeeds.
   */
  async login(environment: string, input: LoginInput, call: CallContext): Promise<{ session?: OpenedSession; challenge?: LoginChallenge }> {
    const { db, passwords, outbox } = this.deps;
    const seconds = input.expiresInSeconds || DEFAULT_SESSION_SECONDS;
    if (seconds < SESSION_MIN_SECONDS || seconds > SESSION_MAX_SECONDS) throw AppError.field('expiresIn', 'must be from 1m to 30d');
    const email = input.email.slice(0, 320);
    const ip = input.ip || 'unknown';
    const wait = throttleWait(await passwords.failures(db.pool, environment, email, ip));
    if (wait !== undefined) throw new AppError('rate_limited', 'Too many failed logins; try again later', [], wait);
    const user = await passwords.findByEmail(db.pool, environment, email);
    // The same work whether or not the account exists or has a password: no enumeration by timing.
    const ok = await this.hasher.verify(input.password, user?.password_hash ?? (await this.hasher.dummy()));
    const context = { ip: input.ip, userAgent: input.userAgent };
    // On an OAuth login page: authMethod oauth, with the client the user is logging in to.
    const loginMethod = input.oauthClientId ? { authMethod: 'oauth', clientId: input.oauthClientId.slice(0, 64) } : { authMethod: 'password' };
    const loginEvent = (event: Omit<CallEvent, 'environment' | 'type'>): EventInput => ({
      ...eventOfCall(call, { environment, type: 'user.login', ...event }),
      context,
    });
    if (!user || !user.password_hash || !ok) {
      await db.transaction(async (tx) => {
        await passwords.recordFailure(tx, environment, email, ip);
        await outbox.append(
          tx,
          loginEvent({
            actor: user ? { id: user.id, email, type: 'user' } : { email, type: 'anonymous' },
            result: 'failure',
            metadata: { ...loginMethod, mfaUsed: false, reason: 'invalid_credentials' },
          }),
        );
      });
      throw new AppError('unauthorized', 'Invalid email or password');
    }
    const stored = user.password_hash;
    // Hashed before the transaction (no connection is held meanwhile), written in it; only over the hash just
    // verified, so a password set meanwhile is never replaced by the old one.
    const upgraded = this.hasher.needsRehash(stored) ? await this.hasher.hash(input.password) : undefined;
    return db.transaction(async (tx) => {
      await passwords.clearFailures(tx, environment, email);
      if (upgraded) await passwords.rehash(tx, environment, user.id, stored, upgraded);
      const pending = { ip: input.ip, userAgent: input.userAgent, expiresInSeconds: seconds, oauthClientId: input.oauthClientId, amr: PASSWORD_ONLY.amr, loginMethod };
      const challenge = await this.deps.mfa?.loginChallenge(tx, environment, user.id, pending);
      if (challenge) return { challenge };
      const opened = await this.deps.sessions.open(tx, environment, user.id, seconds, context, PASSWORD_ONLY);
      await outbox.append(
        tx,
        loginEvent({
          actor: userActor(user),
          target: { id: opened.row.id, type: 'session' },
          result: 'success',
          metadata: { ...loginMethod, mfaUsed: false, amr: PASSWORD_ONLY.amr },
        }),
      );
      return { session: opened };
    });
  }

  /**
   * Queues the request (one row in mail_jobs, the same work whether or not the account exists) and answers: the
   * response says nothing, not even by its timing, about whether the email has an account. The token is made
   * by the mail worker (passwordResetComposer) and goes only into the e-mail. Once this answers, the request
   * survives a crash; when the row cannot be written the call fails like any other.
   */
  async requestReset(environment: string, email: string, call: CallContext): Promise<void> {
    const request: ResetRequest = { email: email.slice(0, 320), ...originOf(call) };
    await this.deps.mailJobs.enqueue(this.deps.db.pool, { kind: PASSWORD_RESET_MAIL, environment, request: { ...request } });
    this.deps.mailWorker?.wake();
  }

  /**
   * A reset token sets a new password (checked against the rules; a refused password leaves the token usable),
   * uses the token up, and ends every session and OAuth grant of the user; an unknown, used or expired token
   * is a 400 naming `token`, with user.password_reset.failed.
   */
  async confirmReset(environment: string, token: string, password: string, call: CallContext): Promise<void> {
    const { db, passwords, users, sessionRows, grants, outbox, serverSecret } = this.deps;
    const event = (tx: PoolClient, type: string, result: 'success' | 'failure', actor: Actor, target?: { id: string; type: string }, metadata: Record<string, unknown> = {}) =>
      outbox.append(tx, eventOfCall(call, { actor, environment, type, target, result, metadata }));
    const outcome = await db.transaction(async (tx) => {
      const row = looksLikeResetToken(token) ? await passwords.lockResetToken(tx, environment, hashResetToken(token, serverSecret)) : undefined;
      const user = row ? await users.get(tx, environment, row.user_id) : undefined;
      if (!row || !user || row.used_at || row.expires_at.getTime() <= Date.now()) {
        await event(tx, 'user.password_reset.failed', 'failure', user ? userActor(user) : { type: 'anonymous' }, user ? userTarget(user.id) : undefined, {
          reason: !row ? 'unknown_token' : row.used_at ? 'used_token' : 'expired_token',
        });
        return 'invalid' as const;
      }
      checkPasswordRules(password, user.email);
      await passwords.setHash(tx, environment, user.id, await this.hasher.hash(password));
      await passwords.useResetToken(tx, row.id);
      const ended = await sessionRows.revokeAllOfUser(tx, environment, user.id);
      // Their OAuth grants end too: refresh tokens stop working and gateways refuse the access tokens.
      const grantsEnded = await grants.revokeAllOfUser(tx, environment, user.id, 'password_reset');
      await event(tx, 'user.password_reset.completed', 'success', userActor(user), userTarget(user.id), {
        sessionsRevoked: ended.length,
        oauthGrantsRevoked: grantsEnded.length,
      });
      return 'done' as const;
    });
    if (outcome === 'invalid') throw AppError.field('token', 'invalid, used or expired token');
  }
}

const originOf = (call: CallContext): Origin => ({ caller: callerOf(call), traceId: traceIdOf(call) });

/** Reset tokens (and so mails) one account is sent per hour at most. */
export const RESET_MAILS_PER_HOUR = 5;

export interface ResetComposerDeps {
  passwords: Pick<PasswordsRepository, 'findByEmail' | 'insertResetToken' | 'countRecentResetTokens'>;
  outbox: Outbox;
  serverSecret: string;
}

/**
 * Composes a queued password reset request, in the mail worker's transaction: for an existing account a new
 * token (its HMAC stored) and the message that carries it; either way the user.password_reset.requested event
 * (a failure naming the email tried when there is no such account, and then no message). The event names who
 * asked, as stored with the request.
 */
export function passwordResetComposer({ passwords, outbox, serverSecret }: ResetComposerDeps): MailComposer {
  return async (client: Db, job) => {
    const { email, ...origin } = job.request as unknown as ResetRequest;
    if (typeof email !== 'string' || typeof origin.traceId !== 'string' || !origin.caller) throw new Error('malformed password reset request');
    const { environment } = job;
    const user = await passwords.findByEmail(client, environment, email);
    // A mailbox is sent at most RESET_MAILS_PER_HOUR tokens an hour, whoever asks (no mail bombing through the
    // reset form); the requester's answer was the same either way.
    const throttled = !!user && (await passwords.countRecentResetTokens(client, environment, user.id, 3600)) >= RESET_MAILS_PER_HOUR;
    const token = generateResetToken();
    if (user && !throttled) await passwords.insertResetToken(client, { id: newId('prt'), environment, userId: user.id, hash: hashResetToken(token, serverSecret) });
    await outbox.append(client, {
      ...origin.caller,
      actor: user ? userActor(user) : { email, type: 'anonymous' },
      environment,
      type: 'user.password_reset.requested',
      target: user ? userTarget(user.id) : undefined,
      result: user && !throttled ? 'success' : 'failure',
      traceId: origin.traceId,
      metadata: !user ? { reason: 'unknown_email' } : throttled ? { reason: 'throttled', limitPerHour: RESET_MAILS_PER_HOUR } : {},
    });
    if (!user || throttled) return undefined;
    return {
      to: user.email,
      subject: 'Reset your password',
      text: `Someone asked to reset the password of ${user.email}. This token works once, for one hour:\n\n${token}\n`,
      data: { kind: PASSWORD_RESET_MAIL, environment, email: user.email, token },
    };
  };
}
