import { commonConfig, ConfigError, env, grpcTlsConfig, grpcTlsProblems, loadConfig } from '@secsvc/shared';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { z } from 'zod';

/** The cores this process may use: os.availableParallelism(), capped by a cgroup v2 CPU quota (a container's CPU limit, rounded up). */
export function usableCores(cpuMax = '/sys/fs/cgroup/cpu.max'): number {
  const cores = os.availableParallelism();
  try {
    const [quota, period] = readFileSync(cpuMax, 'utf8').trim().split(/\s+/);
    return quota === 'max' ? cores : Math.max(1, Math.min(cores, Math.ceil(Number(quota) / Number(period)) || cores));
  } catch {
    return cores; // no cgroup v2 CPU controller here
  }
}

export const gatewayConfigShape = {
  ...commonConfig,
  HOST: env.host('127.0.0.1'),
  PORT: env.port(8080),
  ADMIN_PORT: env.port(9100),
  /** Processes serving PORT (node:cluster workers under one primary that owns the admin port); 1 = one process. Default: the cores. */
  GATEWAY_WORKERS: env.int(usableCores(), 1, 256),
  IDENTITY_ADDR: env.address('127.0.0.1:50051'),
  POLICY_ADDR: env.address('127.0.0.1:50052'),
  AUDIT_ADDR: env.address('127.0.0.1:50053'),
  /** Deadline of every call from the gateway to a service. */
  GRPC_DEADLINE_MS: env.int(5000, 50, 120_000),
  /** TLS (or mutual TLS) to the services: GRPC_TLS, GRPC_TLS_CERT_FILE, _KEY_FILE, _CA_FILE, _SERVER_NAME. */
  ...grpcTlsConfig,
  /**
   * true: a caller's W3C traceparent is continued (its trace id names the request's audit entries); false: each
   * request starts its own trace, linked to the caller's. The sampled flag is the gateway's decision either way.
   */
  TRACE_CONTINUE_INCOMING: env.bool(false),
  /**
   * Which proxies' X-Forwarded-For to honour for the client ip (audit context, throttling): a hop count, or a
   * comma-separated list of addresses, CIDRs and the names loopback, linklocal, uniquelocal. Default: loopback.
   */
  TRUST_PROXY: z
    .string()
    .regex(/^(\d{1,2}|[0-9A-Za-z.:/_, ]+)$/, 'must be a hop count or a list of addresses, CIDRs or loopback/linklocal/uniquelocal')
    .default('loopback')
    .transform((v) => (/^\d+$/.test(v) ? Number(v) : v.split(',').map((s) => s.trim()).filter(Boolean))),
  /** How long an API key authentication may be reused while identity's change stream is live (0 = off). */
  AUTH_CACHE_TTL_MS: env.int(60_000, 0, 3_600_000),
  /** Expected iss and aud of access tokens (identity's ISSUER and JWT_AUDIENCE). */
  ISSUER: z.string().url('must be a URL').default('http://127.0.0.1:8080'),
  JWT_AUDIENCE: z.string().min(1).default('secsvc'),
  /** PEM files of the SAML service provider's key pair (both or neither; without them the SP endpoints answer 503). */
  SAML_SP_KEY_FILE: z.string().min(1).optional(),
  SAML_SP_CERT_FILE: z.string().min(1).optional(),
  /** During an SP key change: the next (or previous) pair, published in SP metadata and accepted for decryption. */
  SAML_SP_ROLLOVER_KEY_FILE: z.string().min(1).optional(),
  SAML_SP_ROLLOVER_CERT_FILE: z.string().min(1).optional(),
  /** Allowed clock difference with SAML identity providers (NotBefore / NotOnOrAfter). */
  SAML_CLOCK_SKEW_SECONDS: env.int(60, 0, 300),
  /** How long an AuthnRequest id is accepted as InResponseTo. */
  SAML_REQUEST_TTL_SECONDS: env.int(600, 60, 3600),
  /** Identity's ACCESS_TOKEN_TTL_SECONDS: how long revoked sessions are remembered for their tokens. */
  ACCESS_TOKEN_TTL_SECONDS: env.int(900, 60, 86_400),
  /**
   * The admin console's build output, served at /console (index.html and assets/). Default: the @secsvc/console
   * workspace's dist beside the gateway (apps/console/dist); without an index.html there, /console answers a 404
   * page saying the console is not built.
   */
  CONSOLE_DIR: z.string().min(1).optional(),
  /** The download host of export links (served by this gateway at its path). Default: http://127.0.0.1:<PORT>/downloads. */
  DOWNLOAD_BASE_URL: z.string().regex(/^https?:\/\/[^\s?#]+$/, 'must be an http(s) URL without query or fragment').optional(),
  /** Redis shared by the gateway replicas: rate-limit counters and the session-verify cache. */
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\/\S+$/, 'must be a redis:// or rediss:// URL')
    .optional(),
  /** Timeout of each Redis command (a slow Redis counts as unreachable). */
  REDIS_TIMEOUT_MS: env.int(250, 10, 10_000),
  /**
   * Where rate-limit counters live: memory (one gateway), redis (shared by the replicas; needs REDIS_URL) or
   * off (no limits and no X-RateLimit headers: for a gateway behind another limiter, and benchmark baselines).
   * Default: redis when REDIS_URL is set or PROFILE is distributed, else memory.
   */
  RATE_LIMIT_STORE: z.enum(['memory', 'redis', 'off']).optional(),
  /** When Redis cannot be reached: open = keep serving under per-replica memory limits; closed = 503. */
  RATE_LIMIT_FAIL_MODE: z.enum(['open', 'closed']).default('open'),
  /** Requests per minute per client ip for calls without a valid credential (login pages, bad keys). */
  RATE_LIMIT_ANONYMOUS_PER_MINUTE: env.int(100, 1, 1_000_000),
  /** Requests per minute per user for session and JWT callers (the pro plan's limit). */
  RATE_LIMIT_USER_PER_MINUTE: env.int(1_000, 1, 1_000_000),
  /** Requests per minute of enterprise keys created without a custom rateLimit. */
  RATE_LIMIT_ENTERPRISE_PER_MINUTE: env.int(10_000, 1, 1_000_000),
};

export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

export function loadGatewayConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(gatewayConfigShape, source);
  const store = config.RATE_LIMIT_STORE ?? (config.REDIS_URL || config.PROFILE === 'distributed' ? 'redis' : 'memory');
  const problems = grpcTlsProblems(config, 'client');
  if (store === 'redis' && !config.REDIS_URL) {
    problems.push(`REDIS_URL: required when rate limits are kept in Redis (RATE_LIMIT_STORE=${config.RATE_LIMIT_STORE ?? 'redis, the default of PROFILE=distributed'}) (not set)`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...config, RATE_LIMIT_STORE: store };
}
