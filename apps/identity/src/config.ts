import { busConfig, busConfigProblems, commonConfig, ConfigError, databaseConfig, env, grpcTlsConfig, grpcTlsProblems, loadConfig, migrationConfig } from '@secsvc/shared';
import { z } from 'zod';

/** Where an SMTP_URL points: smtp:// (STARTTLS) or smtps:// (TLS from the first byte), credentials optional. */
export interface SmtpEndpoint {
  host: string;
  /** Absent: the protocol's port (587 for smtp://, 465 for smtps://). */
  port?: number;
  secure: boolean;
  username?: string;
  password?: string;
}

/** Parses an SMTP_URL; undefined when it is not smtp[s]://[user[:password]@]host[:port] with nothing after. */
export function parseSmtpUrl(value: string): SmtpEndpoint | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if ((url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname) return undefined;
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash) return undefined;
  try {
    return {
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      ...(url.port ? { port: Number(url.port) } : {}),
      secure: url.protocol === 'smtps:',
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    };
  } catch {
    // A malformed %-escape in the credentials.
    return undefined;
  }
}

/** A sender: an address, optionally with a display name (`Name <address>`, the name optionally quoted). */
export interface Mailbox {
  name?: string;
  address: string;
}

const ADDRESS = /^[^\s@<>"(),;:\\[\]]+@[^\s@<>"(),;:\\[\]]+$/;

/** Parses a MAIL_FROM value; undefined when it is not one mailbox (line breaks are never accepted). */
export function parseMailbox(value: string): Mailbox | undefined {
  if (/[\r\n\0]/.test(value)) return undefined;
  const trimmed = value.trim();
  if (ADDRESS.test(trimmed)) return { address: trimmed };
  const m = /^(?:"((?:[^"\\]|\\.)*)"|([^"<>]*?))\s*<([^<>]+)>$/.exec(trimmed);
  if (!m || !ADDRESS.test(m[3]!)) return undefined;
  const name = (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!).trim();
  return name ? { name, address: m[3]! } : { address: m[3]! };
}

/** The issuer when ISSUER is not set: the gateway's default origin. */
export const DEFAULT_ISSUER = 'http://127.0.0.1:8080';

export const identityConfigShape = {
  ...commonConfig,
  ...databaseConfig,
  // EVENT_BUS, KAFKA_BROKERS...: where the outbox relay publishes auth events
  ...busConfig,
  ...migrationConfig,
  GRPC_HOST: env.host('127.0.0.1'),
  GRPC_PORT: env.port(50051),
  ...grpcTlsConfig,
  ADMIN_PORT: env.port(9101),
  /** Issuer (iss) of access tokens: the public origin of the gateway. */
  ISSUER: z.string().url('must be a URL').default(DEFAULT_ISSUER),
  /** Audience (aud) of access tokens. */
  JWT_AUDIENCE: z.string().min(1).default('secsvc'),
  ACCESS_TOKEN_TTL_SECONDS: env.int(900, 60, 86_400),
  /** Lifetime of each OAuth refresh token (every refresh issues a new one with a fresh lifetime). */
  OAUTH_REFRESH_TOKEN_TTL_SECONDS: env.int(30 * 86_400, 3600, 365 * 86_400),
  /** Encrypts the JWT signing keys at rest (≥ 32 characters); derived from SERVER_SECRET when unset. */
  JWT_MASTER_KEY: env.secret().optional(),
  /** How long ended sessions, used or expired tokens, revoked OAuth grants are kept before the sweeper deletes them. */
  IDENTITY_RETENTION_DAYS: env.int(30, 1, 3650),
  /** How often the retention sweeper runs (one replica at a time). */
  RETENTION_SWEEP_INTERVAL_SECONDS: env.int(3600, 10, 86_400),
  /** Local mail port: password reset messages are written here as JSON files (and noted on the console). */
  MAIL_DIR: z.string().min(1).optional(),
  /** Mail transport: an SMTP server (chosen over MAIL_DIR). Credentials here or in SMTP_USERNAME/SMTP_PASSWORD. */
  SMTP_URL: z
    .string()
    .refine((v) => parseSmtpUrl(v) !== undefined, 'must be smtp://[user:password@]host[:port] or smtps://[user:password@]host[:port]')
    .optional(),
  SMTP_USERNAME: z.string().min(1).optional(),
  SMTP_PASSWORD: z.string().min(1).optional(),
  /** The From of every message (required with SMTP_URL). */
  MAIL_FROM: z
    .string()
    .refine((v) => parseMailbox(v) !== undefined, 'must be an address, optionally with a display name: Name <address>')
    .transform((v) => parseMailbox(v)!)
    .optional(),
  /** Time limit of each SMTP step: connecting, the greeting, any quiet socket. */
  SMTP_TIMEOUT_MS: env.int(10_000, 100, 600_000),
  /** smtp:// only: refuse to send unless the server upgrades the connection with STARTTLS. */
  SMTP_REQUIRE_TLS: env.bool(true),
  /** WebAuthn relying party id (a domain name: passkeys do not work on an IP address); default: ISSUER's host. */
  WEBAUTHN_RP_ID: z
    .string()
    .regex(/^(?!\d+\.\d+\.\d+\.\d+$)[a-z0-9.-]+$/i, 'must be a domain name such as example.com or localhost (not an IP address)')
    .optional(),
  /** The name authenticators show for this service. */
  WEBAUTHN_RP_NAME: z.string().min(1).max(64).default('Security Service'),
  /** Origins passkey ceremonies may run on (comma-separated); default: ISSUER's origin. */
  WEBAUTHN_ORIGINS: z
    .string()
    .refine((v) => v.split(',').every((o) => /^https?:\/\/[^/\s]+$/.test(o.trim())), 'must be origins such as https://app.example.com, comma-separated')
    .optional(),
  BOOTSTRAP_API_KEY: z
    .string()
    .regex(/^svc_sk_[A-Za-z0-9_-]{32,200}$/, 'must be svc_sk_ followed by at least 32 url-safe characters')
    .optional(),
};

export type IdentityConfig = ReturnType<typeof loadIdentityConfig>;

export function loadIdentityConfig(source: Record<string, string | undefined> = process.env) {
  const config = loadConfig(identityConfigShape, source);
  const problems = [...busConfigProblems(config), ...grpcTlsProblems(config, 'server'), ...mailConfigProblems(config)];
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** What the mail settings lack or contradict, as ConfigError lines (empty when consistent). */
export function mailConfigProblems(config: {
  SMTP_URL?: string;
  SMTP_USERNAME?: string;
  SMTP_PASSWORD?: string;
  MAIL_FROM?: Mailbox;
}): string[] {
  const problems: string[] = [];
  const separate = [config.SMTP_USERNAME, config.SMTP_PASSWORD];
  if (!config.SMTP_URL) {
    if (separate.some(Boolean)) problems.push('SMTP_USERNAME, SMTP_PASSWORD: only used with SMTP_URL (not set)');
    return problems;
  }
  if (!config.MAIL_FROM) problems.push('MAIL_FROM: required with SMTP_URL (not set)');
  if (separate.some(Boolean) && !separate.every(Boolean)) problems.push('SMTP_USERNAME, SMTP_PASSWORD: set both or neither');
  const inUrl = parseSmtpUrl(config.SMTP_URL)!;
  if (separate.some(Boolean) && (inUrl.username || inUrl.password)) {
    problems.push('SMTP_USERNAME, SMTP_PASSWORD: the credentials are in SMTP_URL already; give them in one place');
  }
  if (!inUrl.username !== !inUrl.password) problems.push('SMTP_URL: give the user and the password together, or neither');
  return problems;
}
