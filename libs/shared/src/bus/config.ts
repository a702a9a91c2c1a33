import { z } from 'zod';
import type { Logger } from '../logger';
import { createKafkaBus } from './kafka';
import { createPostgresBus } from './postgres';
import type { EventBus } from './port';

/** Variables of a process that publishes to or consumes from the event bus. */
export const busConfig = {
  /** postgres (local profile default: a topic table in the service database) or kafka. */
  EVENT_BUS: z.enum(['postgres', 'kafka']).default('postgres'),
  /** Comma-separated host:port list of Kafka brokers (EVENT_BUS=kafka). */
  KAFKA_BROKERS: z
    .string()
    .regex(/^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*$/, 'must be host:port[,host:port...]')
    .optional(),
  /** Partitions of a topic the Kafka adapter creates (ordering is per actor key within a partition). */
  KAFKA_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(6),
  /** How long the Postgres bus keeps records every consumer group has read. */
  BUS_RETENTION_HOURS: z.coerce.number().int().min(1).max(8760).default(168),
};

export interface BusSettings {
  EVENT_BUS: 'postgres' | 'kafka';
  KAFKA_BROKERS?: string;
  KAFKA_PARTITIONS: number;
  BUS_RETENTION_HOURS: number;
  DATABASE_URL: string;
}

/** The adapter the configuration names. */
export async function createEventBus(config: BusSettings, logger: Logger, clientId: string): Promise<EventBus> {
  if (config.EVENT_BUS === 'kafka') {
    if (!config.KAFKA_BROKERS) throw new Error('KAFKA_BROKERS is required when EVENT_BUS=kafka');
    return createKafkaBus({ brokers: config.KAFKA_BROKERS.split(','), clientId, logger, partitions: config.KAFKA_PARTITIONS });
  }
  return createPostgresBus({ url: config.DATABASE_URL, logger, retentionMs: config.BUS_RETENTION_HOURS * 3_600_000 });
}
