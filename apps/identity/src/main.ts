import { batchMethods, identity, serviceNames } from '@secsvc/proto';
import { runGrpcService } from '@secsvc/shared';
import { loadIdentityConfig } from './config';
import { migrationsDir } from './migrations';
import type { IdentityContext } from './context';
import { ensureBootstrapKey } from './domain/bootstrap';
import { CredentialChangeFeed } from './domain/credential-change-feed';
import { mailLeaseMs, MailQueue, mailQueueKey } from './mail/queue';
import { mailTransport } from './mail/transport';
import { masterKey, observeSigningKeyAge, SigningKeyStore } from './domain/signing-keys';
import { startRetention } from './retention';
import { identityService } from './rpc';
import { consoleClientsService, identityMailComposers } from './services';

/** How long shutdown waits for mail being sent (what is not sent stays queued in mail_jobs). */
const MAIL_DRAIN_MS = 5000;

void runGrpcService({
  name: 'identity',
  loadConfig: loadIdentityConfig,
  migrations: migrationsDir,
  async start({ config, logger, metrics, pool }) {
    await ensureBootstrapKey(pool, config.SERVER_SECRET, config.BOOTSTRAP_API_KEY, logger, (line) => process.stdout.write(line + '\n'));
    // The admin console's first-party OAuth clients (one per environment), created or repaired.
    await consoleClientsService({ pool, config, logger }).ensure();
    const feed = new CredentialChangeFeed(config.DATABASE_URL, logger);
    await feed.start();
    const mail = new MailQueue({
      pool,
      key: mailQueueKey(config.SERVER_SECRET),
      transport: mailTransport(config, logger, (line) => process.stdout.write(line + '\n')),
      composers: identityMailComposers(config),
      logger,
      metrics,
      leaseMs: mailLeaseMs(config.SMTP_TIMEOUT_MS),
    });
    const ctx: IdentityContext = { pool, config, logger, mail };
    const signingKeys = new SigningKeyStore(pool, masterKey(config.JWT_MASTER_KEY, config.SERVER_SECRET));
    await signingKeys.get();
    observeSigningKeyAge(metrics, signingKeys);
    const retention = startRetention({ pool, retentionDays: config.IDENTITY_RETENTION_DAYS, intervalMs: config.RETENTION_SWEEP_INTERVAL_SECONDS * 1000, logger, metrics });
    // Works mail_jobs with the other replicas: what this replica queues, retries, and jobs a dead replica left.
    mail.start();
    return {
      services: [{ name: serviceNames.identity, definition: identity.IdentityServiceService, implementation: identityService(ctx, { signingKeys, feed }), batches: batchMethods.identity }],
      // Ending the feed first ends the watch streams, so the server can drain.
      closeFirst: [{ name: 'credential-change-feed', close: () => feed.stop() }],
      closers: [
        // After the RPCs: no more jobs are claimed and the sends in flight may finish (within the 15 s shutdown
        // limit); every job not sent stays in mail_jobs for the next worker.
        { name: 'mail-queue', close: () => mail.close(MAIL_DRAIN_MS) },
        { name: 'retention', close: () => retention.close() },
      ],
    };
  },
});
