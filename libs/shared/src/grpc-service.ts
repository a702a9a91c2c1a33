import { descriptorSets } from '@secsvc/proto';
import type { BusSettings } from './bus/config';
import { createPool, observePool, pingDatabase, type Pool } from './db';
import { startGrpcServer, type ServiceRegistration } from './grpc/server';
import { GrpcTls, type GrpcTlsSettings } from './grpc/tls';
import { migrate, readMigrations } from './migrate';
import { startServiceOutboxRelay } from './outbox-relay';
import { migratedOnly, runProcess, type ProcessContext } from './process';
import type { Closable } from './shutdown';

/** What every gRPC service's configuration has (the process, its database, its bus and its server). */
export interface GrpcServiceConfig extends BusSettings, GrpcTlsSettings {
  LOG_LEVEL: string;
  ADMIN_HOST: string;
  ADMIN_PORT: number;
  DATABASE_POOL_MAX: number;
  GRPC_HOST: string;
  GRPC_PORT: number;
  MIGRATE_ONLY: boolean;
}

/** What a service's own start-up gives back to runGrpcService. */
export interface ServiceParts {
  services: ServiceRegistration[];
  /** Closed before the gRPC server (streams it must end so the server can drain, e.g. change feeds). */
  closeFirst?: Closable[];
  /** Closed after the gRPC server has drained and before the outbox relay and the pool (feeds, queues, stores). */
  closers?: Closable[];
  /** More readiness checks than PostgreSQL's. */
  ready?: () => Promise<Record<string, boolean>>;
  /** Extra fields of the "gRPC listening" log line. */
  describe?: Record<string, unknown>;
}

export interface GrpcServiceDefinition<C extends GrpcServiceConfig> {
  /** The process and its PostgreSQL schema (identity, policy, audit). */
  name: string;
  loadConfig: () => C;
  /** The folder of the schema's SQL migrations, or a function that applies them. */
  migrations: string | ((pool: Pool, ctx: ProcessContext<C>) => Promise<void>);
  /** Migrations of other stores (ClickHouse), applied before MIGRATE_ONLY stops; their connections are closed then. */
  migrateMore?: (ctx: ProcessContext<C>) => Promise<Closable[]>;
  /** Everything else: the RPC implementations and what they need. */
  start: (ctx: ProcessContext<C> & { pool: Pool }) => Promise<ServiceParts>;
}

/**
 * The start-up every gRPC service shares: its pool (waiting for PostgreSQL), its migrations (and MIGRATE_ONLY),
 * the outbox relay of its schema, the gRPC server (health, reflection, metrics), readiness and the order of
 * shutdown: the server drains first (after what must end for it to drain), then the service's own parts, the
 * relay, and the pool last.
 */
export function runGrpcService<C extends GrpcServiceConfig>(def: GrpcServiceDefinition<C>): Promise<void> {
  return runProcess(def.name, def.loadConfig, async (ctx) => {
    const { config, logger, metrics } = ctx;
    const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX, logger, def.name);
    observePool(metrics, pool);
    if (typeof def.migrations === 'string') await migrate(pool, def.name, await readMigrations(def.migrations), logger);
    else await def.migrations(pool, ctx);
    const more = (await def.migrateMore?.(ctx)) ?? [];
    if (config.MIGRATE_ONLY) return migratedOnly(...more, { name: 'postgres', close: () => pool.end() });
    // GRPC_TLS's files, read (an unusable one stops the start naming its variable) and watched from here on.
    const tls = GrpcTls.fromConfig(config, { logger, metrics });
    const parts = await def.start({ ...ctx, pool });
    const relay = await startServiceOutboxRelay({ config, pool, schema: def.name, logger, metrics });
    const server = await startGrpcServer({ host: config.GRPC_HOST, port: config.GRPC_PORT, logger, metrics, descriptorSets, services: parts.services, tls });
    logger.info({ grpcPort: server.port, grpcTls: config.GRPC_TLS, ...parts.describe }, `${def.name} gRPC listening`);
    return {
      closers: [
        ...(parts.closeFirst ?? []),
        { name: 'grpc', close: () => server.close().finally(() => tls.close()) },
        ...(parts.closers ?? []),
        { name: 'outbox-relay', close: () => relay.close() },
        { name: 'postgres', close: () => pool.end() },
      ],
      ready: async () => ({ postgres: await pingDatabase(pool), ...(await parts.ready?.()) }),
    };
  });
}
