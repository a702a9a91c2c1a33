import { randomUUID } from 'node:crypto';
import type { BusRecord, EventBus } from '../src/bus/port';

/**
 * The behaviour every EventBus adapter must have, run against each real adapter (Postgres, Kafka).
 * `makeBus` returns a fresh client of the same underlying bus each time it is called (several clients of one
 * bus stand for several processes).
 */
export function describeBusContract(name: string, makeBus: () => Promise<EventBus>, timeoutMs = 60_000): void {
  describe(`${name} event bus contract`, () => {
    const buses: EventBus[] = [];
    const bus = async () => {
      const b = await makeBus();
      buses.push(b);
      return b;
    };
    afterEach(async () => {
      await Promise.all(buses.splice(0).map((b) => b.close()));
    });

    const records = (n: number, keys = ['a', 'b', 'c']): BusRecord[] =>
      Array.from({ length: n }, (_, i) => ({ id: `log_${String(i).padStart(6, '0')}`, key: keys[i % keys.length], value: JSON.stringify({ i }) }));
    const topic = () => `t-${randomUUID().slice(0, 8)}`;

    /** Subscribes and collects until `count` records arrived (or the deadline passed). */
    async function collect(b: EventBus, t: string, group: string, count: number, opts: { maxBatchSize?: number; fail?: (batch: BusRecord[]) => boolean } = {}) {
      const got: BusRecord[] = [];
      const batches: number[] = [];
      let done!: () => void;
      const finished = new Promise<void>((resolve) => (done = resolve));
      const sub = await b.subscribe({ topic: t, group, maxBatchSize: opts.maxBatchSize, maxWaitMs: 50 }, async (batch) => {
        if (opts.fail?.(batch)) throw new Error('handler failure (test)');
        batches.push(batch.length);
        got.push(...batch);
        if (got.length >= count) done();
      });
      const timer = setTimeout(done, timeoutMs - 5_000);
      await finished;
      clearTimeout(timer);
      return { got, batches, sub };
    }

    /** A record as published: without the position a subscription adds. */
    const published = ({ position: _position, ...r }: BusRecord): BusRecord => r;

    const perKey = (rs: BusRecord[]) => {
      const m = new Map<string, string[]>();
      for (const r of rs) m.set(r.key, [...(m.get(r.key) ?? []), r.id]);
      return m;
    };

    test(
      'delivers every published record, in publish order per key, in batches no larger than maxBatchSize',
      async () => {
        const b = await bus();
        const t = topic();
        const sent = records(250);
        await b.publish(t, sent.slice(0, 100));
        await b.publish(t, sent.slice(100));
        const { got, batches, sub } = await collect(b, t, 'g1', 250, { maxBatchSize: 40 });
        await sub.stop();
        expect(got.map((r) => r.id).sort()).toEqual(sent.map((r) => r.id).sort());
        expect(new Set(got.map((r) => r.id)).size).toBe(250);
        expect(perKey(got)).toEqual(perKey(sent));
        expect(Math.max(...batches)).toBeLessThanOrEqual(40);
        expect(published(got[0]!)).toEqual(sent.find((r) => r.id === got[0]!.id));
      },
      timeoutMs,
    );

    test(
      "carries a record's traceparent (tracing), and none for a record published without one",
      async () => {
        const b = await bus();
        const t = topic();
        const [plain, traced] = records(2, ['k']);
        const withTrace = { ...traced!, traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
        await b.publish(t, [plain!, withTrace]);
        const { got, sub } = await collect(b, t, 'g1', 2);
        await sub.stop();
        expect(got.map(published)).toEqual([plain, withTrace]);
        expect(got[0]).not.toHaveProperty('traceparent');
      },
      timeoutMs,
    );

    test(
      'a record published after subscribing arrives promptly',
      async () => {
        const b = await bus();
        const t = topic();
        await b.publish(t, records(1));
        const first = await collect(b, t, 'g1', 1);
        const started = Date.now();
        const later = new Promise<BusRecord[]>((resolve) => {
          void first.sub.stop().then(() =>
            b.subscribe({ topic: t, group: 'g1', maxWaitMs: 20 }, async (batch) => resolve(batch)),
          );
        });
        await new Promise((r) => setTimeout(r, 300));
        await b.publish(t, [{ id: 'log_late', key: 'z', value: '{}' }]);
        const batch = await later;
        expect(batch.map((r) => r.id)).toEqual(['log_late']);
        expect(Date.now() - started).toBeLessThan(timeoutMs / 2);
      },
      timeoutMs,
    );

    test(
      'a record after a quiet spell goes at once; partial batches go at most once per maxWaitMs, so a stream is batched',
      async () => {
        const b = await bus();
        const t = topic();
        const waitMs = 3_000;
        const batches: Array<{ ids: string[]; at: number }> = [];
        const sub = await b.subscribe({ topic: t, group: 'g1', maxWaitMs: waitMs }, async (batch) => void batches.push({ ids: batch.map((r) => r.id), at: Date.now() }));
        // A first record shows the subscription is running (a Kafka group takes a while to form)...
        await b.publish(t, [{ id: 'log_warm', key: 'a', value: '{}' }]);
        for (const deadline = Date.now() + timeoutMs / 3; batches.length === 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
        expect(batches.map((x) => x.ids)).toEqual([['log_warm']]);
        // ...then, after a quiet spell longer than maxWaitMs, a record does not wait for others.
        await new Promise((r) => setTimeout(r, waitMs + 200));
        const sentAt = Date.now();
        await b.publish(t, [{ id: 'log_first', key: 'a', value: '{}' }]);
        for (const deadline = Date.now() + waitMs * 2; batches.length === 1 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
        batches.shift();
        expect(batches.map((x) => x.ids)).toEqual([['log_first']]);
        expect(batches[0]!.at - sentAt).toBeLessThan(waitMs);
        // Records published one by one right after it join one batch, handed over once maxWaitMs passed.
        for (let i = 0; i < 5; i++) {
          await b.publish(t, [{ id: `log_next_${i}`, key: 'a', value: '{}' }]);
          await new Promise((r) => setTimeout(r, 30));
        }
        for (const deadline = Date.now() + waitMs * 3; batches.length < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
        await sub.stop();
        expect(batches.map((x) => x.ids)).toEqual([['log_first'], [0, 1, 2, 3, 4].map((i) => `log_next_${i}`)]);
        expect(batches[1]!.at - batches[0]!.at).toBeGreaterThanOrEqual(waitMs - 50);
      },
      timeoutMs,
    );

    test(
      'a failing handler gets the same records again and nothing is skipped',
      async () => {
        const b = await bus();
        const t = topic();
        const sent = records(30);
        await b.publish(t, sent);
        let failures = 0;
        const { got, sub } = await collect(b, t, 'g1', 30, { fail: () => failures++ < 2 });
        await sub.stop();
        expect(failures).toBeGreaterThanOrEqual(2);
        expect(new Set(got.map((r) => r.id))).toEqual(new Set(sent.map((r) => r.id)));
      },
      timeoutMs,
    );

    test(
      'gives each record its position: offsets grow in publish order within a partition, and a record handed over again keeps its own; mayRepeat is carried',
      async () => {
        const b = await bus();
        const t = topic();
        const sent = records(40).map((r, i) => (i % 4 === 0 ? { ...r, mayRepeat: true } : r));
        await b.publish(t, sent.slice(0, 25));
        await b.publish(t, sent.slice(25));
        const firstSeen = new Map<string, BusRecord['position']>();
        let failures = 0;
        const { got, sub } = await collect(b, t, 'g1', 40, {
          maxBatchSize: 10,
          // Each batch fails once: every record is handed over twice, the failed sight remembered.
          fail: (batch) => {
            const fresh = batch.filter((r) => !firstSeen.has(r.id));
            for (const r of fresh) firstSeen.set(r.id, r.position);
            if (fresh.length > 0) failures++;
            return fresh.length > 0;
          },
        });
        await sub.stop();
        expect(failures).toBeGreaterThan(0);
        expect(got.map(published).sort((x, y) => x.id.localeCompare(y.id))).toEqual(sent);
        for (const r of got) {
          expect(r.position).toEqual({ partition: expect.any(Number), offset: expect.any(Number) });
          expect(r.position).toEqual(firstSeen.get(r.id));
        }
        const byPartition = new Map<number, BusRecord[]>();
        for (const r of got) byPartition.set(r.position!.partition, [...(byPartition.get(r.position!.partition) ?? []), r]);
        for (const rs of byPartition.values()) {
          const offsets = rs.map((r) => r.position!.offset);
          expect(offsets).toEqual([...offsets].sort((x, y) => x - y));
          expect(new Set(offsets).size).toBe(offsets.length);
          // Publish order within the partition: sent ids ascend.
          expect(rs.map((r) => r.id)).toEqual(rs.map((r) => r.id).sort());
        }
      },
      timeoutMs,
    );

    test(
      'onReceived sees each record once it is read, before the handler gets that same object; what it throws is ignored',
      async () => {
        const b = await bus();
        const t = topic();
        const sent = records(30);
        await b.publish(t, sent);
        const received = new Set<BusRecord>();
        const handed: BusRecord[] = [];
        let unseen = 0;
        let done!: () => void;
        const finished = new Promise<void>((resolve) => (done = resolve));
        const sub = await b.subscribe(
          {
            topic: t,
            group: 'g1',
            maxBatchSize: 7,
            maxWaitMs: 50,
            onReceived: (r) => {
              received.add(r);
              throw new Error('ignored (test)');
            },
          },
          async (batch) => {
            for (const r of batch) if (!received.has(r)) unseen++;
            handed.push(...batch);
            if (handed.length >= 30) done();
          },
        );
        const timer = setTimeout(done, timeoutMs - 5_000);
        await finished;
        clearTimeout(timer);
        await sub.stop();
        expect(handed.map(published)).toEqual(expect.arrayContaining(sent));
        expect(handed).toHaveLength(30);
        expect(unseen).toBe(0);
      },
      timeoutMs,
    );

    test(
      'a group resumes after its last handled batch: a second client of the same group gets only the rest',
      async () => {
        const t = topic();
        const b1 = await bus();
        await b1.publish(t, records(20));
        const first = await collect(b1, t, 'g1', 20);
        await first.sub.stop();
        await b1.publish(t, records(5, ['k']).map((r) => ({ ...r, id: `${r.id}_second` })));
        const b2 = await bus();
        const second = await collect(b2, t, 'g1', 5);
        await second.sub.stop();
        expect(second.got.map((r) => r.id)).toEqual(['log_000000_second', 'log_000001_second', 'log_000002_second', 'log_000003_second', 'log_000004_second']);
      },
      timeoutMs,
    );

    test(
      'every group sees every record',
      async () => {
        const b = await bus();
        const t = topic();
        await b.publish(t, records(10));
        const g1 = await collect(b, t, 'g1', 10);
        const g2 = await collect(b, t, 'g2', 10);
        await Promise.all([g1.sub.stop(), g2.sub.stop()]);
        expect(g1.got).toHaveLength(10);
        expect(g2.got).toHaveLength(10);
      },
      timeoutMs,
    );

    test(
      'lag counts the records a group has not consumed: all for a new group, none once it caught up',
      async () => {
        const b = await bus();
        const t = topic();
        // A broker may answer "coordinator loading" for a while after it started: the gauge keeps its value then.
        const lag = async (group: string) => {
          for (let i = 0; ; i++) {
            try {
              return await b.lag!(t, group);
            } catch (err) {
              if (i >= 50) throw err;
              await new Promise((r) => setTimeout(r, 200));
            }
          }
        };
        await b.publish(t, records(30));
        expect(await lag('g1')).toBe(30);
        const g1 = await collect(b, t, 'g1', 30);
        // stop() resolves once the handled batches' positions are saved
        await g1.sub.stop();
        expect(await lag('g1')).toBe(0);
        await b.publish(t, records(5).map((r) => ({ ...r, id: `${r.id}_more` })));
        expect(await lag('g1')).toBe(5);
        expect(await lag('g2')).toBe(35);
      },
      timeoutMs,
    );
  });
}
