import { z } from 'zod';
import { ConfigError, env } from '../config';
import { CertificateFileError, readCertificateFiles } from '../grpc/tls-files';
import type { Logger } from '../logger';
import type { Metrics } from '../metrics';
import { createKafkaBus, DEFAULT_KAFKA_COMPRESSION, KAFKA_CODECS, type KafkaCompression } from './kafka-lazy';
import { createPostgresBus } from './postgres';
import type { EventBus } from './port';

/** Variables of a process that publishes to or consumes from the event bus. */
export const busConfig = {
  /** postgres (a topic table in the service database) or kafka; default: kafka with PROFILE=distributed, else postgres. */
  EVENT_BUS: z.enum(['postgres', 'kafka']).optional(),
  /** Comma-separated host:port list of Kafka brokers (EVENT_BUS=kafka). */
  KAFKA_BROKERS: z
    .string()
    .regex(/^[A-Za-z0-9.-]+:\d{1,5}(,[A-Za-z0-9.-]+:\d{1,5})*$/, 'must be host:port[,host:port...]')
    .optional(),
  /** Partitions of a topic the Kafka adapter creates (ordering is per actor key within a partition). */
  KAFKA_PARTITIONS: z.coerce.number().int().min(1).max(1000).default(6),
  /** TLS to the brokers. */
  KAFKA_SSL: env.bool(false),
  /** With KAFKA_SSL: a PEM file of the CA certificates the brokers' must chain to (else the system's and NODE_EXTRA_CA_CERTS). */
  KAFKA_CA_FILE: z.string().min(1).optional(),
  /** How published record batches are compressed: lz4 (default), gzip or none; consumers read all three. */
  KAFKA_COMPRESSION: z.enum(KAFKA_CODECS).default(DEFAULT_KAFKA_COMPRESSION),
  KAFKA_SASL_MECHANISM: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
  KAFKA_SASL_USERNAME: z.string().min(1).optional(),
  KAFKA_SASL_PASSWORD: z.string().min(1).optional(),
  /** How long the Postgres bus keeps records every consumer group has read. */
  BUS_RETENTION_HOURS: z.coerce.number().int().min(1).max(8760).default(168),
};

export interface BusSettings {
  PROFILE: 'local' | 'distributed';
  EVENT_BUS?: 'postgres' | 'kafka';
  KAFKA_BROKERS?: string;
  KAFKA_PARTITIONS: number;
  KAFKA_SSL: boolean;
  KAFKA_CA_FILE?: string;
  KAFKA_COMPRESSION?: KafkaCompression;
  KAFKA_SASL_MECHANISM?: 'plain' | 'scram-sha-256' | 'scram-sha-512';
  KAFKA_SASL_USERNAME?: string;
  KAFKA_SASL_PASSWORD?: string;
  BUS_RETENTION_HOURS: number;
  DATABASE_URL: string;
}

/** The adapter a configuration selects (kafka by default in the distributed profile). */
export function eventBusKind(config: Pick<BusSettings, 'PROFILE' | 'EVENT_BUS'>): 'postgres' | 'kafka' {
  return config.EVENT_BUS ?? (config.PROFILE === 'distributed' ? 'kafka' : 'postgres');
}

/** What is missing for the selected bus, as ConfigError lines (empty when complete). */
export function busConfigProblems(config: BusSettings): string[] {
  if (eventBusKind(config) !== 'kafka') return [];
  const why = config.EVENT_BUS ? 'EVENT_BUS=kafka' : 'PROFILE=distributed, whose event bus is Kafka';
  const problems: string[] = [];
  if (!config.KAFKA_BROKERS) problems.push(`KAFKA_BROKERS: required with ${why} (not set)`);
  const sasl = [config.KAFKA_SASL_MECHANISM, config.KAFKA_SASL_USERNAME, config.KAFKA_SASL_PASSWORD];
  if (sasl.some(Boolean) && !sasl.every(Boolean)) {
    problems.push('KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD: set all three or none');
  }
  if (config.KAFKA_CA_FILE && !config.KAFKA_SSL) problems.push('KAFKA_CA_FILE: only used with KAFKA_SSL=true');
  return problems;
}

/** Throws a ConfigError naming what the selected bus lacks. */
export function assertBusConfig(config: BusSettings): void {
  const problems = busConfigProblems(config);
  if (problems.length > 0) throw new ConfigError(problems);
}

/** The CA bundle of KAFKA_CA_FILE, read and checked as gRPC's files are; a start-up error naming the variable when it cannot be used. */
function readCaFile(file: string): string {
  try {
    return readCertificateFiles({ caFile: file }).ca!.toString('utf8');
  } catch (err) {
    if (!(err instanceof CertificateFileError)) throw err;
    throw new ConfigError([`KAFKA_CA_FILE: ${err.message} (got "${file}")`]);
  }
}

/** The adapter the configuration names; `observe` names the Postgres bus's pool in db_pool_* metrics. */
export async function createEventBus(
  config: BusSettings,
  logger: Logger,
  clientId: string,
  observe?: { metrics: Metrics; pool: string },
): Promise<EventBus> {
  assertBusConfig(config);
  if (eventBusKind(config) === 'kafka') {
    return createKafkaBus({
      brokers: config.KAFKA_BROKERS!.split(','),
      clientId,
      logger,
      partitions: config.KAFKA_PARTITIONS,
      compression: config.KAFKA_COMPRESSION,
      ssl: config.KAFKA_SSL,
      ca: config.KAFKA_CA_FILE ? readCaFile(config.KAFKA_CA_FILE) : undefined,
      sasl: config.KAFKA_SASL_MECHANISM
        ? { mechanism: config.KAFKA_SASL_MECHANISM, username: config.KAFKA_SASL_USERNAME!, password: config.KAFKA_SASL_PASSWORD! }
        : undefined,
    });
  }
  return createPostgresBus({ url: config.DATABASE_URL, logger, retentionMs: config.BUS_RETENTION_HOURS * 3_600_000, observe });
}
