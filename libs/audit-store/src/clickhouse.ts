import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type * as Chdb from 'chdb/connection';

export type { ClickHouseClient };

/** Where the log store lives: an embedded chdb data directory (local profile) or a ClickHouse server URL. */
export type ClickHouseTarget = { path: string } | { url: string; username?: string; password?: string; database?: string };

/**
 * One `@clickhouse/client` for both profiles: the same SQL runs on embedded chdb and on a ClickHouse server.
 * chdb allows one session per data directory per process, so a process opens a path once and shares it.
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
    return createClient({ connection, clickhouse_settings: settings });
  }
  return createClient({
    url: target.url,
    username: target.username,
    password: target.password,
    database: target.database,
    request_timeout: 30_000,
    clickhouse_settings: { date_time_output_format: 'iso', ...settings },
  });
}
