import { startAdminServer, type Readiness } from './admin';
import { ConfigError } from './config';
import { createLogger, type Logger } from './logger';
import { Metrics } from './metrics';
import { installShutdown, type Closable } from './shutdown';
import { startTracing, type TracingSettings } from './tracing';

export interface ProcessContext<C> {
  config: C;
  logger: Logger;
  metrics: Metrics;
  /** True from SIGTERM/SIGINT on: readiness answers 503 and HTTP answers say `Connection: close`. */
  draining: () => boolean;
}

export interface StartedProcess {
  /** Closed in order on SIGTERM/SIGINT: stop accepting first, then drain, then pools. */
  closers: Closable[];
  /** Dependencies reachable (for /readyz). */
  ready: () => Promise<Readiness>;
}

/** What `start` returns under MIGRATE_ONLY=true: migrations applied; runProcess closes these and exits 0. */
export interface MigratedOnly {
  migratedOnly: true;
  closers: Closable[];
}

export const migratedOnly = (...closers: Closable[]): MigratedOnly => ({ migratedOnly: true, closers });

interface BaseConfig extends Partial<TracingSettings> {
  LOG_LEVEL: string;
  ADMIN_HOST: string;
  ADMIN_PORT: number;
  SHUTDOWN_DELAY_MS?: number;
}

/** `loadConfig`'s configuration; a bad value writes the problems to stderr and exits 1. */
export function loadConfigOrExit<C>(service: string, loadConfig: () => C): C {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${service}: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

/** Started by the local launcher (SECSVC_EXIT_WITH_PARENT=1): when it goes away (its end of our stdin closes), stop too. */
export function exitWithParent(shutdown: () => Promise<void>): void {
  if (process.env.SECSVC_EXIT_WITH_PARENT !== '1') return;
  process.stdin.on('close', () => void shutdown().then(() => process.exit(0)));
  process.stdin.resume();
}

/** A process run under a supervisor (a gateway cluster worker under its primary) instead of on its own. */
export interface Supervised {
  /**
   * Called once started, instead of starting the admin server and following the launcher: the supervisor
   * serves readiness and metrics and asks for the graceful shutdown (SIGTERM and SIGINT still start it too).
   */
  attach(p: { logger: Logger; metrics: Metrics; ready: () => Promise<Readiness>; shutdown: () => Promise<void> }): void;
}

/**
 * The start-up of every service process: validated config (a bad value exits 1 naming the variable), JSON
 * logger, metrics, tracing (OTEL_*, tracing/), the admin HTTP server (/healthz, /readyz, /metrics) and graceful shutdown.
 * Under a supervisor (`supervised`), no admin server: it serves readiness and metrics instead.
 */
export async function runProcess<C extends BaseConfig>(
  service: string,
  loadConfig: () => C,
  start: (ctx: ProcessContext<C>) => Promise<StartedProcess | MigratedOnly>,
  supervised?: Supervised,
): Promise<void> {
  const config = loadConfigOrExit(service, loadConfig);
  const logger = createLogger(service, config.LOG_LEVEL);
  const metrics = new Metrics(service);
  // Before `start`: pools and servers it creates are traced when tracing is on.
  const tracing = startTracing(service, config, logger);
  let draining = false;
  try {
    const started = await start({ config, logger, metrics, draining: () => draining });
    if ('migratedOnly' in started) {
      // No admin server, no signal handlers: close what the migrations opened and leave with success.
      for (const step of started.closers) await step.close();
      await tracing.close();
      logger.info(`${service} migrations applied (MIGRATE_ONLY), exiting`);
      process.exit(0);
    }
    const ready = async (): Promise<Readiness> => (draining ? false : started.ready());
    const admin = supervised ? undefined : await startAdminServer({ host: config.ADMIN_HOST, port: config.ADMIN_PORT, metrics, ready });
    // Graceful: readiness drops first (and the delay lets a load balancer see it), then the process's own steps
    // (stop accepting, let in-flight requests and streams finish, close pools), and the admin server last, so
    // /healthz and /metrics answer during the drain.
    const drain: Closable = {
      name: 'drain',
      close: async () => {
        draining = true;
        if (config.SHUTDOWN_DELAY_MS) await new Promise((resolve) => setTimeout(resolve, config.SHUTDOWN_DELAY_MS));
      },
    };
    // The drain has the usual 15 s; the delay before it comes on top.
    const shutdown = installShutdown(logger, [drain, ...started.closers, ...(admin ? [{ name: 'admin', close: admin.close }] : []), { name: 'tracing', close: tracing.close }], 15_000 + (config.SHUTDOWN_DELAY_MS ?? 0));
    if (supervised) return supervised.attach({ logger, metrics, ready, shutdown });
    exitWithParent(shutdown);
    logger.info({ adminPort: admin!.port }, `${service} started`);
  } catch (err) {
    logger.fatal({ err: { message: (err as Error).message } }, `${service} failed to start`);
    process.exit(1);
  }
}
