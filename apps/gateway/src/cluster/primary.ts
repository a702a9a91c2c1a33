import cluster, { type Worker } from 'node:cluster';
import { AggregatorRegistry, Counter, Gauge, Registry, type Aggregator, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import { Backoff, createLogger, exitWithParent, installShutdown, startAdminServer, type Readiness } from '@secsvc/shared';
import type { GatewayConfig } from '../config';
import { serveClusterRateLimits } from '../rate-limit/cluster-store';
import { MemoryRateLimitStore } from '../rate-limit/memory-store';
import type { Answer, ToWorker } from './worker';

type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[];

/** How the workers' series add up where a sum would be wrong (counters, histograms and the rest are summed). */
const AGGREGATORS: Record<string, Aggregator> = {
  secsvc_build_info: 'first',
  tls_certificate_expiry_timestamp_seconds: 'min',
};

/** A worker that lived this long before dying is replaced at once (its slot's backoff starts again). */
const STABLE_MS = 30_000;

/**
 * The primary of GATEWAY_WORKERS > 1: forks the workers (which share PORT, node:cluster handing them the
 * connections in turn), replaces a worker that dies (with backoff per slot, and says so in the log), holds the
 * memory rate-limit store the workers ask (RATE_LIMIT_STORE=memory), and owns the admin port: /healthz,
 * /readyz (ready when at least half of the workers, rounded up, are listening and ready), and /metrics, the
 * workers' registries aggregated with prom-client's AggregatorRegistry, plus its own gateway_worker_* series.
 * SIGTERM or SIGINT: readiness drops at once, every worker runs its graceful shutdown (SHUTDOWN_DELAY_MS, then
 * in-flight requests finish), and the primary exits 0 once they have.
 */
export async function runPrimary(config: GatewayConfig): Promise<void> {
  const logger = createLogger('gateway', config.LOG_LEVEL);
  const count = config.GATEWAY_WORKERS;
  const need = Math.ceil(count / 2);
  const store = config.RATE_LIMIT_STORE === 'memory' ? new MemoryRateLimitStore() : undefined;
  const slots: (Worker | undefined)[] = Array.from({ length: count }, () => undefined);
  const listening = new Set<Worker>();
  const backoffs = slots.map(() => new Backoff({ baseMs: 500, maxMs: 30_000 }));
  let everListened = false;
  let draining = false;

  const own = new Registry();
  own.setDefaultLabels({ service: 'gateway' });
  const restarts = new Counter({ name: 'gateway_worker_restarts_total', help: 'Gateway cluster workers that died and were replaced', registers: [own] });
  new Gauge({
    name: 'gateway_workers',
    help: 'Gateway cluster workers: configured (GATEWAY_WORKERS) and listening',
    labelNames: ['state'],
    registers: [own],
    collect() {
      this.set({ state: 'configured' }, count);
      this.set({ state: 'listening' }, listening.size);
    },
  });

  let nextAsk = 1;
  const asked = new Map<number, (value: unknown) => void>();
  /** A worker's answer, or undefined when it does not answer within `timeoutMs`. */
  const ask = (worker: Worker, what: 'ready' | 'metrics', timeoutMs: number) =>
    new Promise<unknown>((resolve) => {
      const id = nextAsk++;
      const done = (value: unknown) => {
        clearTimeout(timer);
        asked.delete(id);
        resolve(value);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      asked.set(id, done);
      worker.send({ secsvc: 'ask', id, what } satisfies ToWorker, undefined, (err) => err && done(undefined));
    });

  const fork = (slot: number) => {
    // The launcher's stdin belongs to the primary (SECSVC_EXIT_WITH_PARENT); a worker ends with its primary anyway.
    const worker = cluster.fork({ GATEWAY_WORKER_SLOT: String(slot), SECSVC_EXIT_WITH_PARENT: '' });
    const forkedAt = Date.now();
    slots[slot] = worker;
    if (store) serveClusterRateLimits(store, worker);
    worker.on('message', (m: Answer) => {
      if (m?.secsvc === 'answer') asked.get(m.id)?.(m.value);
    });
    worker.on('listening', () => {
      everListened = true;
      listening.add(worker);
    });
    worker.on('exit', (code, signal) => {
      listening.delete(worker);
      if (slots[slot] === worker) slots[slot] = undefined;
      if (draining) return;
      if (!everListened) {
        // No worker ever served: a start-up failure (bad port, unreadable key files...), as with one process.
        logger.fatal({ worker: slot, code, signal }, 'gateway worker failed to start');
        for (const other of slots) other?.process.kill('SIGKILL');
        process.exit(1);
      }
      if (Date.now() - forkedAt > STABLE_MS) backoffs[slot]!.reset();
      const retryMs = backoffs[slot]!.next();
      restarts.inc();
      logger.error({ worker: slot, pid: worker.process.pid, code, signal, retryMs }, 'gateway worker died; starting a new one');
      setTimeout(() => draining || fork(slot), retryMs).unref();
    });
  };

  const ready = async (): Promise<Readiness> => {
    if (draining) return false;
    const answers = await Promise.all([...listening].map((w) => ask(w, 'ready', 1_500)));
    // Per check, how many workers pass it; the pod is ready when `need` workers pass every check.
    const passing: Record<string, number> = {};
    let readyWorkers = 0;
    for (const a of answers) {
      const checks = typeof a === 'object' && a !== null ? (a as Record<string, boolean>) : {};
      if (a === true || (Object.keys(checks).length > 0 && Object.values(checks).every(Boolean))) readyWorkers++;
      for (const [name, ok] of Object.entries(checks)) passing[name] = (passing[name] ?? 0) + (ok ? 1 : 0);
    }
    return { workers: readyWorkers >= need, ...Object.fromEntries(Object.entries(passing).map(([name, n]) => [name, n >= need])) };
  };

  /** The workers' registries (those answering within 2 s), aggregated, then the primary's own series. */
  class ClusterRegistry extends Registry {
    override async metrics(): Promise<string> {
      const perWorker = (await Promise.all([...listening].map((w) => ask(w, 'metrics', 2_000)))).filter(Array.isArray) as WorkerMetrics[];
      for (const metrics of perWorker) for (const m of metrics) m.aggregator = AGGREGATORS[m.name] ?? m.aggregator;
      return (await AggregatorRegistry.aggregate(perWorker).metrics()) + (await own.metrics());
    }
  }
  let admin: Awaited<ReturnType<typeof startAdminServer>>;
  try {
    admin = await startAdminServer({ host: config.ADMIN_HOST, port: config.ADMIN_PORT, metrics: { registry: new ClusterRegistry() }, ready });
  } catch (err) {
    logger.fatal({ err: { message: (err as Error).message } }, 'gateway failed to start');
    process.exit(1);
  }
  for (let slot = 0; slot < count; slot++) fork(slot);

  const stopWorkers = async () => {
    draining = true;
    const running = slots.filter((w): w is Worker => w !== undefined && !w.isDead());
    const exits = running.map((w) => new Promise<string>((resolve) => w.once('exit', (code, signal) => resolve(code === 0 ? '' : `worker exited with ${code ?? signal}`))));
    for (const w of running) w.send({ secsvc: 'shutdown' } satisfies ToWorker, undefined, () => undefined);
    const failed = (await Promise.all(exits)).filter(Boolean);
    if (failed.length > 0) throw new Error(failed.join('; '));
  };
  // A worker gives up after its own 15 s (exit 1); the primary waits a little longer.
  const shutdown = installShutdown(logger, [{ name: 'workers', close: stopWorkers }, { name: 'admin', close: admin.close }], 16_000);
  exitWithParent(shutdown);
  logger.info({ adminPort: admin.port, workers: count }, 'gateway started');
}
