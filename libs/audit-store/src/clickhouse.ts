import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type * as Chdb from 'chdb/connection';
import { childSpan, endWith, SpanKind, tracingEnabled, type WatchedCertificates } from '@secsvc/shared';
import { CertificateAgent } from './clickhouse-tls';

export type { ClickHouseClient };

/** Where the log store lives: an embedded chdb data directory (local profile) or a ClickHouse server URL. */
export type ClickHouseTarget =
  | { path: string }
  /** `tls`: the CA bundle and client certificate of an https URL (clickHouseServer in clickhouse-tls.ts). */
  | { url: string; username?: string; password?: string; database?: string; tls?: WatchedCertificates };

/**
 * One `@clickhouse/client` for both profiles: the same SQL runs on embedded chdb and on a ClickHouse server.
 * chdb binds one data directory per process; each client opened on that path is a connection of its own to the
 * same embedded engine, and runs one statement at a time (statements with query parameters run one at a time
 * process-wide), so a process that must not hold its reads behind its inserts opens a second client for them
 * (LogStore's `writer`).
 */
export async function openClickHouse(target: ClickHouseTarget, settings?: ClickHouseSettings): Promise<ClickHouseClient> {
  if ('path' in target) {
    // Loaded only for the embedded engine: its native library costs ~160 MB a server-backed process does not
    // need. (tsc keeps a dynamic import() as an ESM import, which Jest's CommonJS runtime refuses.)
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy load, see above
    const { createChdbConnection } = require('chdb/connection') as typeof Chdb;
    // chdb types its connection against @clickhouse/client-common, of which @clickhouse/client bundles its own
    // copy: the same shape under distinct declarations, hence the cast.
    const connection = createChdbConnection({ path: target.path }) as unknown as NonNullable<Parameters<typeof createClient>[0]>['connection'];
    return traced(createClient({ connection, clickhouse_settings: settings }));
  }
  return traced(createClient({
    url: target.url,
    username: target.username,
    password: target.password,
    database: target.database,
    request_timeout: 30_000,
    ...(target.tls && { http_agent: new CertificateAgent(target.tls) }),
    clickhouse_settings: { date_time_output_format: 'iso', ...settings },
  }));
}

/** The longest statement text a span keeps. */
const STATEMENT_MAX = 2000;

/**
 * With tracing on, each query, insert and command run inside a trace is a client span (db.system clickhouse,
 * the statement text: values travel as query parameters or insert rows, which are not recorded). The span
 * ends when the server answered (a streamed result is read after).
 */
function traced(ch: ClickHouseClient): ClickHouseClient {
  if (!tracingEnabled()) return ch;
  type Method = (params: { query?: string; table?: string }) => Promise<unknown>;
  const methods = ch as unknown as Record<'query' | 'insert' | 'command' | 'exec', Method>;
  for (const name of ['query', 'insert', 'command', 'exec'] as const) {
    const original = methods[name].bind(ch);
    methods[name] = (params) => {
      const text = name === 'insert' ? `INSERT INTO ${params.table ?? ''}` : (params.query ?? '');
      const span = childSpan(/^\s*([A-Za-z]+)/.exec(text)?.[1]?.toUpperCase() ?? name.toUpperCase(), {
        kind: SpanKind.CLIENT,
        attributes: { 'db.system': 'clickhouse', 'db.system.name': 'clickhouse', 'db.query.text': text.slice(0, STATEMENT_MAX) },
      });
      return endWith(span, original(params));
    };
  }
  return ch;
}
