import { commonConfig, env, loadConfig } from '@secsvc/shared';
import { z } from 'zod';

export const gatewayConfigShape = {
  ...commonConfig,
  HOST: env.host('127.0.0.1'),
  PORT: env.port(8080),
  ADMIN_PORT: env.port(9100),
  IDENTITY_ADDR: env.address('127.0.0.1:50051'),
  POLICY_ADDR: env.address('127.0.0.1:50052'),
  AUDIT_ADDR: env.address('127.0.0.1:50053'),
  /** Deadline of every call from the gateway to a service. */
  GRPC_DEADLINE_MS: env.int(5000, 50, 120_000),
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
  /** Identity's ACCESS_TOKEN_TTL_SECONDS: how long revoked sessions are remembered for their tokens. */
  ACCESS_TOKEN_TTL_SECONDS: env.int(900, 60, 86_400),
  /** The download host of export links (served by this gateway at its path). Default: http://127.0.0.1:<PORT>/downloads. */
  DOWNLOAD_BASE_URL: z.string().regex(/^https?:\/\/[^\s?#]+$/, 'must be an http(s) URL without query or fragment').optional(),
};

export type GatewayConfig = ReturnType<typeof loadGatewayConfig>;

export function loadGatewayConfig(source: Record<string, string | undefined> = process.env) {
  return loadConfig(gatewayConfigShape, source);
}
