import type * as KafkaAdapter from './kafka';
import type { EventBus } from './port';

export type { KafkaBusOptions } from './kafka';

/** The codecs a Kafka publish may compress with (KAFKA_COMPRESSION); every subscription reads them all. */
export const KAFKA_CODECS = ['lz4', 'gzip', 'none'] as const;
export type KafkaCompression = (typeof KAFKA_CODECS)[number];
/**
 * lz4 by default: audit events (JSON with repeated field names) take about 5 to 7 times fewer bytes on the wire and on
 * the brokers' disks, for about 0.5 to 1 µs of the publisher's CPU per event and 1 to 2 µs of the consumer's;
 * gzip about 8 to 11 times fewer for about 2.3 µs to publish and 0.8 to consume (bench/RESULTS.md, "Kafka
 * compression"). zstd and snappy are not offered: Node 20 (still supported) has no zstd in its zlib, and Kafka's
 * snappy framing differs between clients.
 */
export const DEFAULT_KAFKA_COMPRESSION: KafkaCompression = 'lz4';

/**
 * The Kafka adapter (./kafka), loaded on first use: its two clients take about 50 MB of memory in a process
 * that loads them (@platformatic/kafka alone 42 MB), which a process on the Postgres bus (the local profile) or
 * without a bus (the export worker) never needs.
 */
export async function createKafkaBus(options: KafkaAdapter.KafkaBusOptions): Promise<EventBus> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy load, see above
  return (require('./kafka') as typeof KafkaAdapter).createKafkaBus(options);
}
