import type * as KafkaAdapter from './kafka';
import type { EventBus } from './port';

export type { KafkaBusOptions } from './kafka';

/**
 * The Kafka adapter (./kafka), loaded on first use: its two clients take about 50 MB of memory in a process
 * that loads them (@platformatic/kafka alone 42 MB), which a process on the Postgres bus (the local profile) or
 * without a bus (the export worker) never needs.
 */
export async function createKafkaBus(options: KafkaAdapter.KafkaBusOptions): Promise<EventBus> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- lazy load, see above
  return (require('./kafka') as typeof KafkaAdapter).createKafkaBus(options);
}
