/**
 * The memory store of a gateway cluster (rate-limit/cluster-store.ts) over a channel that behaves like the
 * cluster's IPC (asynchronous, JSON on the wire): the same contract as the other stores, one message per
 * event-loop turn, and the fail modes when the primary does not answer. That workers share the one store is
 * shown with real processes in apps/gateway-e2e/test/cluster.test.ts.
 */
import { EventEmitter } from 'node:events';
import { ClusterRateLimitStore, serveClusterRateLimits, type IpcChannel } from '../../src/rate-limit/cluster-store';
import { RateLimiter, RateLimitUnavailable } from '../../src/rate-limit/limiter';
import { MemoryRateLimitStore } from '../../src/rate-limit/memory-store';
import { describeStoreContract, fresh, T0 } from './store-contract';

/** Two ends of a channel: each message is delivered on a later turn, as JSON (what node:cluster sends). */
function channelPair(options: { deliver?: () => boolean } = {}) {
  const sent: unknown[] = [];
  const end = (peer: () => EventEmitter, own: EventEmitter): IpcChannel => ({
    send: (message, callback) => {
      sent.push(message);
      const wire = JSON.stringify(message);
      setImmediate(() => {
        callback(null);
        if (options.deliver?.() ?? true) peer().emit('message', JSON.parse(wire));
      });
    },
    on: (event, listener) => own.on(event, listener),
  });
  const worker = new EventEmitter();
  const primary = new EventEmitter();
  return { sent, workerEnd: end(() => primary, worker), primaryEnd: end(() => worker, primary) };
}

function cluster(options: { deliver?: () => boolean; timeoutMs?: number } = {}) {
  const { sent, workerEnd, primaryEnd } = channelPair(options);
  const primaryStore = new MemoryRateLimitStore();
  serveClusterRateLimits(primaryStore, primaryEnd);
  return { sent, store: new ClusterRateLimitStore(workerEnd, options.timeoutMs), primaryStore };
}

const shared = cluster().store;
describeStoreContract('cluster (the primary memory store over IPC)', () => shared);

describe('cluster store', () => {
  it('decides in the primary: two workers share one budget', async () => {
    const { workerEnd, primaryEnd } = channelPair();
    const { workerEnd: otherEnd, primaryEnd: otherPrimaryEnd } = channelPair();
    const primaryStore = new MemoryRateLimitStore();
    serveClusterRateLimits(primaryStore, primaryEnd);
    serveClusterRateLimits(primaryStore, otherPrimaryEnd);
    const [a, b] = [new ClusterRateLimitStore(workerEnd), new ClusterRateLimitStore(otherEnd)];
    const subject = fresh('ip');
    const decisions = [];
    for (let i = 0; i < 6; i++) decisions.push(await (i % 2 ? a : b).consume(subject, 4, T0));
    expect(decisions.map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ]);
    // The first refusal of the window is reported once, across workers.
    expect(decisions.map((d) => d.report)).toEqual([false, false, false, false, true, false]);
    expect(primaryStore.size).toBe(1);
  });

  it("sends the calls of one event-loop turn as one message, answered in order; the primary's clock without an injected one", async () => {
    const { sent, store } = cluster();
    const subjects = [fresh(), fresh(), fresh()];
    const before = Math.floor(Date.now() / 1000);
    const decisions = await Promise.all([store.consume(subjects[0]!, 2), store.consume(subjects[0]!, 2), store.consume(subjects[0]!, 2), store.consume(subjects[1]!, 5), store.consume(subjects[2]!, 1)]);
    expect(sent).toHaveLength(2); // one batch, one answer
    expect(decisions.map((d) => [d.allowed, d.limit, d.remaining])).toEqual([
      [true, 2, 1],
      [true, 2, 0],
      [false, 2, 0],
      [true, 5, 4],
      [true, 1, 0],
    ]);
    expect(decisions[0]!.reset).toBeGreaterThanOrEqual(before + 30);
  });

  it('fails when the primary does not answer in time: fail-open limits the worker on its own, fail-closed refuses', async () => {
    const { store } = cluster({ deliver: () => false, timeoutMs: 50 });
    await expect(store.consume(fresh(), 3, T0)).rejects.toThrow('did not answer in time');
    const errors: unknown[] = [];
    const health = { failed: (_use: 'rate_limit', err: unknown) => void errors.push(err), succeeded: () => undefined };
    const open = new RateLimiter({ store, failMode: 'open', health, clockUs: () => T0 });
    const subject = fresh();
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push((await open.consume(subject, 2)).allowed);
    expect(answers).toEqual([true, true, false]);
    expect(errors).toHaveLength(3);
    const closed = new RateLimiter({ store, failMode: 'closed', clockUs: () => T0 });
    await expect(closed.consume(fresh(), 2)).rejects.toBeInstanceOf(RateLimitUnavailable);
  });

  it('fails at once when the channel is closed', async () => {
    const store = new ClusterRateLimitStore({ send: (_m, callback) => callback(new Error('channel closed')), on: () => undefined });
    await expect(store.consume(fresh(), 3, T0)).rejects.toThrow('channel closed');
  });
});
