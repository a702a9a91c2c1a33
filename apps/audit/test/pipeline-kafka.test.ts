/**
 * The pipeline over a real Kafka broker (KRaft, started by the harness): outbox → relay → Kafka → consumer →
 * ClickHouse, with the broker restarted and the consumer killed mid-stream; every event is stored exactly once.
 */
import type pg from 'pg';
import type { ClickHouseClient, GeoIp, LogStore } from '@secsvc/audit-store';
import { appendEvent, createKafkaBus, createLogger, type EventBus, type Logger, type Subscription } from '@secsvc/shared';
import { kafkaUnavailable, startKafka, type KafkaTestBroker } from '@secsvc/dev/testing';
import { startConsumer } from '../src/consumer';
import { eventInput, startPipeline, storeDyingAfterInsert, until } from './support';

// Without the broker jars or java: under CI=true the suite runs and fails with the reason (CI must not pass on
// a missing dependency); elsewhere it is skipped and says why on stderr.
const missing = kafkaUnavailable();
const skip = missing !== undefined && process.env.CI !== 'true';
if (skip) process.stderr.write(`SKIPPED "audit pipeline over Kafka": ${missing}\n`);
const describeKafka = skip ? describe.skip : describe; // skip reason: no Kafka install outside CI (see above)

describeKafka('audit pipeline over Kafka', () => {
  let broker: KafkaTestBroker;
  let pipeline: Awaited<ReturnType<typeof startPipeline>>;
  let logger: Logger;
  let pool: pg.Pool;
  let ch: ClickHouseClient;
  let store: LogStore;
  let consumerBus: EventBus;
  let geo: GeoIp;

  beforeAll(async () => {
    broker = await startKafka();
    pipeline = await startPipeline(() => createKafkaBus({ brokers: broker.brokers, logger: createLogger('audit-kafka-test', process.env.TEST_LOG_LEVEL ?? 'silent'), clientId: 'svc' }));
    ({ logger, pool, ch, store, geo } = pipeline);
    consumerBus = await createKafkaBus({ brokers: broker.brokers, logger, clientId: 'audit' });
  }, 180_000);
  afterAll(async () => {
    await consumerBus?.close();
    await pipeline?.close();
    await broker?.stop();
  }, 60_000);

  const count = () => store.count({ environment: 'live' });
  const duplicates = async () =>
    (await ch.query({ query: 'SELECT id FROM audit_logs GROUP BY id HAVING count() > 1', format: 'JSONEachRow' })).json();

  test('events arrive exactly once across a broker restart and a consumer killed after its insert', async () => {
    // The first two batches are stored but "the process dies" before the position is committed.
    const { store: crashing, calls } = storeDyingAfterInsert(store);
    let sub: Subscription | undefined = await startConsumer({ bus: consumerBus, store: crashing, geo, logger, maxBatchSize: 50, maxWaitMs: 50 });
    try {
      for (let i = 0; i < 200; i++) await appendEvent(pool, eventInput(i));
      await until(async () => (await count()) >= 100, 90_000);
      await broker.restart({ signal: 'SIGKILL' });
      for (let i = 200; i < 400; i++) await appendEvent(pool, eventInput(i));
      // A consumer replaced mid-stream (a new audit process): it resumes from the committed position.
      await sub.stop();
      sub = await startConsumer({ bus: consumerBus, store, geo, logger, maxBatchSize: 50, maxWaitMs: 50 });
      const state = async () => ({
        stored: await count(),
        unpublished: (await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0].n,
      });
      await until(async () => (await count()) >= 400, 240_000, state);
      await new Promise((r) => setTimeout(r, 500));
      expect(await count()).toBe(400);
      expect(await duplicates()).toEqual([]);
      expect(calls()).toBeGreaterThan(2);
      const { rows } = await pool.query('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL');
      expect(rows[0].n).toBe(0);
    } finally {
      await sub?.stop();
    }
  }, 360_000);
});
