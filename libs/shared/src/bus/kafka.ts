import { Producer as KafkaProducer, ProduceAcks, stringSerializers, type MessageToProduce, type ProducerOptions } from '@platformatic/kafka';
import { Backoff, backoffDelay } from '../backoff';
import type * as Lz4 from 'lz4-napi';
import {
  CompressionCodecs,
  CompressionTypes,
  type SASLOptions,
  Kafka,
  logLevel,
  type Admin,
  type Consumer,
  type EachBatchPayload,
  type KafkaMessage,
  type logCreator,
} from 'kafkajs';
import type { Logger } from '../logger';
import { DEFAULT_KAFKA_COMPRESSION, type KafkaCompression } from './kafka-lazy';
import { Waker } from '../waker';
import { TRACEPARENT } from '../tracing/traceparent';
import {
  DEFAULT_MAX_BATCH_SIZE,
  DEFAULT_MAX_WAIT_MS,
  type BatchHandler,
  type BusPosition,
  type BusRecord,
  type EventBus,
  type SubscribeOptions,
  type Subscription,
  showReceived,
} from './port';

/**
 * The Kafka event bus (distributed profile). Publishing is on @platformatic/kafka, subscribing and topic
 * administration on kafkajs: kafkajs spent 24 ms of CPU per 1,000 records publishing (the relay's whole cost
 * on Kafka), @platformatic/kafka 8 to 11 (bench/RESULTS.md); its consumer was not cheaper than kafkajs's.
 * @platformatic/kafka is pinned to 1.22.0, its newest release that runs on Node 20.
 *
 * - Publishing: one idempotent producer per bus (acks from all in-sync replicas), records keyed by
 *   BusRecord.key and placed on partitions as Java clients and kafkajs place them (murmur2 of the key, made
 *   positive, modulo the partition count: one key stays on one partition, in order, whichever client wrote
 *   it), the record id in header `id` (its trace context, if any, in header `traceparent`;
 *   BusRecord.mayRepeat in `secsvc-may-repeat`), each request's record batch compressed (`compression`,
 *   default lz4: DEFAULT_KAFKA_COMPRESSION). A publish goes as requests of at most PUBLISH_CHUNK_BYTES,
 *   one at a time (the client allows an idempotent producer one request in flight), each retried by the client
 *   with its sequence numbers (the broker drops a retry that did land) for as long as the error is retriable
 *   (the client retries an idempotent producer's requests without limit; the publish's deadline ends that).
 *   When the client gives up on a request (an error it does not retry, such as a response it cannot read from
 *   a broker still starting after a crash), the producer is replaced and the
 *   request sent again after a backoff: the failed attempt's sequence numbers are never used again, for
 *   records that could be dropped as duplicates of a write that did land (so a record may land twice). publish()
 *   resolves once the broker acknowledged every record; it fails at once when the broker refuses the records
 *   themselves (isPermanentPublishError), and after publishTimeoutMs without every acknowledgement.
 * - Topics are created on demand (admin createTopics, `partitions` partitions) before the first publish or
 *   subscribe, so the broker's auto-creation may stay off.
 * - Subscribing: one kafkajs consumer per subscription in the SubscribeOptions.group consumer group, from the
 *   beginning for a group without positions, auto-resolve and auto-commit off. Fetched records go to a buffer
 *   and the fetch position moves on (so the next fetch overlaps the handler); a batch is handed over when
 *   maxBatchSize records are buffered, or when the last one went maxWaitMs ago (at once after a quiet
 *   spell). The group's committed position moves only after the handler resolved for the batch. When it throws, nothing is committed, every partition in
 *   the batch or the buffer is sought back to its first unhandled record and the buffer is dropped: the same
 *   records come again after a backoff, none skipped.
 * - A rebalance drops the buffer (kafkajs fetches again from the committed positions), so a record may be
 *   handed over twice, never lost: at least once, per-key order within a partition's run.
 */

export interface KafkaBusOptions {
  /** Bootstrap addresses of broker listeners (never a KRaft controller listener). */
  brokers: string[];
  logger: Logger;
  clientId?: string;
  /** Partitions of each topic the adapter creates (default 6). Existing topics are left as they are. */
  partitions?: number;
  /** Replicas of each topic it creates (default: the broker's default.replication.factor). */
  replicationFactor?: number;
  /** TLS to the brokers (system CAs and NODE_EXTRA_CA_CERTS, unless `ca` is given). */
  ssl?: boolean;
  /** With `ssl`: the CA certificates (PEM) the brokers' certificates must chain to, instead of the system's. */
  ca?: string;
  /** SASL authentication. */
  sasl?: { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512'; username: string; password: string };
  /**
   * How long the group waits for a silent member before handing its partitions to others (default 10 s; the
   * broker accepts 6 s to 30 min by default). A consumer that restarts after losing the broker joins as a new
   * member, so its partitions wait this long.
   */
  sessionTimeoutMs?: number;
  /**
   * How long a publish may wait for the brokers' acknowledgement before it fails (default 60 s: a broker
   * restart is retried through, while a client the brokers refuse, e.g. after its SCRAM password changed,
   * fails the relay's round instead of holding it; the client retries such refusals without end).
   */
  publishTimeoutMs?: number;
  /**
   * How published record batches are compressed (default lz4). Subscriptions read all three whatever they
   * publish with, so producers can switch without touching consumers.
   */
  compression?: KafkaCompression;
}

/**
 * lz4-napi (a native module: a prebuilt binary per platform), loaded on first use, so a platform without its
 * binary can still run the bus with KAFKA_COMPRESSION gzip or none (createKafkaBus refuses lz4 there, naming
 * the cause); a subscription then fails on an lz4 batch with that cause instead of at start.
 */
let lz4: typeof Lz4 | undefined;
function lz4Module(): typeof Lz4 {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy load, see above
  lz4 ??= require('lz4-napi') as typeof Lz4;
  return lz4;
}

/**
 * kafkajs reads gzip itself and lz4 through a codec registered here (process-wide, as kafkajs keeps its
 * codecs): the LZ4 frame format, which Kafka uses for record batches since message format 1. It runs on
 * libuv's thread pool, off the JavaScript thread; the publishing client (@platformatic/kafka) compresses with
 * its own synchronous calls, on the JavaScript thread (about 1 µs per event for lz4, 2.3 for gzip).
 */
const LZ4_CODEC = {
  async compress(encoder: { buffer: Buffer }): Promise<Buffer> {
    return lz4Module().compressFrame(encoder.buffer);
  },
  async decompress(buffer: Buffer): Promise<Buffer> {
    return lz4Module().decompressFrame(buffer);
  },
};
CompressionCodecs[CompressionTypes.LZ4] = () => LZ4_CODEC;

export const DEFAULT_KAFKA_PARTITIONS = 6;
/** The header carrying BusRecord.id. */
export const KAFKA_ID_HEADER = 'id';
/** The header of a record the publisher may have published before (BusRecord.mayRepeat). */
const MAY_REPEAT = 'secsvc-may-repeat';
/** A publish is sent in requests of at most this many bytes of keys, values and ids (the broker's limit is 1 MiB per partition batch). */
const PUBLISH_CHUNK_BYTES = 512 * 1024;
/** How long a fetch waits on the broker when there is nothing to read (also bounds how long stop() waits for it). */
const FETCH_WAIT_MS = 500;
const DEFAULT_SESSION_TIMEOUT_MS = 10_000;
const RETRY = { initialRetryTime: 100, maxRetryTime: 2000, retries: 10 };
/**
 * The delay between the producer's retries of one request (network errors and errors the broker calls
 * retriable). Their number is not ours to set: @platformatic/kafka retries an idempotent producer's requests
 * without limit (it overrides `retries`), so publishTimeoutMs is what bounds a publish.
 */
const PRODUCE_RETRY_DELAY_MS = 500;
const DEFAULT_PUBLISH_TIMEOUT_MS = 60_000;

/** One publish's state, shared by its deadline and its sending loop. */
interface PublishAttempt {
  expired: boolean;
  /** The last error a send failed with (the deadline's error carries it). */
  lastError?: unknown;
}

/**
 * Broker answers no producer would get otherwise for the same records (too large, malformed, not allowed):
 * sending them again with a new producer cannot help, so the publish fails at once with the broker's reason
 * (the relay's next round meets it again and logs it). Producer-state answers (sequence numbers, epochs) are
 * not here: a new producer is their remedy.
 */
const PERMANENT_BROKER_ERRORS = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'INVALID_TOPIC_EXCEPTION',
  'INVALID_REQUIRED_ACKS',
  'TOPIC_AUTHORIZATION_FAILED',
  'CLUSTER_AUTHORIZATION_FAILED',
  'POLICY_VIOLATION',
]);

/** One error of a failure's tree: its client code, broker error name, message and the errors under it. */
interface ErrorNode {
  code?: unknown;
  apiId?: unknown;
  message?: unknown;
  inner: unknown[];
}

/**
 * Every error in a failure's tree, each once: @platformatic/kafka aggregates a failure's causes (each attempt's
 * after retries, each broker answer's) in `errors`, Node's errors chain theirs in `cause`.
 */
function errorTree(err: unknown): ErrorNode[] {
  const nodes: ErrorNode[] = [];
  const seen = new Set<unknown>();
  const walk = (e: unknown): void => {
    if (!e || typeof e !== 'object' || seen.has(e)) return;
    seen.add(e);
    const x = e as { code?: unknown; apiId?: unknown; message?: unknown; errors?: unknown; cause?: unknown };
    const inner = [...(Array.isArray(x.errors) ? x.errors : []), ...(x.cause ? [x.cause] : [])];
    nodes.push({ code: x.code, apiId: x.apiId, message: x.message, inner });
    inner.forEach(walk);
  };
  walk(err);
  return nodes;
}

/**
 * What a failed send says, for logs and errors: the client's own message is only "Producing messages
 * failed.", so the innermost messages of its tree are listed instead, each once (with the broker's error
 * name), at most five.
 */
export function kafkaErrorText(err: unknown): string {
  const found: string[] = [];
  for (const e of errorTree(err)) {
    if (e.inner.length) continue;
    const text = `${String(e.message)}${typeof e.apiId === 'string' ? ` (${e.apiId})` : ''}`;
    if (!found.includes(text)) found.push(text);
  }
  if (!found.length) return String((err as Error)?.message ?? err);
  return found.length > 5 ? `${found.slice(0, 5).join('; ')}; …` : found.join('; ');
}

/** Whether a failed send holds, anywhere in its tree, a misuse of the client or a broker answer in PERMANENT_BROKER_ERRORS. */
export function isPermanentPublishError(err: unknown): boolean {
  return errorTree(err).some((e) => e.code === 'PLT_KFK_USER' || (e.code === 'PLT_KFK_PROTOCOL' && typeof e.apiId === 'string' && PERMANENT_BROKER_ERRORS.has(e.apiId)));
}

/**
 * kafkajs logs through our logger, quietly: its WARN and ERROR lines (mostly retried, transient conditions:
 * a broker restarting, a coordinator loading) become warnings; nothing below that is produced.
 */
export function kafkaLogCreator(logger: Logger): logCreator {
  return () =>
    ({ namespace, level, log }) => {
      const { message, timestamp: _timestamp, logger: _name, stack: _stack, ...fields } = log as Record<string, unknown> & { message: string };
      if (level === logLevel.ERROR || level === logLevel.WARN) logger.warn({ kafka: namespace, ...fields }, `kafka: ${message}`);
      else logger.debug({ kafka: namespace, ...fields }, `kafka: ${message}`);
    };
}

export async function createKafkaBus(options: KafkaBusOptions): Promise<EventBus> {
  if (options.brokers.length === 0) throw new Error('Kafka event bus: no brokers given');
  if ((options.compression ?? DEFAULT_KAFKA_COMPRESSION) === 'lz4') {
    try {
      lz4Module();
    } catch (err) {
      throw new Error(`Kafka event bus: lz4 compression (KAFKA_COMPRESSION, default lz4) needs lz4-napi, which cannot be loaded here (${(err as Error).message}); set KAFKA_COMPRESSION=gzip`, { cause: err });
    }
  }
  const kafka = new Kafka({
    clientId: options.clientId ?? 'secsvc',
    brokers: options.brokers,
    ssl: options.ssl && options.ca ? { ca: [options.ca] } : options.ssl,
    // One object for the three mechanisms; kafkajs types each mechanism's options separately.
    sasl: options.sasl as SASLOptions | undefined,
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(options.logger),
    connectionTimeout: 3000,
    retry: RETRY,
  });
  const admin = kafka.admin();
  await admin.connect();
  return new KafkaBus(kafka, admin, options);
}

class KafkaBus implements EventBus {
  readonly kind = 'kafka' as const;
  private readonly topics = new Map<string, Promise<void>>();
  private readonly subscriptions = new Set<KafkaSubscription>();
  private producer: KafkaProducer<string, string, string, string> | undefined;
  /** Publishes go one at a time (ordered per key across calls, one producer session at a time). */
  private publishing: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly options: KafkaBusOptions,
  ) {}

  /** Creates the topic unless it exists (once per topic and bus; a failure is retried on the next call). */
  ensureTopic(topic: string): Promise<void> {
    let created = this.topics.get(topic);
    if (!created) {
      created = this.admin
        .createTopics({
          waitForLeaders: true,
          topics: [{ topic, numPartitions: this.options.partitions ?? DEFAULT_KAFKA_PARTITIONS, replicationFactor: this.options.replicationFactor ?? -1 }],
        })
        .then(() => undefined);
      this.topics.set(topic, created);
      created.catch(() => this.topics.delete(topic));
    }
    return created;
  }

  /** The producer (it connects, and gets its producer id, on its first send). */
  private currentProducer(): KafkaProducer<string, string, string, string> {
    this.producer ??= new KafkaProducer(producerOptions(this.options));
    return this.producer;
  }

  async publish(topic: string, records: BusRecord[]): Promise<void> {
    if (this.closed) throw new Error('event bus closed');
    if (records.length === 0) return;
    await this.ensureTopic(topic);
    if (this.closed) throw new Error('event bus closed');
    const run = this.publishing.then(async () => {
      const timeoutMs = this.options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS;
      const attempt: PublishAttempt = { expired: false };
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          attempt.expired = true;
          // Closing ends the retries of a send still in flight (the client retries a refused SCRAM handshake
          // without end); the sending loop then sees the deadline and stops.
          if (this.producer) void this.dropProducer(this.producer);
          const last = attempt.lastError ? `; last error: ${kafkaErrorText(attempt.lastError)}` : '';
          reject(new Error(`Kafka publish: not acknowledged within ${timeoutMs} ms (brokers unreachable, or refusing this client${last})`, { cause: attempt.lastError }));
        }, timeoutMs);
      });
      const sent = this.sendUntilAcknowledged(topic, records, attempt);
      sent.catch(() => undefined); // settled after the deadline: nobody waits for it any more
      deadline.catch(() => undefined);
      try {
        await Promise.race([sent, deadline]);
      } finally {
        clearTimeout(timer);
      }
    });
    this.publishing = run.catch(() => undefined);
    await run;
  }

  /**
   * Sends the records' requests in order, each until the broker acknowledges it. The client retries
   * connection errors and retriable broker errors itself, without limit; when it gives up (an error it does
   * not retry, such as a response it cannot read from a broker that is still starting), the producer is
   * replaced and the request not yet acknowledged is sent again after a backoff, until the deadline. An answer
   * no producer would get otherwise (isPermanentPublishError) fails the publish at once.
   */
  private async sendUntilAcknowledged(topic: string, records: BusRecord[], attempt: PublishAttempt): Promise<void> {
    const backoff = new Backoff({ baseMs: 250, maxMs: 2_000 });
    for (const messages of chunks(topic, records)) {
      for (;;) {
        // Past the deadline (it also dropped the producer) nothing more is sent: the next publish has the producer.
        if (attempt.expired) throw new Error('Kafka publish: deadline passed');
        // (A publish under way when close() is called goes on to its end: close() waits for it.)
        const producer = this.currentProducer();
        try {
          await producer.send({ messages });
          backoff.reset();
          break;
        } catch (err) {
          attempt.lastError = err;
          await this.dropProducer(producer);
          if (attempt.expired || this.closed || isPermanentPublishError(err)) throw new Error(`Kafka publish failed: ${kafkaErrorText(err)}`, { cause: err });
          this.options.logger.warn({ topic, err: { message: kafkaErrorText(err) }, attempts: backoff.attempts + 1 }, 'kafka publish failed; sending again with a new producer');
          await new Promise((r) => setTimeout(r, backoff.next()));
        }
      }
    }
  }

  /**
   * Replaces the producer: a fresh producer id, so no sequence number of a failed attempt is ever reused
   * (records that landed in a write whose answer was lost may then come twice: at least once). Only `producer`
   * is dropped (an attempt that ends after its deadline leaves the next publish's producer alone); closing is
   * not waited for long.
   */
  private async dropProducer(producer: KafkaProducer<string, string, string, string>): Promise<void> {
    if (this.producer === producer) this.producer = undefined;
    await Promise.race([producer.close().catch(() => undefined), new Promise((r) => setTimeout(r, 1000).unref())]);
  }

  async subscribe(options: SubscribeOptions, handler: BatchHandler): Promise<Subscription> {
    if (this.closed) throw new Error('event bus closed');
    await this.ensureTopic(options.topic);
    const sub = new KafkaSubscription(this.kafka, this.options, options, handler, () => this.subscriptions.delete(sub));
    this.subscriptions.add(sub);
    try {
      await sub.start();
    } catch (err) {
      await sub.stop();
      throw err;
    }
    return sub;
  }

  /** Summed over the topic's partitions: the high watermark minus the group's committed offset (else the low watermark). */
  async lag(topic: string, group: string): Promise<number> {
    const [ends, [committed]] = await Promise.all([this.admin.fetchTopicOffsets(topic), this.admin.fetchOffsets({ groupId: group, topics: [topic] })]);
    const at = new Map((committed?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
    let lag = 0;
    for (const p of ends) {
      const position = at.get(p.partition) ?? -1;
      lag += Math.max(0, Number(p.high) - (position >= 0 ? position : Number(p.low)));
    }
    return lag;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.subscriptions].map((s) => s.stop()));
    await this.publishing;
    await this.producer?.close();
    await this.admin.disconnect();
  }
}

/**
 * The partition of a key as Java clients and kafkajs's default partitioner pick it: murmur2 of the key's UTF-8
 * bytes, made positive (the sign bit cleared); the producer takes it modulo the topic's partition count.
 */
export function keyPartition(key: string): number {
  return murmur2(Buffer.from(key, 'utf8')) & 0x7fffffff;
}

const M = 0x5bd1e995;
/**
 * Kafka's murmur2 (seed 0x9747b28c) in 32-bit integer arithmetic: Math.imul multiplies modulo 2^32 as Java's
 * int does, so there is no BigInt per step (the client's own murmur2 computes in BigInt, about a microsecond a
 * record on the produce path). Returns the signed 32-bit hash.
 */
function murmur2(bytes: Buffer): number {
  const length = bytes.length;
  let h = 0x9747b28c ^ length;
  let i = 0;
  for (; i + 4 <= length; i += 4) {
    let k = bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  const rest = length - i;
  if (rest > 0) {
    if (rest === 3) h ^= bytes[i + 2]! << 16;
    if (rest >= 2) h ^= bytes[i + 1]! << 8;
    h ^= bytes[i]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * The producer's settings: idempotent, acks from all in-sync replicas, compressed batches, string serialisation,
 * Java's partitioning.
 */
export function producerOptions(options: KafkaBusOptions): ProducerOptions<string, string, string, string> {
  return {
    clientId: options.clientId ?? 'secsvc',
    bootstrapBrokers: options.brokers,
    ...(options.ssl && { tls: options.ca ? { ca: options.ca } : {} }),
    ...(options.sasl && { sasl: { mechanism: SASL_MECHANISMS[options.sasl.mechanism], username: options.sasl.username, password: options.sasl.password } }),
    connectTimeout: 3000,
    retryDelay: PRODUCE_RETRY_DELAY_MS,
    idempotent: true,
    acks: ProduceAcks.ALL,
    compression: options.compression ?? DEFAULT_KAFKA_COMPRESSION,
    autocreateTopics: false,
    serializers: stringSerializers,
    partitioner: (message) => keyPartition(message.key ?? ''),
  };
}

const SASL_MECHANISMS = { plain: 'PLAIN', 'scram-sha-256': 'SCRAM-SHA-256', 'scram-sha-512': 'SCRAM-SHA-512' } as const;

/** Splits a publish into requests of bounded size, keeping the order. */
function chunks(topic: string, records: BusRecord[]): Array<Array<MessageToProduce<string, string, string, string>>> {
  const out: Array<Array<MessageToProduce<string, string, string, string>>> = [];
  let current: Array<MessageToProduce<string, string, string, string>> = [];
  let bytes = 0;
  for (const r of records) {
    const size = Buffer.byteLength(r.key) + Buffer.byteLength(r.value) + Buffer.byteLength(r.id) + (r.traceparent?.length ?? 0) + 64;
    if (current.length > 0 && bytes + size > PUBLISH_CHUNK_BYTES) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push({ topic, key: r.key, value: r.value, headers: { [KAFKA_ID_HEADER]: r.id, ...(r.traceparent && { [TRACEPARENT]: r.traceparent }), ...(r.mayRepeat && { [MAY_REPEAT]: '1' }) } });
    bytes += size;
  }
  if (current.length > 0) out.push(current);
  return out;
}

/** A fetched message as a record (its position set; offsets are below 2^53 in any log that could exist). */
function toRecord(topic: string, partition: number, m: KafkaMessage): BusRecord & { position: BusPosition } {
  const headers = m.headers;
  const header = headers?.[KAFKA_ID_HEADER];
  const id = Array.isArray(header) ? header[0] : header;
  const offset = Number(m.offset);
  const record: BusRecord & { position: BusPosition } = {
    // A record from a foreign producer without the header still gets a stable id.
    id: id === undefined ? `${topic}/${partition}/${offset}` : id.toString(),
    key: m.key?.toString() ?? '',
    value: m.value?.toString() ?? '',
    position: { partition, offset },
  };
  const trace = headers?.[TRACEPARENT];
  const traceparent = Array.isArray(trace) ? trace[0] : trace;
  if (traceparent !== undefined) record.traceparent = traceparent.toString();
  if (headers?.[MAY_REPEAT] !== undefined) record.mayRepeat = true;
  return record;
}

/** A record fetched and not yet handed over: where it was read is always known. */
type Buffered = BusRecord & { position: BusPosition };

class KafkaSubscription implements Subscription {
  private readonly consumer: Consumer;
  private readonly topic: string;
  private readonly maxBatch: number;
  private readonly maxWaitMs: number;
  private readonly onReceived: SubscribeOptions['onReceived'];
  /** Fetched, not yet handed over, in fetch order (offset order within each partition). */
  private buffer: Buffered[] = [];
  /** Bumped whenever the buffer is dropped (a failed batch, a rebalance): batches being added stop. */
  private epoch = 0;
  /** Per partition, the offset to commit next (last handled + 1), until a commit saved it. */
  private readonly toCommit = new Map<number, number>();
  private assigned = new Set<number>();
  private readonly dispatcher = new Waker();
  /** When the last batch was handed to the handler (ms since the epoch). */
  private lastHandedAt = 0;
  private roomWaiters: Array<() => void> = [];
  private stopping = false;
  private loop: Promise<void> | undefined;
  private stopped: Promise<void> | undefined;

  private readonly logger: Logger;

  constructor(
    kafka: Kafka,
    bus: KafkaBusOptions,
    options: SubscribeOptions,
    private readonly handler: BatchHandler,
    private readonly onStopped: () => void,
  ) {
    this.logger = bus.logger;
    this.topic = options.topic;
    this.maxBatch = Math.max(1, options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE);
    this.maxWaitMs = Math.max(0, options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS);
    this.onReceived = options.onReceived;
    this.consumer = kafka.consumer({
      groupId: options.group,
      allowAutoTopicCreation: false,
      maxWaitTimeInMs: FETCH_WAIT_MS,
      sessionTimeout: bus.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS,
      heartbeatInterval: Math.min(3000, Math.floor((bus.sessionTimeoutMs ?? DEFAULT_SESSION_TIMEOUT_MS) / 5)),
      // kafkajs restarts a crashed consumer forever (each start retries, crashes, is restarted); once this
      // subscription is stopping, a crash ends it instead, or a restart scheduled around stop() would keep
      // reconnecting to a broker that may be gone, and keep the process alive.
      retry: { ...RETRY, restartOnFailure: async () => !this.stopping },
    });
    this.consumer.on(this.consumer.events.GROUP_JOIN, ({ payload }) => {
      // kafkajs starts again from the committed positions: whatever is buffered would come twice.
      this.dropBuffer();
      this.assigned = new Set(payload.memberAssignment[this.topic] ?? []);
      for (const p of [...this.toCommit.keys()]) if (!this.assigned.has(p)) this.toCommit.delete(p);
    });
    // kafkajs resolves commitOffsets without committing when its runner is not running (mid-restart), so a
    // position counts as saved only when the broker confirmed it.
    this.consumer.on(this.consumer.events.COMMIT_OFFSETS, ({ payload }) => {
      for (const t of payload.topics) {
        if (t.topic !== this.topic) continue;
        for (const { partition, offset } of t.partitions) {
          const p = Number(partition);
          if (this.toCommit.get(p) === Number(offset)) this.toCommit.delete(p);
        }
      }
    });
    this.consumer.on(this.consumer.events.CRASH, ({ payload }) => {
      const fields = { topic: this.topic, group: options.group, err: { message: payload.error.message } };
      if (payload.restart) this.logger.warn(fields, 'kafka consumer restarting after an error');
      else this.logger.error(fields, 'kafka consumer stopped after an error');
    });
  }

  async start(): Promise<void> {
    await this.consumer.connect();
    await this.consumer.subscribe({ topics: [this.topic], fromBeginning: true });
    await this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: (payload) => this.receive(payload),
    });
    this.loop = this.dispatch();
  }

  /**
   * kafkajs hands over one partition's fetched records: buffer them, moving the fetch position along. Whether
   * the subscription still takes them can change only while this waits, so it is checked then, not per record;
   * the fetch position is moved to the last record buffered before each wait and at the end.
   */
  private async receive({ batch, resolveOffset, heartbeat, isRunning, isStale }: EachBatchPayload): Promise<void> {
    const epoch = this.epoch;
    const current = () => epoch === this.epoch && !this.stopping && isRunning() && !isStale();
    if (!current()) return;
    let resolved: string | undefined;
    let last: string | undefined;
    const moveFetchPosition = () => {
      if (last !== resolved) resolveOffset((resolved = last)!);
    };
    for (const message of batch.messages) {
      if (this.buffer.length >= 2 * this.maxBatch) {
        moveFetchPosition();
        this.dispatcher.wake();
        do {
          // Back-pressure while the handler catches up; the group must still hear from us.
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 1000);
            this.roomWaiters.push(() => (clearTimeout(timer), resolve()));
          });
          if (!current()) return;
          await heartbeat();
          if (!current()) return;
        } while (this.buffer.length >= 2 * this.maxBatch);
      }
      const record = toRecord(batch.topic, batch.partition, message);
      showReceived(this.onReceived, record);
      this.buffer.push(record);
      last = message.offset;
    }
    moveFetchPosition();
    this.dispatcher.wake();
  }

  private freeRoom(): void {
    const waiters = this.roomWaiters;
    this.roomWaiters = [];
    for (const w of waiters) w();
  }

  private dropBuffer(): void {
    this.epoch++;
    this.buffer = [];
    this.freeRoom();
  }

  /** Hands over batches one at a time; commits after each one the handler resolved. */
  private async dispatch(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const oldest = this.buffer[0];
      // A partial batch goes once the last one went maxWaitMs ago (at once after a quiet spell).
      const due = oldest ? this.lastHandedAt + this.maxWaitMs - Date.now() : FETCH_WAIT_MS;
      if (!oldest || (this.buffer.length < this.maxBatch && due > 0)) {
        await this.dispatcher.sleep(Math.max(1, due));
        continue;
      }
      const batch = this.buffer.splice(0, this.maxBatch);
      this.lastHandedAt = Date.now();
      this.freeRoom();
      try {
        await this.handler(batch);
      } catch (err) {
        failures++;
        this.logger.warn({ topic: this.topic, err: { message: (err as Error).message }, failures }, 'event bus handler failed; the batch comes again');
        this.rewind(batch);
        await this.dispatcher.sleep(backoffDelay(failures, { baseMs: 100, maxMs: 5000 }));
        continue;
      }
      failures = 0;
      for (const { position } of batch) {
        const next = position.offset + 1;
        if ((this.toCommit.get(position.partition) ?? -1) < next) this.toCommit.set(position.partition, next);
      }
      await this.commit();
    }
  }

  /** Seeks every partition with unhandled fetched records back to the first of them and drops the buffer. */
  private rewind(failed: Buffered[]): void {
    const first = new Map<number, number>();
    for (const { position } of [...failed, ...this.buffer]) {
      const seen = first.get(position.partition);
      if (seen === undefined || position.offset < seen) first.set(position.partition, position.offset);
    }
    this.dropBuffer();
    for (const [partition, offset] of first) this.consumer.seek({ topic: this.topic, partition, offset: String(offset) });
  }

  /** Saves the handled positions; a failed commit is kept and tried again after the next batch or at stop. */
  private async commit(): Promise<void> {
    const entries = [...this.toCommit].filter(([p]) => this.assigned.has(p));
    if (entries.length === 0) return;
    try {
      await this.consumer.commitOffsets(entries.map(([partition, offset]) => ({ topic: this.topic, partition, offset: String(offset) })));
    } catch (err) {
      this.logger.warn({ topic: this.topic, err: { message: (err as Error).message } }, 'event bus commit failed; retried with the next batch');
    }
  }

  stop(): Promise<void> {
    this.stopped ??= (async () => {
      this.stopping = true;
      this.dispatcher.wake();
      this.freeRoom();
      await this.loop;
      await this.commit();
      if (this.toCommit.size > 0) {
        this.logger.warn({ topic: this.topic, partitions: [...this.toCommit.keys()] }, 'event bus positions not saved at stop; those records come again');
      }
      await this.consumer.disconnect();
      this.onStopped();
    })();
    return this.stopped;
  }
}
