import { audit, batchMethods, identity, policy } from '@secsvc/proto';
import { checkHealth, createClient, drainHttpServer, GrpcTls, loadConfigOrExit, promiseClient, runProcess, type ProcessContext } from '@secsvc/shared';
import cluster from 'node:cluster';
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { answerClientErrors, REQUEST_TIMEOUT_MS } from './http/client-errors';
import { AuthCache } from './auth/auth-cache';
import { JwtVerifier } from './auth/jwt-verifier';
import { RedisVerifyCache } from './auth/redis-verify-cache';
import { UserCache } from './auth/user-cache';
import { MemoryVerifyCache } from './auth/verify-cache';
import { countedStoreHealth } from './middleware/rate-limit';
import { clusterWorker, workerSlot } from './cluster/worker';
import { runPrimary } from './cluster/primary';
import { ClusterRateLimitStore, primaryChannel } from './rate-limit/cluster-store';
import { RateLimiter } from './rate-limit/limiter';
import { MemoryRateLimitStore } from './rate-limit/memory-store';
import { RedisRateLimitStore } from './rate-limit/redis-store';
import { createRedis, RedisHealth } from './redis';
import { loadGatewayConfig, type GatewayConfig } from './config';
import { auditDownloadSource } from './downloads';
import { readSpKeys } from './sso/keys';
import { resolveConsoleDir } from './console';

/** One gateway process: the whole gateway (GATEWAY_WORKERS=1), or one cluster worker of a primary (cluster/). */
async function serve({ config, logger, metrics, draining }: ProcessContext<GatewayConfig>) {
  // GRPC_TLS: plain, TLS or mutual TLS to the services, with certificate files reloaded on change.
  const grpcTls = GrpcTls.fromConfig(config, { logger, metrics });
  const identityClient = createClient(identity.IdentityServiceClient, config.IDENTITY_ADDR, metrics, grpcTls);
  const policyClient = createClient(policy.PolicyServiceClient, config.POLICY_ADDR, metrics, grpcTls);
  const auditClient = createClient(audit.AuditServiceClient, config.AUDIT_ADDR, metrics, grpcTls);
  const clients = {
    // Calls of a method that has a batch form (batchMethods) made in one turn go as one batch call (grpc/client.ts).
    identity: promiseClient(identityClient, { deadlineMs: config.GRPC_DEADLINE_MS }, batchMethods.identity),
    policy: promiseClient(policyClient, { deadlineMs: config.GRPC_DEADLINE_MS }, batchMethods.policy),
    audit: promiseClient(auditClient, { deadlineMs: config.GRPC_DEADLINE_MS }),
  };
  // /readyz names the services that do not answer their health check.
  const ready = async () => {
    const [identity, policy, audit] = await Promise.all([config.IDENTITY_ADDR, config.POLICY_ADDR, config.AUDIT_ADDR].map((a) => checkHealth(a, '', 1_000, grpcTls)));
    return { identity: identity!, policy: policy!, audit: audit! };
  };
  const authCache = new AuthCache(
    () => identityClient.watchCredentialChanges({}),
    logger,
    config.AUTH_CACHE_TTL_MS,
    10_000,
    (config.ACCESS_TOKEN_TTL_SECONDS + 120) * 1000,
    metrics,
  );
  const jwt = new JwtVerifier(async () => (await clients.identity.getJwks({})).jwksJson, config.ISSUER, config.JWT_AUDIENCE, logger, metrics);
  // The change stream also carries session revocations for JWTs, so it runs even with the cache off.
  authCache.start();
  // Redis (when configured) is shared by the rate limits and the session-verify cache.
  const redisHealth = new RedisHealth(logger, metrics);
  const redis = config.REDIS_URL ? createRedis(config.REDIS_URL, redisHealth, config.REDIS_TIMEOUT_MS) : undefined;
  const verifyCache = redis
    ? new RedisVerifyCache(redis, authCache, config.AUTH_CACHE_TTL_MS, config.GRPC_DEADLINE_MS + 1000, redisHealth, metrics)
    : new MemoryVerifyCache(authCache, config.AUTH_CACHE_TTL_MS, 10_000, metrics);
  const rateLimit =
    config.RATE_LIMIT_STORE === 'off'
      ? undefined
      : {
          limiter: new RateLimiter({
            store:
              config.RATE_LIMIT_STORE === 'redis'
                ? new RedisRateLimitStore(redis!)
                : // In a cluster, the one memory store is the primary's: the workers ask it over IPC.
                  cluster.isWorker
                  ? new ClusterRateLimitStore(primaryChannel)
                  : new MemoryRateLimitStore(),
            failMode: config.RATE_LIMIT_FAIL_MODE,
            health: countedStoreHealth(metrics, redisHealth),
          }),
          policy: {
            anonymousPerMinute: config.RATE_LIMIT_ANONYMOUS_PER_MINUTE,
            userPerMinute: config.RATE_LIMIT_USER_PER_MINUTE,
            enterprisePerMinute: config.RATE_LIMIT_ENTERPRISE_PER_MINUTE,
          },
        };
  const userCache = new UserCache(authCache, config.AUTH_CACHE_TTL_MS, 10_000, metrics);
  // Export links point at DOWNLOAD_BASE_URL, else at this gateway's own port (known once it listens).
  const downloads = { baseUrl: (config.DOWNLOAD_BASE_URL ?? `http://127.0.0.1:${config.PORT}/downloads`).replace(/\/+$/, ''), open: auditDownloadSource(auditClient) };
  const sso = { baseUrl: config.ISSUER, keys: readSpKeys(config), clockSkewMs: config.SAML_CLOCK_SKEW_SECONDS * 1000, requestTtlSeconds: config.SAML_REQUEST_TTL_SECONDS };
  // The admin console's build: CONSOLE_DIR, else the workspace's apps/console/dist (resolved once, read per request).
  const consoleDir = resolveConsoleDir(config.CONSOLE_DIR);
  if (!existsSync(path.join(consoleDir, 'index.html'))) logger.warn({ consoleDir }, 'the admin console is not built: /console answers 404 until it is (npm run build)');
  const app = createApp({ config, clients, logger, metrics, ready, draining, continueIncomingTrace: config.TRACE_CONTINUE_INCOMING, authCache, jwt, verifyCache, userCache, downloads, rateLimit, oauth: { issuer: config.ISSUER }, sso, console: { dir: consoleDir } });
  const server = app.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  answerClientErrors(server, logger);
  if (cluster.isWorker) {
    // Which worker served: one series per slot on the primary's /metrics (never in a response).
    const served = metrics.counter('gateway_worker_requests_total', 'HTTP requests served by each gateway cluster worker (its slot)', ['worker']).labels({ worker: workerSlot() });
    server.on('request', () => served.inc());
  }
  logger.info({ port: (server.address() as AddressInfo).port }, 'gateway listening');
  if (!config.DOWNLOAD_BASE_URL) downloads.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/downloads`;
  return {
    closers: [
      {
        name: 'http',
        close: () => drainHttpServer(server),
      },
      {
        name: 'grpc-clients',
        close: async () => {
          authCache.stop();
          identityClient.close();
          policyClient.close();
          redis?.disconnect();
          auditClient.close();
          grpcTls.close();
        },
      },
    ],
    ready,
  };
}

if (cluster.isWorker) void runProcess('gateway', () => loadGatewayConfig(), serve, clusterWorker);
else {
  const config = loadConfigOrExit('gateway', () => loadGatewayConfig());
  if (config.GATEWAY_WORKERS > 1) void runPrimary(config);
  else void runProcess('gateway', () => config, serve);
}
