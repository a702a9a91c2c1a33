import type { identity } from '@secsvc/proto';
import { AppError, emailSchema, newId, withTransaction, type CallContext, type PoolClient } from '@secsvc/shared';
import { environmentOf, type IdentityContext } from '../context';
import { emailDomain } from '../domain/sso';
import { SESSION_MAX_SECONDS, SESSION_MIN_SECONDS } from '../domain/sessions';
import { appendEvent, appendUserEvent } from '../repositories/outbox';
import { samlIdsRepository, samlSessionsRepository, ssoConnectionsRepository, ssoUsersRepository, type SsoConnectionRow } from '../repositories/sso';
import { openSession, toSessionMessage } from './sessions';

// The identity side of SAML logins: AuthnRequest ids (InResponseTo), replay protection, just-in-time users,
// sessions and the user.login events. The gateway has validated the XML, signature and conditions.

const DEFAULT_SESSION_SECONDS = 24 * 3600;
const MAX_REQUEST_TTL_SECONDS = 3600;
const RETURN_TO_MAX = 4096;
/** NameIDs, SessionIndexes and request ids longer than this are refused (or cut, for what an IdP sent us). */
const SAML_ID_MAX = 1024;
/** The browser binding: SHA-256 of the nonce in the browser's cookie, base64url (the gateway keeps the nonce). */
const BINDING = /^[A-Za-z0-9_-]{43}$/;

async function connectionOf(ctx: IdentityContext, id: string): Promise<SsoConnectionRow> {
  const row = await ssoConnectionsRepository.get(ctx.pool, null, id);
  if (!row) throw AppError.notFound('SSO connection');
  return row;
}

function loginFailure(
  db: PoolClient,
  call: CallContext,
  connection: SsoConnectionRow,
  reason: string,
  who: { email: string; ip: string; userAgent: string; userId?: string },
) {
  return appendEvent(db, {
    actor: who.userId ? { id: who.userId, email: who.email, type: 'user' } : { email: who.email || undefined, type: 'anonymous' },
    context: { ip: who.ip, userAgent: who.userAgent },
    environment: connection.environment,
    type: 'user.login',
    result: 'failure',
    traceId: call.requestId,
    metadata: { authMethod: 'saml', connectionId: connection.id, mfaUsed: false, reason: reason.slice(0, 200) },
  });
}

export const saveSamlRequest =
  (ctx: IdentityContext) =>
  async (req: identity.SaveSamlRequestRequest): Promise<identity.SaveSamlRequestResponse> => {
    if (!req.requestId || req.requestId.length > 256) throw AppError.field('requestId', 'must be 1 to 256 characters');
    if (req.ttlSeconds < 1 || req.ttlSeconds > MAX_REQUEST_TTL_SECONDS) throw AppError.field('ttlSeconds', `must be from 1 to ${MAX_REQUEST_TTL_SECONDS}`);
    if (req.returnTo.length > RETURN_TO_MAX) throw AppError.field('returnTo', `must be at most ${RETURN_TO_MAX} characters`);
    if (req.binding && !BINDING.test(req.binding)) throw AppError.field('binding', 'must be a base64url SHA-256 digest');
    await connectionOf(ctx, req.connectionId);
    await samlIdsRepository.saveRequest(ctx.pool, req.connectionId, req.requestId, req.ttlSeconds, req.returnTo, req.binding);
    return {};
  };

export const takeSamlRequest =
  (ctx: IdentityContext) =>
  async (req: identity.TakeSamlRequestRequest): Promise<identity.TakeSamlRequestResponse> => {
    const taken = await samlIdsRepository.takeRequest(ctx.pool, req.requestId);
    return { found: taken !== undefined, connectionId: taken?.connectionId ?? '', returnTo: taken?.returnTo ?? '', binding: taken?.binding ?? '' };
  };

export const reportSamlLoginFailure =
  (ctx: IdentityContext) =>
  async (req: identity.ReportSamlLoginFailureRequest, call: CallContext): Promise<identity.ReportSamlLoginFailureResponse> => {
    const connection = await connectionOf(ctx, req.connectionId);
    const email = emailSchema.safeParse(req.email).success ? req.email : '';
    await withTransaction(ctx.pool, (db) => loginFailure(db, call, connection, req.reason || 'invalid_response', { email, ip: req.ip, userAgent: req.userAgent }));
    return {};
  };

type Outcome = { ok: true; value: identity.CompleteSamlLoginResponse } | { ok: false; reason: string; message: string; userId?: string };

export const completeSamlLogin =
  (ctx: IdentityContext) =>
  async (req: identity.CompleteSamlLoginRequest, call: CallContext): Promise<identity.CompleteSamlLoginResponse> => {
    const connection = await connectionOf(ctx, req.connectionId);
    const environment = environmentOf(connection.environment);
    const seconds = req.expiresInSeconds || DEFAULT_SESSION_SECONDS;
    if (seconds < SESSION_MIN_SECONDS || seconds > SESSION_MAX_SECONDS) throw AppError.field('expiresIn', 'must be from 1m to 30d');
    const expiresAt = req.assertionExpiresAt ? new Date(req.assertionExpiresAt) : undefined;
    if (!req.assertionId || !expiresAt || Number.isNaN(expiresAt.getTime())) throw AppError.field('assertionId', 'an assertion id and its expiry are required');
    const email = req.email.trim();
    const who = { email, ip: req.ip, userAgent: req.userAgent };

    const outcome = await withTransaction(ctx.pool, async (db): Promise<Outcome> => {
      // First: a replayed assertion is refused whatever else it says.
      if (!(await samlIdsRepository.rememberAssertion(db, connection.id, req.assertionId, expiresAt))) {
        return { ok: false, reason: 'replayed_assertion', message: 'This SAML assertion was already used' };
      }
      if (!emailSchema.safeParse(email).success) return { ok: false, reason: 'invalid_email', message: 'The assertion carries no valid email' };
      // An IdP speaks only for its own domains: it cannot log anyone in as a user of another organisation.
      if (!connection.domains.includes(emailDomain(email))) {
        return { ok: false, reason: 'domain_not_allowed', message: 'The email domain does not belong to this SSO connection' };
      }
      let user = await ssoUsersRepository.findByEmail(db, environment, email);
      let provisioned = false;
      if (!user) {
        const name = (req.name.trim() || email.slice(0, email.indexOf('@'))).slice(0, 200);
        user = await ssoUsersRepository.insertVerified(db, { id: newId('user'), environment, email, name, roles: connection.default_roles, metadata: '{}' });
        if (user) {
          provisioned = true;
          await appendUserEvent(db, call, environment, 'user.created', user.id, { provisionedBy: 'saml', connectionId: connection.id });
        } else {
          // Created meanwhile by a concurrent login of the same user: use that one.
          user = (await ssoUsersRepository.findByEmail(db, environment, email))!;
        }
      }
      const opened = await openSession(db, ctx, environment, user.id, seconds, { ip: req.ip, userAgent: req.userAgent, authMethod: 'saml', connectionId: connection.id });
      await samlSessionsRepository.record(db, { sessionId: opened.row.id, connectionId: connection.id, nameId: req.nameId, nameIdFormat: req.nameIdFormat.slice(0, SAML_ID_MAX), sessionIndex: req.sessionIndex.slice(0, SAML_ID_MAX) });
      await appendEvent(db, {
        actor: { id: user.id, email: user.email, type: 'user' },
        context: { ip: req.ip, userAgent: req.userAgent },
        environment,
        type: 'user.login',
        target: { id: opened.row.id, type: 'session' },
        result: 'success',
        traceId: call.requestId,
        metadata: { authMethod: 'saml', connectionId: connection.id, mfaUsed: false, provisioned },
      });
      return { ok: true, value: { session: { session: toSessionMessage(opened.row), token: opened.token }, userId: user.id, provisioned } };
    });
    if (outcome.ok) return outcome.value;
    await withTransaction(ctx.pool, (db) => loginFailure(db, call, connection, outcome.reason, who));
    throw new AppError('unauthorized', outcome.message, [{ field: 'SAMLResponse', message: outcome.reason }]);
  };

/** Single logout from the IdP: the sessions this NameID (and SessionIndex) got from this connection end. */
export const endSamlSessions =
  (ctx: IdentityContext) =>
  async (req: identity.EndSamlSessionsRequest, call: CallContext): Promise<identity.EndSamlSessionsResponse> => {
    const connection = await connectionOf(ctx, req.connectionId);
    if (!req.nameId || req.nameId.length > SAML_ID_MAX) throw AppError.field('nameId', `must be 1 to ${SAML_ID_MAX} characters`);
    if (!req.requestId || req.requestId.length > SAML_ID_MAX) throw AppError.field('requestId', `must be 1 to ${SAML_ID_MAX} characters`);
    if (req.sessionIndexes.length > 100 || req.sessionIndexes.some((i) => !i || i.length > SAML_ID_MAX)) {
      throw AppError.field('sessionIndexes', `at most 100, each 1 to ${SAML_ID_MAX} characters`);
    }
    const expiresAt = req.requestExpiresAt ? new Date(req.requestExpiresAt) : undefined;
    if (!expiresAt || Number.isNaN(expiresAt.getTime())) throw AppError.field('requestExpiresAt', 'is required');
    const outcome = await withTransaction(ctx.pool, async (db) => {
      // Request ids share the assertion ids' replay store (a prefix keeps them apart).
      if (!(await samlIdsRepository.rememberAssertion(db, connection.id, `logout:${req.requestId}`, expiresAt))) return undefined;
      const rows = await samlSessionsRepository.revoke(db, connection.id, req.nameId, req.sessionIndexes);
      for (const row of rows) {
        await appendEvent(db, {
          actor: { id: row.user_id, type: 'user' },
          context: { ip: req.ip, userAgent: req.userAgent },
          environment: row.environment,
          type: 'user.logout',
          target: { id: row.id, type: 'session' },
          result: 'success',
          traceId: call.requestId,
          metadata: { userId: row.user_id, authMethod: 'saml', connectionId: connection.id, singleLogout: 'idp' },
        });
      }
      return rows.length;
    });
    if (outcome === undefined) throw new AppError('unauthorized', 'This SAML LogoutRequest was already used', [{ field: 'SAMLRequest', message: 'replayed_request' }]);
    return { revoked: outcome };
  };
