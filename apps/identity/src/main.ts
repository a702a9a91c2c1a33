import { identity, descriptorSets, serviceNames } from '@secsvc/proto';
import { createPool, migrate, migratedOnly, pingDatabase, readMigrations, runProcess, startGrpcServer, startServiceOutboxRelay } from '@secsvc/shared';
import { loadIdentityConfig } from './config';
import { migrationsDir } from './migrations';
import type { IdentityContext } from './context';
import { ensureBootstrapKey } from './domain/bootstrap';
import { CredentialChangeFeed } from './domain/credential-change-feed';
import { mailLeaseMs, MailQueue, mailQueueKey } from './mail/queue';
import { mailTransport } from './mail/transport';
import { masterKey, SigningKeyStore } from './domain/signing-keys';
import { getJwks, issueAccessToken, reportAuthFailure } from './rpc/tokens';
import { createApiKey, getApiKey, listApiKeys, revokeApiKey, rotateApiKey } from './rpc/api-keys';
import { authenticateApiKey } from './rpc/authenticate-api-key';
import { confirmPasswordReset, login, PASSWORD_RESET_MAIL, passwordResetComposer, requestPasswordReset, setPassword } from './rpc/passwords';
import { authenticateSession, createSession, listUserSessions, revokeSession, revokeUserSessions, verifySession } from './rpc/sessions';
import { createUser } from './rpc/create-user';
import { deleteUser } from './rpc/delete-user';
import { getUser } from './rpc/get-user';
import { listUsers } from './rpc/list-users';
import { updateUser } from './rpc/update-user';
import { watchCredentialChanges } from './rpc/watch-credential-changes';
import { reportRateLimitExceeded } from './rpc/report-rate-limit-exceeded';
import { createOAuthClient, deleteOAuthClient, getOAuthClient, listOAuthClients, updateOAuthClient } from './rpc/oauth-clients';
import { authorize } from './rpc/oauth-authorize';
import { token } from './rpc/oauth-token';
import { introspectToken } from './rpc/oauth-introspect';
import { authenticateOAuthClient, revokeToken } from './rpc/oauth-revoke';
import { createSsoConnection, deleteSsoConnection, findSsoConnection, getSsoConnection, listSsoConnections, updateSsoConnection } from './rpc/sso-connections';
import { startRetention } from './retention';
import { completeSamlLogin, endSamlSessions, reportSamlLoginFailure, saveSamlRequest, takeSamlRequest } from './rpc/saml-login';

/** How long shutdown waits for mail being sent (what is not sent stays queued in mail_jobs). */
const MAIL_DRAIN_MS = 5000;

void runProcess('identity', () => loadIdentityConfig(), async ({ config, logger, metrics }) => {
  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger, 'identity');
  await migrate(pool, 'identity', await readMigrations(migrationsDir), logger);
  if (config.MIGRATE_ONLY) return migratedOnly({ name: 'postgres', close: () => pool.end() });
  await ensureBootstrapKey(pool, config.SERVER_SECRET, config.BOOTSTRAP_API_KEY, logger, (line) =>
    process.stdout.write(line + '\n'),
  );
  const feed = new CredentialChangeFeed(config.DATABASE_URL, logger);
  await feed.start();
  const mail = new MailQueue({
    pool,
    key: mailQueueKey(config.SERVER_SECRET),
    transport: mailTransport(config, logger, (line) => process.stdout.write(line + '\n')),
    composers: { [PASSWORD_RESET_MAIL]: passwordResetComposer(config) },
    logger,
    metrics,
    leaseMs: mailLeaseMs(config.SMTP_TIMEOUT_MS),
  });
  const ctx: IdentityContext = { pool, config, logger, mail };
  const signingKeys = new SigningKeyStore(pool, masterKey(config.JWT_MASTER_KEY, config.SERVER_SECRET));
  await signingKeys.get();
  const relay = await startServiceOutboxRelay({ config, pool, schema: 'identity', logger, metrics });
  const retention = startRetention({ pool, retentionDays: config.IDENTITY_RETENTION_DAYS, intervalMs: config.RETENTION_SWEEP_INTERVAL_SECONDS * 1000, logger, metrics });
  const grpcServer = await startGrpcServer({
    host: config.GRPC_HOST,
    port: config.GRPC_PORT,
    logger,
    metrics,
    descriptorSets,
    services: [
      {
        name: serviceNames.identity,
        definition: identity.IdentityServiceService,
        implementation: {
          createUser: createUser(ctx),
          getUser: getUser(ctx),
          updateUser: updateUser(ctx),
          deleteUser: deleteUser(ctx),
          listUsers: listUsers(ctx),
          authenticateApiKey: authenticateApiKey(ctx),
          watchCredentialChanges: watchCredentialChanges(feed, pool, config.ACCESS_TOKEN_TTL_SECONDS),
          createApiKey: createApiKey(ctx),
          listApiKeys: listApiKeys(ctx),
          getApiKey: getApiKey(ctx),
          revokeApiKey: revokeApiKey(ctx),
          rotateApiKey: rotateApiKey(ctx),
          authenticateSession: authenticateSession(ctx),
          issueAccessToken: issueAccessToken(ctx, signingKeys),
          getJwks: getJwks(signingKeys),
          reportAuthFailure: reportAuthFailure(ctx),
          reportRateLimitExceeded: reportRateLimitExceeded(ctx),
          setPassword: setPassword(ctx),
          login: login(ctx),
          requestPasswordReset: requestPasswordReset(ctx),
          confirmPasswordReset: confirmPasswordReset(ctx),
          createSession: createSession(ctx),
          verifySession: verifySession(ctx),
          revokeSession: revokeSession(ctx),
          listUserSessions: listUserSessions(ctx),
          revokeUserSessions: revokeUserSessions(ctx),
          createOAuthClient: createOAuthClient(ctx),
          listOAuthClients: listOAuthClients(ctx),
          getOAuthClient: getOAuthClient(ctx),
          updateOAuthClient: updateOAuthClient(ctx),
          deleteOAuthClient: deleteOAuthClient(ctx),
          authorize: authorize(ctx),
          token: token(ctx, signingKeys),
          revokeToken: revokeToken(ctx, signingKeys),
          introspectToken: introspectToken(ctx, signingKeys),
          authenticateOAuthClient: authenticateOAuthClient(ctx),
          createSsoConnection: createSsoConnection(ctx),
          listSsoConnections: listSsoConnections(ctx),
          getSsoConnection: getSsoConnection(ctx),
          updateSsoConnection: updateSsoConnection(ctx),
          deleteSsoConnection: deleteSsoConnection(ctx),
          findSsoConnection: findSsoConnection(ctx),
          saveSamlRequest: saveSamlRequest(ctx),
          takeSamlRequest: takeSamlRequest(ctx),
          endSamlSessions: endSamlSessions(ctx),
          completeSamlLogin: completeSamlLogin(ctx),
          reportSamlLoginFailure: reportSamlLoginFailure(ctx),
        },
      },
    ],
  });
  logger.info({ grpcPort: grpcServer.port }, 'identity gRPC listening');
  // Works mail_jobs with the other replicas: what this replica queues, retries, and jobs a dead replica left.
  mail.start();
  return {
    closers: [
      // Ending the feed first ends the watch streams, so the server can drain.
      { name: 'credential-change-feed', close: () => feed.stop() },
      { name: 'grpc', close: () => grpcServer.close() },
      // After the RPCs: no more jobs are claimed and the sends in flight may finish (within the 15 s shutdown
      // limit); every job not sent stays in mail_jobs for the next worker.
      { name: 'mail-queue', close: () => mail.close(MAIL_DRAIN_MS) },
      { name: 'outbox-relay', close: () => relay.close() },
      { name: 'retention', close: () => retention.close() },
      { name: 'postgres', close: () => pool.end() },
    ],
    ready: async () => ({ postgres: await pingDatabase(pool) }),
  };
});
