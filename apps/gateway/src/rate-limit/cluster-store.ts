import type { Decision } from './gcra';
import type { MemoryRateLimitStore } from './memory-store';
import type { RateLimitStore } from './store';

// The memory store of a gateway cluster (GATEWAY_WORKERS > 1 without Redis): the counters live in ONE place,
// the primary's MemoryRateLimitStore, and the workers ask it over the cluster's IPC channel. One store means
// one GCRA state per subject, so a limit is the limit of the pod, not multiplied by the worker count.
// The requests a worker decides in one turn of its event loop travel as one message, answered by one message.

/** An IPC channel: a worker's `process`, or the primary's `cluster.Worker`. */
export interface IpcChannel {
  send(message: unknown, callback: (err: Error | null) => void): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/** A worker's channel to its primary. */
export const primaryChannel: IpcChannel = {
  send: (message, callback) => {
    if (!process.send) return callback(new Error('not a cluster worker'));
    process.send(message, undefined, {}, callback);
  },
  on: (event, listener) => process.on(event, listener),
};

/** Worker → primary: one batch of consume calls, flat: subject, limit, nowUs (null: the primary's clock). */
interface ConsumeBatch {
  secsvc: 'rate-limit';
  id: number;
  q: (string | number | null)[];
}

/** Primary → worker: the batch's decisions in order, flat: allowed, remaining, reset, retryAfter, report (1/0). */
interface DecisionBatch {
  secsvc: 'rate-limit';
  id: number;
  d: number[];
}

const isBatch = (m: unknown): m is ConsumeBatch & DecisionBatch => typeof m === 'object' && m !== null && (m as { secsvc?: unknown }).secsvc === 'rate-limit';

/** How long a worker waits for the primary's answer before the store counts as failed (RATE_LIMIT_FAIL_MODE). */
export const CLUSTER_STORE_TIMEOUT_MS = 1_000;

interface Waiting {
  subject: string;
  limit: number;
  nowUs: number | undefined;
  resolve: (d: Decision) => void;
  reject: (err: Error) => void;
}

/** A worker's store: every consume is decided by the primary's memory store. */
export class ClusterRateLimitStore implements RateLimitStore {
  readonly kind = 'memory';
  private queue: Waiting[] = [];
  private readonly inFlight = new Map<number, { batch: Waiting[]; timer: NodeJS.Timeout }>();
  private nextId = 1;

  constructor(
    private readonly channel: IpcChannel,
    private readonly timeoutMs = CLUSTER_STORE_TIMEOUT_MS,
  ) {
    channel.on('message', (m) => {
      if (isBatch(m) && Array.isArray(m.d)) this.settle(m);
    });
  }

  consume(subject: string, limit: number, nowUs?: number): Promise<Decision> {
    return new Promise((resolve, reject) => {
      // The first call of a turn schedules the flush; the rest of the turn's calls join its batch.
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push({ subject, limit, nowUs, resolve, reject });
    });
  }

  private flush(): void {
    const batch = this.queue;
    this.queue = [];
    const id = this.nextId++;
    const timer = setTimeout(() => this.fail(id, new Error('the gateway primary (rate-limit store) did not answer in time')), this.timeoutMs);
    timer.unref();
    this.inFlight.set(id, { batch, timer });
    const q: ConsumeBatch['q'] = [];
    for (const w of batch) q.push(w.subject, w.limit, w.nowUs ?? null);
    try {
      this.channel.send({ secsvc: 'rate-limit', id, q } satisfies ConsumeBatch, (err) => err && this.fail(id, err));
    } catch (err) {
      this.fail(id, err as Error);
    }
  }

  private settle(m: DecisionBatch): void {
    const entry = this.inFlight.get(m.id);
    if (!entry) return;
    this.inFlight.delete(m.id);
    clearTimeout(entry.timer);
    entry.batch.forEach((w, i) => {
      const [allowed, remaining, reset, retryAfter, report] = m.d.slice(i * 5, i * 5 + 5) as [number, number, number, number, number];
      w.resolve({ allowed: allowed === 1, limit: w.limit, remaining, reset, retryAfter, report: report === 1 });
    });
  }

  private fail(id: number, err: Error): void {
    const entry = this.inFlight.get(id);
    if (!entry) return;
    this.inFlight.delete(id);
    clearTimeout(entry.timer);
    for (const w of entry.batch) w.reject(err);
  }
}

/** The primary's side: answers `worker`'s batches from `store` (the one memory store of the cluster). */
export function serveClusterRateLimits(store: MemoryRateLimitStore, worker: IpcChannel): void {
  worker.on('message', (m) => {
    if (!isBatch(m) || !Array.isArray(m.q)) return;
    const d: number[] = [];
    let now: number | undefined;
    for (let i = 0; i + 2 < m.q.length; i += 3) {
      const nowUs = m.q[i + 2];
      const decision = store.consumeSync(String(m.q[i]), Number(m.q[i + 1]), typeof nowUs === 'number' ? nowUs : (now ??= store.clockUs()));
      d.push(decision.allowed ? 1 : 0, decision.remaining, decision.reset, decision.retryAfter, decision.report ? 1 : 0);
    }
    // A worker that is gone no longer waits for the answer.
    worker.send({ secsvc: 'rate-limit', id: m.id, d } satisfies DecisionBatch, () => undefined);
  });
}
