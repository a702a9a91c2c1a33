import type { Supervised } from '@secsvc/shared';

// The worker's side of the cluster protocol (primary.ts holds the other): the primary asks each worker for its
// readiness and its metrics, and tells it to shut down; the rate limits have their own messages (rate-limit/cluster-store.ts).

/** Primary → worker: a question (answered by an Answer with the same id) or the order to drain and exit. */
export type ToWorker = { secsvc: 'ask'; id: number; what: 'ready' | 'metrics' } | { secsvc: 'shutdown' };

/** Worker → primary. */
export interface Answer {
  secsvc: 'answer';
  id: number;
  value: unknown;
}

const isToWorker = (m: unknown): m is ToWorker => typeof m === 'object' && m !== null && ['ask', 'shutdown'].includes((m as { secsvc?: string }).secsvc ?? '');

/** The slot (0 .. GATEWAY_WORKERS − 1) of this worker, which its replacement keeps: the `worker` metric label. */
export const workerSlot = (): string => process.env.GATEWAY_WORKER_SLOT ?? '0';

/**
 * runProcess's supervisor in a worker: readiness and metrics are answered to the primary (which serves the
 * admin port), and its shutdown order runs the same graceful shutdown as SIGTERM (drain, closers) and exits 0.
 */
export const clusterWorker: Supervised = {
  attach({ logger, metrics, ready, shutdown }) {
    const reply = (id: number, value: unknown) => process.send?.({ secsvc: 'answer', id, value } satisfies Answer, undefined, {}, () => undefined);
    process.on('message', (m: unknown) => {
      if (!isToWorker(m)) return;
      if (m.secsvc === 'shutdown') return void shutdown().then(() => process.exit(0));
      const answer = m.what === 'ready' ? ready() : metrics.registry.getMetricsAsJSON();
      (answer as Promise<unknown>).then(
        (value) => reply(m.id, value),
        () => reply(m.id, m.what === 'ready' ? false : []),
      );
    });
    logger.info({ worker: Number(workerSlot()) }, 'gateway worker started');
  },
};
