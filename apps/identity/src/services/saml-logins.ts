import { AppError, emailSchema, environmentOf, eventOfCall, newId, type CallContext, type CallEvent, type EventInput, type PoolClient } from '@secsvc/shared';
import { ACR_MFA, ACR_SINGLE_FACTOR } from '../domain/mfa';
import { SESSION_MAX_SECONDS, SESSION_MIN_SECONDS } from '../domain/sessions';
import { AMR_FEDERATED, cleanClassRefs, emailDomain, idpDidMfa } from '../domain/sso';
import type { SessionAuthentication } from '../repositories/sessions';
import type { samlIdsRepository, samlSessionsRepository, SsoConnectionRow, ssoUsersRepository } from '../repositories/sso';
import type { LoginChallenge, MfaService } from './mfa';
import type { Database, Outbox } from './ports';
import type { OpenedSession, SessionsService } from './sessions';
import type { SsoConnectionsRepository } from './sso-connections';
import { userEvent } from './users';

// The identity side of SAML logins: AuthnRequest ids (InResponseTo), replay protection, just-in-time users,
// sessions and the user.login events, and the second factor a connection that requires MFA asks for when the
// IdP did not assert it. The gateway has validated the XML, signature and conditions.

export interface SamlLoginsDeps {
  db: Database;
  connections: Pick<SsoConnectionsRepository, 'get'>;
  samlIds: Pick<typeof samlIdsRepository, 'saveRequest' | 'takeRequest' | 'rememberAssertion'>;
  samlSessions: Pick<typeof samlSessionsRepository, 'record' | 'revoke'>;
  ssoUsers: Pick<typeof ssoUsersRepository, 'findByEmail' | 'insertVerified'>;
  sessions: Pick<SessionsService, 'open'>;
  /** The second step of a login through a connection that requires MFA the IdP did not assert. */
  mfa?: Pick<MfaService, 'loginChallenge'>;
  outbox: Outbox;
}

const DEFAULT_SESSION_SECONDS = 24 * 3600;
const MAX_REQUEST_TTL_SECONDS = 3600;
const RETURN_TO_MAX = 4096;
/** NameIDs, SessionIndexes and request ids longer than this are refused (or cut, for what an IdP sent us). */
const SAML_ID_MAX = 1024;
/** The browser binding: SHA-256 of the nonce in the browser's cookie, base64url (the gateway keeps the nonce). */
const BINDING = /^[A-Za-z0-9_-]{43}$/;

/** Where the browser was: the ip and user agent the gateway saw (the context of the login's events). */
interface Browser {
  ip: string;
  userAgent: string;
}

export interface SamlAssertion extends Browser {
  connectionId: string;
  assertionId: string;
  /** ISO time; undefined when the assertion named none. */
  assertionExpiresAt: string | undefined;
  nameId: string;
  nameIdFormat: string;
  sessionIndex: string;
  email: string;
  name: string;
  /** 0: a day. */
  expiresInSeconds: number;
  /** The AuthnStatement's AuthnContextClassRef values (and Microsoft's authnmethodsreferences): whether the IdP did MFA. */
  authnContextClassRefs: string[];
}

export interface SamlLogoutRequest extends Browser {
  connectionId: string;
  nameId: string;
  sessionIndexes: string[];
  requestId: string;
  requestExpiresAt: string | undefined;
}

/** A SAML login: its session, or (a connection requiring MFA the IdP did not assert) the challenge of its second step. */
export interface SamlLoginResult {
  opened?: OpenedSession;
  challenge?: LoginChallenge;
  userId: string;
  provisioned: boolean;
}

type Outcome = { ok: true; value: SamlLoginResult } | { ok: false; reason: string; message: string };

/** How a SAML login authenticated its user: the IdP's authentication, with MFA when the IdP asserted it. */
const IDP_MFA: SessionAuthentication = { amr: [AMR_FEDERATED, 'mfa'], acr: ACR_MFA, mfa: true };
const IDP_SINGLE_FACTOR: SessionAuthentication = { amr: [AMR_FEDERATED], acr: ACR_SINGLE_FACTOR, mfa: false };

export class SamlLoginsService {
  constructor(private readonly deps: SamlLoginsDeps) {}

  private async connectionOf(id: string): Promise<SsoConnectionRow> {
    const row = await this.deps.connections.get(this.deps.db.pool, null, id);
    if (!row) throw AppError.notFound('SSO connection');
    return row;
  }

  /** An event of the browser's login (its context is the browser's, not the gateway's call). */
  private browserEvent(call: CallContext, browser: Browser, event: CallEvent): EventInput {
    return { ...eventOfCall(call, event), context: { ip: browser.ip, userAgent: browser.userAgent } };
  }

  private loginFailure(tx: PoolClient, call: CallContext, connection: SsoConnectionRow, reason: string, who: Browser & { email: string }) {
    return this.deps.outbox.append(
      tx,
      this.browserEvent(call, who, {
        actor: { email: who.email || undefined, type: 'anonymous' },
        environment: connection.environment,
        type: 'user.login',
        result: 'failure',
        metadata: { authMethod: 'saml', connectionId: connection.id, mfaUsed: false, reason: reason.slice(0, 200) },
      }),
    );
  }

  /** Remembers an AuthnRequest id (InResponseTo) for `ttlSeconds`, with where the login continues and its browser binding. */
  async saveRequest(input: { connectionId: string; requestId: string; ttlSeconds: number; returnTo: string; binding: string }): Promise<void> {
    if (!input.requestId || input.requestId.length > 256) throw AppError.field('requestId', 'must be 1 to 256 characters');
    if (input.ttlSeconds < 1 || input.ttlSeconds > MAX_REQUEST_TTL_SECONDS) throw AppError.field('ttlSeconds', `must be from 1 to ${MAX_REQUEST_TTL_SECONDS}`);
    if (input.returnTo.length > RETURN_TO_MAX) throw AppError.field('returnTo', `must be at most ${RETURN_TO_MAX} characters`);
    if (input.binding && !BINDING.test(input.binding)) throw AppError.field('binding', 'must be a base64url SHA-256 digest');
    await this.connectionOf(input.connectionId);
    await this.deps.samlIds.saveRequest(this.deps.db.pool, input.connectionId, input.requestId, input.ttlSeconds, input.returnTo, input.binding);
  }

  /** The saved request, once (undefined when unknown, expired or already taken). */
  takeRequest(requestId: string): Promise<{ connectionId: string; returnTo: string; binding: string } | undefined> {
    return this.deps.samlIds.takeRequest(this.deps.db.pool, requestId);
  }

  /** user.login (failure) for a SAML response the gateway refused. */
  async reportFailure(input: Browser & { connectionId: string; reason: string; email: string }, call: CallContext): Promise<void> {
    const connection = await this.connectionOf(input.connectionId);
    const email = emailSchema.safeParse(input.email).success ? input.email : '';
    await this.deps.db.transaction((tx) => this.loginFailure(tx, call, connection, input.reason || 'invalid_response', { email, ip: input.ip, userAgent: input.userAgent }));
  }

  /**
   * A validated assertion logs its subject in: refused when replayed, without a valid email, or for an email
   * outside the connection's domains (401, with user.login failure); the user is created just in time when new
   * (verified email, the connection's default roles); a session opens, remembered for single logout, with amr
   * `fed` (plus `mfa`, acr urn:secsvc:acr:mfa and its MFA time when the assertion's AuthnContextClassRef says
   * the IdP did MFA). When the connection requires MFA and the assertion does not say so, no session opens:
   * the answer is the challenge of a second step (the user's own factor here, even when the user has none:
   * then nothing can answer it, as no factor can be enrolled during it), and its completion opens the session
   * with this login's metadata, subject and user.login event.
   */
  async completeLogin(input: SamlAssertion, call: CallContext): Promise<SamlLoginResult> {
    const { db, samlIds, samlSessions, ssoUsers, outbox } = this.deps;
    const connection = await this.connectionOf(input.connectionId);
    const environment = environmentOf(connection.environment);
    const seconds = input.expiresInSeconds || DEFAULT_SESSION_SECONDS;
    if (seconds < SESSION_MIN_SECONDS || seconds > SESSION_MAX_SECONDS) throw AppError.field('expiresIn', 'must be from 1m to 30d');
    const expiresAt = input.assertionExpiresAt ? new Date(input.assertionExpiresAt) : undefined;
    if (!input.assertionId || !expiresAt || Number.isNaN(expiresAt.getTime())) throw AppError.field('assertionId', 'an assertion id and its expiry are required');
    const email = input.email.trim();
    const who = { email, ip: input.ip, userAgent: input.userAgent };
    const classRefs = cleanClassRefs(input.authnContextClassRefs ?? []);
    const idpMfa = idpDidMfa(classRefs);

    const outcome = await db.transaction(async (tx): Promise<Outcome> => {
      // First: a replayed assertion is refused whatever else it says.
      if (!(await samlIds.rememberAssertion(tx, connection.id, input.assertionId, expiresAt))) {
        return { ok: false, reason: 'replayed_assertion', message: 'This SAML assertion was already used' };
      }
      if (!emailSchema.safeParse(email).success) return { ok: false, reason: 'invalid_email', message: 'The assertion carries no valid email' };
      // An IdP speaks only for its own domains: it cannot log anyone in as a user of another organisation.
      if (!connection.domains.includes(emailDomain(email))) {
        return { ok: false, reason: 'domain_not_allowed', message: 'The email domain does not belong to this SSO connection' };
      }
      let user = await ssoUsers.findByEmail(tx, environment, email);
      let provisioned = false;
      if (!user) {
        const name = (input.name.trim() || email.slice(0, email.indexOf('@'))).slice(0, 200);
        user = await ssoUsers.insertVerified(tx, { id: newId('user'), environment, email, name, roles: connection.default_roles, metadata: '{}' });
        if (user) {
          provisioned = true;
          await outbox.append(tx, userEvent(call, environment, 'user.created', user.id, { provisionedBy: 'saml', connectionId: connection.id }));
        } else {
          // Created meanwhile by a concurrent login of the same user: use that one.
          user = (await ssoUsers.findByEmail(tx, environment, email))!;
        }
      }
      const sessionMetadata = { authMethod: 'saml', connectionId: connection.id };
      const subject = {
        connectionId: connection.id,
        nameId: input.nameId,
        nameIdFormat: input.nameIdFormat.slice(0, SAML_ID_MAX),
        sessionIndex: input.sessionIndex.slice(0, SAML_ID_MAX),
      };
      if (connection.require_mfa && !idpMfa) {
        // The user, the remembered assertion id and user.created stay; the session, its SAML subject and
        // user.login come with the second step (the challenge keeps what they need).
        if (!this.deps.mfa) throw new AppError('internal_error', 'MFA is not available for SAML logins here');
        const challenge = await this.deps.mfa.loginChallenge(
          tx,
          environment,
          user.id,
          {
            ip: input.ip,
            userAgent: input.userAgent,
            expiresInSeconds: seconds,
            oauthClientId: '',
            amr: IDP_SINGLE_FACTOR.amr,
            loginMethod: { ...sessionMetadata, provisioned },
            sessionMetadata,
            samlSubject: subject,
          },
          { required: true, enrollment: false },
        );
        return { ok: true, value: { challenge, userId: user.id, provisioned } };
      }
      const auth = idpMfa ? IDP_MFA : IDP_SINGLE_FACTOR;
      const opened = await this.deps.sessions.open(tx, environment, user.id, seconds, { ip: input.ip, userAgent: input.userAgent, ...sessionMetadata }, auth);
      await samlSessions.record(tx, { ...subject, sessionId: opened.row.id });
      await outbox.append(
        tx,
        this.browserEvent(call, input, {
          actor: { id: user.id, email: user.email, type: 'user' },
          environment,
          type: 'user.login',
          target: { id: opened.row.id, type: 'session' },
          result: 'success',
          metadata: { ...sessionMetadata, mfaUsed: idpMfa, provisioned, amr: auth.amr, ...(idpMfa && { mfaBy: 'idp' }) },
        }),
      );
      return { ok: true, value: { opened, userId: user.id, provisioned } };
    });
    if (outcome.ok) return outcome.value;
    await db.transaction((tx) => this.loginFailure(tx, call, connection, outcome.reason, who));
    throw new AppError('unauthorized', outcome.message, [{ field: 'SAMLResponse', message: outcome.reason }]);
  }

  /** Single logout from the IdP: the sessions this NameID (and SessionIndex) got from this connection end. How many. */
  async endSessions(input: SamlLogoutRequest, call: CallContext): Promise<number> {
    const connection = await this.connectionOf(input.connectionId);
    if (!input.nameId || input.nameId.length > SAML_ID_MAX) throw AppError.field('nameId', `must be 1 to ${SAML_ID_MAX} characters`);
    if (!input.requestId || input.requestId.length > SAML_ID_MAX) throw AppError.field('requestId', `must be 1 to ${SAML_ID_MAX} characters`);
    if (input.sessionIndexes.length > 100 || input.sessionIndexes.some((i) => !i || i.length > SAML_ID_MAX)) {
      throw AppError.field('sessionIndexes', `at most 100, each 1 to ${SAML_ID_MAX} characters`);
    }
    const expiresAt = input.requestExpiresAt ? new Date(input.requestExpiresAt) : undefined;
    if (!expiresAt || Number.isNaN(expiresAt.getTime())) throw AppError.field('requestExpiresAt', 'is required');
    const { db, samlIds, samlSessions, outbox } = this.deps;
    const revoked = await db.transaction(async (tx) => {
      // Request ids share the assertion ids' replay store (a prefix keeps them apart).
      if (!(await samlIds.rememberAssertion(tx, connection.id, `logout:${input.requestId}`, expiresAt))) return undefined;
      const rows = await samlSessions.revoke(tx, connection.id, input.nameId, input.sessionIndexes);
      for (const row of rows) {
        await outbox.append(
          tx,
          this.browserEvent(call, input, {
            actor: { id: row.user_id, type: 'user' },
            environment: row.environment,
            type: 'user.logout',
            target: { id: row.id, type: 'session' },
            result: 'success',
            metadata: { userId: row.user_id, authMethod: 'saml', connectionId: connection.id, singleLogout: 'idp' },
          }),
        );
      }
      return rows.length;
    });
    if (revoked === undefined) throw new AppError('unauthorized', 'This SAML LogoutRequest was already used', [{ field: 'SAMLRequest', message: 'replayed_request' }]);
    return revoked;
  }
}
