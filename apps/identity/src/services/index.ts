import type { IdentityConfig } from '../config';
import type { IdentityContext } from '../context';
import type { CredentialChangeFeed } from '../domain/credential-change-feed';
import type { SigningKeyStore } from '../domain/signing-keys';
import type { MailComposer } from '../mail/queue';
import { apiKeysRepository } from '../repositories/api-keys';
import { consoleClientsRepository } from '../repositories/console-clients';
import { credentialChangesRepository } from '../repositories/credential-changes';
import { mailRepository } from '../repositories/mail';
import { oauthClientsRepository, oauthCodesRepository, oauthConsentsRepository, oauthGrantsRepository, oauthRefreshTokensRepository } from '../repositories/oauth';
import { appendEvent, appendEvents } from '../repositories/outbox';
import { mfaChallengesRepository, mfaFactorsRepository, mfaFailuresRepository, mfaSettingsRepository } from '../repositories/mfa';
import { passwordsRepository } from '../repositories/passwords';
import { sessionsRepository } from '../repositories/sessions';
import { samlIdsRepository, samlSessionsRepository, ssoConnectionsRepository, ssoUsersRepository } from '../repositories/sso';
import { usersRepository } from '../repositories/users';
import { AccessTokensService } from './access-tokens';
import { ApiKeysService } from './api-keys';
import { AuthEventsService } from './auth-events';
import { ConsoleClientsService } from './console-clients';
import { CredentialChangesService } from './credential-changes';
import { MfaService, relyingPartyOf } from './mfa';
import { OAuthService } from './oauth';
import { OAuthClientCache } from './oauth-client-cache';
import { OAuthClientsService } from './oauth-clients';
import { PASSWORD_RESET_MAIL, PasswordsService, passwordResetComposer } from './passwords';
import { postgresDatabase, type Outbox } from './ports';
import { SamlLoginsService } from './saml-logins';
import { SessionsService } from './sessions';
import { SsoConnectionsService } from './sso-connections';
import { UsersService } from './users';

/** What the services need besides the context: the JWT signing keys and the credential change feed. */
export interface IdentityDeps {
  signingKeys: SigningKeyStore;
  feed: Pick<CredentialChangeFeed, 'whenLive' | 'subscribe'>;
}

/** Identity's outbox writer (a user actor gets the email the user has when the event is written). */
export const identityOutbox: Outbox = { append: appendEvent, appendAll: appendEvents };

/** Every identity service over PostgreSQL: the one place where the repositories are handed to the domain. */
export function identityServices(ctx: IdentityContext, deps: IdentityDeps) {
  const db = postgresDatabase(ctx.pool);
  const outbox = identityOutbox;
  const serverSecret = ctx.config.SERVER_SECRET;
  const { logger } = ctx;
  const authEvents = new AuthEventsService({ db, outbox, logger });
  const users = new UsersService({ db, users: usersRepository, outbox, serverSecret });
  const apiKeys = new ApiKeysService({ db, apiKeys: apiKeysRepository, outbox, serverSecret, authEvents, logger });
  const sessions = new SessionsService({
    db,
    sessions: sessionsRepository,
    users: usersRepository,
    samlSessions: samlSessionsRepository,
    outbox,
    serverSecret,
    authEvents,
  });
  const rp = relyingPartyOf(ctx.config);
  if (/^\d+\.\d+\.\d+\.\d+$|:/.test(rp.id)) {
    logger.warn({ rpId: rp.id }, 'passkeys need a domain name: set ISSUER or WEBAUTHN_RP_ID to one (localhost works in development); TOTP and recovery codes work as they are');
  }
  const mfa = new MfaService({
    db,
    factors: mfaFactorsRepository,
    challenges: mfaChallengesRepository,
    settings: mfaSettingsRepository,
    users: usersRepository,
    sessions,
    sessionRows: sessionsRepository,
    throttle: mfaFailuresRepository,
    outbox,
    samlSessions: samlSessionsRepository,
    serverSecret,
    rp,
    issuerName: rp.name,
  });
  const accessTokens = new AccessTokensService({ db, sessions: sessionsRepository, users: usersRepository, keys: deps.signingKeys, config: ctx.config });
  const passwords = new PasswordsService({
    db,
    passwords: passwordsRepository,
    users: usersRepository,
    sessions,
    sessionRows: sessionsRepository,
    grants: oauthGrantsRepository,
    mailJobs: mailRepository,
    mailWorker: ctx.mail,
    outbox,
    mfa,
    serverSecret,
  });
  const clientCache = new OAuthClientCache(deps.feed);
  const oauthClients = new OAuthClientsService({ db, clients: oauthClientsRepository, outbox, serverSecret, clientCache });
  const oauth = new OAuthService({
    db,
    clients: oauthClientsRepository,
    clientCache,
    codes: oauthCodesRepository,
    grants: oauthGrantsRepository,
    refreshTokens: oauthRefreshTokensRepository,
    consents: oauthConsentsRepository,
    sessions: sessionsRepository,
    users: usersRepository,
    apiKeys: apiKeysRepository,
    throttle: passwordsRepository,
    keys: deps.signingKeys,
    outbox,
    config: ctx.config,
  });
  const consoleClients = consoleClientsService(ctx);
  const ssoConnections = new SsoConnectionsService({ db, connections: ssoConnectionsRepository, outbox, serverSecret });
  const samlLogins = new SamlLoginsService({
    db,
    connections: ssoConnectionsRepository,
    samlIds: samlIdsRepository,
    samlSessions: samlSessionsRepository,
    ssoUsers: ssoUsersRepository,
    sessions,
    mfa,
    outbox,
  });
  const credentialChanges = new CredentialChangesService({
    db,
    feed: deps.feed,
    changes: credentialChangesRepository,
    accessTokenTtlSeconds: ctx.config.ACCESS_TOKEN_TTL_SECONDS,
  });
  return { credentialChanges, authEvents, users, apiKeys, sessions, mfa, accessTokens, passwords, oauthClients, consoleClients, oauth, ssoConnections, samlLogins };
}

/** The admin console's OAuth clients over PostgreSQL (main.ts ensures them at start-up). */
export function consoleClientsService(ctx: Pick<IdentityContext, 'pool' | 'config' | 'logger'>): ConsoleClientsService {
  return new ConsoleClientsService({
    db: postgresDatabase(ctx.pool),
    clients: oauthClientsRepository,
    consoleClients: consoleClientsRepository,
    issuer: ctx.config.ISSUER,
    logger: ctx.logger,
  });
}

export type IdentityServices = ReturnType<typeof identityServices>;

/** The composers of the mail kinds identity queues (the mail queue's workers build each message once). */
export function identityMailComposers(config: Pick<IdentityConfig, 'SERVER_SECRET'>): Record<string, MailComposer> {
  return { [PASSWORD_RESET_MAIL]: passwordResetComposer({ passwords: passwordsRepository, outbox: identityOutbox, serverSecret: config.SERVER_SECRET }) };
}
