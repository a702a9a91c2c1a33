import { watchCertificates, type Logger, type Metrics, type WatchedCertificates } from '@secsvc/shared';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { ClickHouseTarget } from './clickhouse';

/** The ClickHouse server settings of audit and the export worker (their config shapes). */
export interface ClickHouseServerSettings {
  CLICKHOUSE_URL?: string;
  CLICKHOUSE_USER?: string;
  CLICKHOUSE_PASSWORD?: string;
  CLICKHOUSE_DATABASE?: string;
  CLICKHOUSE_CA_FILE?: string;
  CLICKHOUSE_CERT_FILE?: string;
  CLICKHOUSE_KEY_FILE?: string;
}

const VARIABLES = { caFile: 'CLICKHOUSE_CA_FILE', certFile: 'CLICKHOUSE_CERT_FILE', keyFile: 'CLICKHOUSE_KEY_FILE' } as const;

const filesOf = (c: ClickHouseServerSettings) => ({ caFile: c.CLICKHOUSE_CA_FILE, certFile: c.CLICKHOUSE_CERT_FILE, keyFile: c.CLICKHOUSE_KEY_FILE });

/**
 * What CLICKHOUSE_CA_FILE / _CERT_FILE / _KEY_FILE lack or contradict, as ConfigError lines: they need an https
 * CLICKHOUSE_URL, and the certificate and key go together. Pure: clickHouseServer reads the files.
 */
export function clickHouseTlsProblems(c: ClickHouseServerSettings): string[] {
  const set = Object.entries(VARIABLES).filter(([k]) => filesOf(c)[k as keyof typeof VARIABLES]).map(([, v]) => v);
  if (set.length === 0) return [];
  if (!c.CLICKHOUSE_URL?.toLowerCase().startsWith('https:')) return [`${set.join(', ')}: only used with an https:// CLICKHOUSE_URL (${c.CLICKHOUSE_URL ? 'value hidden' : 'not set'})`];
  if (Boolean(c.CLICKHOUSE_CERT_FILE) !== Boolean(c.CLICKHOUSE_KEY_FILE)) return ['CLICKHOUSE_CERT_FILE, CLICKHOUSE_KEY_FILE: both or neither'];
  return [];
}

/**
 * An https.Agent whose new connections use the certificate files as they are now (WatchedCertificates re-reads
 * them): the CA bundle the server is verified with, and the client certificate when there is one. TLS sessions
 * are not resumed, so every new connection presents the current certificate.
 */
export class CertificateAgent extends https.Agent {
  constructor(
    private readonly certificates: WatchedCertificates,
    options: https.AgentOptions = {},
  ) {
    super({ keepAlive: true, maxSockets: 10, ...options, maxCachedSessions: 0 });
  }

  override createConnection(options: https.RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): Duplex | null | undefined {
    const { ca, cert, key } = this.certificates.current;
    return super.createConnection({ ...options, ...(ca && { ca }), ...(cert && key && { cert, key }) }, callback);
  }

  override destroy(): void {
    this.certificates.close();
    super.destroy();
  }
}

/**
 * The ClickHouse server target of validated settings (CLICKHOUSE_URL set): with TLS files, their reloading
 * certificates (logged, and the client certificate's expiry in tls_certificate_expiry_timestamp_seconds{use="clickhouse"});
 * an unusable file throws a ConfigError naming its variable.
 */
export function clickHouseServer(c: ClickHouseServerSettings & { CLICKHOUSE_URL: string }, deps: { logger?: Logger; metrics?: Metrics; refreshMs?: number } = {}): ClickHouseTarget {
  const files = filesOf(c);
  const tls = files.caFile || files.certFile ? watchCertificates(files, VARIABLES, 'clickhouse', deps) : undefined;
  return { url: c.CLICKHOUSE_URL, username: c.CLICKHOUSE_USER, password: c.CLICKHOUSE_PASSWORD, database: c.CLICKHOUSE_DATABASE, ...(tls && { tls }) };
}
