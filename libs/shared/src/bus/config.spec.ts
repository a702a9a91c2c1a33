import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commonConfig, databaseConfig, loadConfig } from '../config';
import { assertBusConfig, busConfig, createEventBus, eventBusKind } from './config';
import { createLogger } from '../logger';

const shape = { ...commonConfig, ...databaseConfig, ...busConfig };
const base = { DATABASE_URL: 'postgres://u@127.0.0.1/db', SERVER_SECRET: 'x'.repeat(32) };
const load = (env: Record<string, string>) => {
  const config = loadConfig(shape, { ...base, ...env });
  assertBusConfig(config);
  return config;
};

describe('event bus configuration', () => {
  it('defaults to the Postgres bus locally and to Kafka in the distributed profile', () => {
    expect(eventBusKind(load({}))).toBe('postgres');
    expect(eventBusKind(load({ PROFILE: 'distributed', KAFKA_BROKERS: 'kafka-0:9092,kafka-1:9092' }))).toBe('kafka');
    expect(eventBusKind(load({ PROFILE: 'distributed', EVENT_BUS: 'postgres' }))).toBe('postgres');
  });

  it('refuses a half-configured Kafka bus, naming what is missing', () => {
    expect(() => load({ PROFILE: 'distributed' })).toThrow(/KAFKA_BROKERS: required with PROFILE=distributed/);
    expect(() => load({ EVENT_BUS: 'kafka' })).toThrow(/KAFKA_BROKERS: required with EVENT_BUS=kafka/);
    expect(() => load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9092', KAFKA_SASL_MECHANISM: 'scram-sha-512' })).toThrow(/set all three or none/);
    expect(() => load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'not a list' })).toThrow(/KAFKA_BROKERS: must be host:port/);
    expect(() => load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9093', KAFKA_CA_FILE: '/etc/kafka/ca.crt' })).toThrow(/KAFKA_CA_FILE: only used with KAFKA_SSL=true/);
  });

  it('takes TLS and SASL settings and never shows the password', () => {
    const config = load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9093', KAFKA_SSL: 'true', KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'audit', KAFKA_SASL_PASSWORD: 'hunter2hunter2' });
    expect(config).toMatchObject({ KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'scram-sha-256', KAFKA_SASL_USERNAME: 'audit' });
    let message = '';
    try {
      load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9093', KAFKA_SASL_PASSWORD: '' , KAFKA_PARTITIONS: 'many' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('KAFKA_PARTITIONS');
    expect(message).not.toContain('hunter2');
  });

  it('compresses with lz4 unless KAFKA_COMPRESSION names gzip or none, and refuses any other codec', () => {
    expect(load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9092' }).KAFKA_COMPRESSION).toBe('lz4');
    expect(load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9092', KAFKA_COMPRESSION: 'gzip' }).KAFKA_COMPRESSION).toBe('gzip');
    expect(load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9092', KAFKA_COMPRESSION: 'none' }).KAFKA_COMPRESSION).toBe('none');
    expect(() => load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: 'k:9092', KAFKA_COMPRESSION: 'zstd' })).toThrow(/KAFKA_COMPRESSION/);
  });

  it('reads KAFKA_CA_FILE when the bus is created, naming the variable when it cannot', async () => {
    const config = load({ EVENT_BUS: 'kafka', KAFKA_BROKERS: '127.0.0.1:9', KAFKA_SSL: 'true', KAFKA_CA_FILE: '/nonexistent/kafka-ca.crt' });
    expect(config.KAFKA_CA_FILE).toBe('/nonexistent/kafka-ca.crt');
    await expect(createEventBus(config, createLogger('bus-config-spec', 'silent'), 'spec')).rejects.toThrow(/KAFKA_CA_FILE: cannot be read \(ENOENT\)/);
    // Read and checked as gRPC's CA files are: a file without a PEM certificate is refused at start too.
    const notPem = path.join(mkdtempSync(path.join(os.tmpdir(), 'kafka-ca-')), 'ca.crt');
    writeFileSync(notPem, 'not a certificate\n');
    await expect(createEventBus({ ...config, KAFKA_CA_FILE: notPem }, createLogger('bus-config-spec', 'silent'), 'spec')).rejects.toThrow(/KAFKA_CA_FILE: holds no PEM certificate/);
  });
});
