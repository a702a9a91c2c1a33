import { randomBytes } from 'node:crypto';
import { MultipleErrors, murmur2, Producer, NetworkError, OutOfBoundsError, ProtocolError, UserError } from '@platformatic/kafka';
import { Partitioners } from 'kafkajs';
import { isPermanentPublishError, kafkaErrorText, keyPartition, producerOptions } from './kafka';
import type * as KafkaAdapter from './kafka';
import { createLogger } from '../logger';

const logger = createLogger('kafka-spec', 'silent');

test('keys land on the partitions kafkajs (and Java clients) put them on, so a key keeps its partition across the change of client', () => {
  const kafkajs = Partitioners.DefaultPartitioner();
  const keys = ['', 'a', 'user_1', 'usr_01jb2xk3m4n5p6q7r8s9t0v1w2', 'ключ', '🔑 key', ...Array.from({ length: 2000 }, (_, i) => `${i}:${randomBytes(1 + (i % 40)).toString('base64')}`)];
  for (const count of [1, 3, 6, 7, 12, 50]) {
    const partitionMetadata = Array.from({ length: count }, (_, partitionId) => ({ partitionId, leader: 1, replicas: [1], isr: [1], partitionErrorCode: 0, offlineReplicas: [] }));
    for (const key of keys) {
      const ours = keyPartition(key) % count;
      expect([key, ours]).toEqual([key, kafkajs({ topic: 't', partitionMetadata, message: { key, value: 'v' } })]);
    }
  }
  // The keys cover the case that matters: murmur2 sets the sign bit for about half of them, and the client's own
  // default (the hash read unsigned) would put many of those on another partition.
  const moved = keys.filter((key) => (murmur2(key) >>> 0) % 6 !== keyPartition(key) % 6);
  expect(moved.length).toBeGreaterThan(keys.length / 5);
});

test("the producer is idempotent, waits for every in-sync replica, never creates topics, compresses with lz4 unless told otherwise, and takes the bus's TLS and SASL settings", () => {
  const base = producerOptions({ brokers: ['127.0.0.1:9092'], logger });
  expect(base).toMatchObject({ clientId: 'secsvc', bootstrapBrokers: ['127.0.0.1:9092'], idempotent: true, acks: -1, autocreateTopics: false, compression: 'lz4' });
  expect(producerOptions({ brokers: ['k:1'], logger, compression: 'none' }).compression).toBe('none');
  expect(producerOptions({ brokers: ['k:1'], logger, compression: 'gzip' }).compression).toBe('gzip');
  expect(base).not.toHaveProperty('tls');
  expect(base).not.toHaveProperty('sasl');
  const secured = producerOptions({ brokers: ['kafka:9093'], logger, clientId: 'identity', ssl: true, sasl: { mechanism: 'scram-sha-512', username: 'identity', password: 'pw' } });
  expect(secured).toMatchObject({ clientId: 'identity', tls: {}, sasl: { mechanism: 'SCRAM-SHA-512', username: 'identity', password: 'pw' } });
  expect(producerOptions({ brokers: ['k:1'], logger, sasl: { mechanism: 'plain', username: 'u', password: 'p' } }).sasl).toMatchObject({ mechanism: 'PLAIN' });
  // A CA of its own (KAFKA_CA_FILE) replaces the system's; without TLS it is not used.
  expect(producerOptions({ brokers: ['k:1'], logger, ssl: true, ca: 'PEM' }).tls).toEqual({ ca: 'PEM' });
  expect(producerOptions({ brokers: ['k:1'], logger, ca: 'PEM' })).not.toHaveProperty('tls');
  expect(producerOptions({ brokers: ['k:1'], logger, sasl: { mechanism: 'scram-sha-256', username: 'u', password: 'p' } }).sasl).toMatchObject({ mechanism: 'SCRAM-SHA-256' });
});

test('the client keeps an idempotent producer to one request in flight and retries it without limit (publishTimeoutMs is what bounds a publish)', async () => {
  const options = producerOptions({ brokers: ['127.0.0.1:9'], logger });
  const producer = new Producer(options);
  try {
    // The client sets these on the options it is given (@platformatic/kafka 1.22.0); the bus's docs rely on both.
    expect(options).toMatchObject({ maxInflights: 1, retries: Number.MAX_SAFE_INTEGER, retryDelay: 500 });
  } finally {
    await producer.close();
  }
});

test('a send is tried again with a new producer unless the broker refused the records themselves or the client was misused', () => {
  const afterRetries = (...errors: Error[]) => new MultipleErrors('produce failed 3 times.', errors);
  // Worth another producer: connections refused, an answer the client could not read, producer-state answers.
  expect(isPermanentPublishError(afterRetries(new NetworkError('Connection to 127.0.0.1:9092 failed.'), new OutOfBoundsError('Out of bounds.')))).toBe(false);
  expect(isPermanentPublishError(new ProtocolError('OUT_OF_ORDER_SEQUENCE_NUMBER'))).toBe(false);
  expect(isPermanentPublishError(new ProtocolError('NOT_LEADER_OR_FOLLOWER'))).toBe(false);
  expect(isPermanentPublishError(new Error('anything else'))).toBe(false);
  expect(isPermanentPublishError(undefined)).toBe(false);
  // Not: records too large or refused, a topic not allowed, a misuse, however deep in the tree.
  expect(isPermanentPublishError(new ProtocolError('MESSAGE_TOO_LARGE'))).toBe(true);
  expect(isPermanentPublishError(afterRetries(new NetworkError('Connection failed.'), new ProtocolError('TOPIC_AUTHORIZATION_FAILED')))).toBe(true);
  expect(isPermanentPublishError(new MultipleErrors('outer', [afterRetries(new ProtocolError('INVALID_RECORD'))]))).toBe(true);
  expect(isPermanentPublishError(new UserError('Invalid option.'))).toBe(true);
  expect(isPermanentPublishError(new Error('wrapped', { cause: new ProtocolError('RECORD_LIST_TOO_LARGE') }))).toBe(true);
});

test("a failed send is described by its innermost causes (the client's own message only says that producing failed)", () => {
  const refused = new NetworkError('Connection to 127.0.0.1:9092 failed.', { cause: new Error('connect ECONNREFUSED 127.0.0.1:9092') });
  const failed = new MultipleErrors('Producing messages failed.', [new MultipleErrors('produce failed 3 times.', [refused, refused, new OutOfBoundsError('Out of bounds.')])]);
  expect(kafkaErrorText(failed)).toBe('connect ECONNREFUSED 127.0.0.1:9092; Out of bounds.');
  expect(kafkaErrorText(new MultipleErrors('Producing messages failed.', [new ProtocolError('MESSAGE_TOO_LARGE')]))).toBe(
    'The request included a message larger than the max message size the server will accept. (MESSAGE_TOO_LARGE)',
  );
  expect(kafkaErrorText(new Error('plain'))).toBe('plain');
  const many = new MultipleErrors('x', Array.from({ length: 7 }, (_, i) => new Error(`e${i}`)));
  expect(kafkaErrorText(many)).toBe('e0; e1; e2; e3; e4; …');
});

test('a bus that compresses with lz4 is refused at creation, naming the cause, where lz4-napi cannot be loaded; gzip and none still work there', async () => {
  let adapter: typeof KafkaAdapter | undefined;
  jest.isolateModules(() => {
    jest.doMock('lz4-napi', () => {
      throw new Error('no prebuilt binary for this platform');
    });
    // A client that gets as far as connecting says so (and nothing is dialled).
    jest.doMock('kafkajs', () => ({
      ...jest.requireActual('kafkajs'),
      Kafka: class {
        admin() {
          return {
            connect: async () => {
              throw new Error('connecting');
            },
          };
        }
      },
    }));
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- a fresh copy of the adapter under the mocks above
    adapter = require('./kafka') as typeof KafkaAdapter;
  });
  const options = { brokers: ['127.0.0.1:9'], logger };
  await expect(adapter!.createKafkaBus(options)).rejects.toThrow(
    'Kafka event bus: lz4 compression (KAFKA_COMPRESSION, default lz4) needs lz4-napi, which cannot be loaded here (no prebuilt binary for this platform); set KAFKA_COMPRESSION=gzip',
  );
  await expect(adapter!.createKafkaBus({ ...options, compression: 'lz4' })).rejects.toThrow(/needs lz4-napi/);
  await expect(adapter!.createKafkaBus({ ...options, compression: 'gzip' })).rejects.toThrow('connecting');
  await expect(adapter!.createKafkaBus({ ...options, compression: 'none' })).rejects.toThrow('connecting');
});
