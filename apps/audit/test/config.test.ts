import { loadAuditConfig } from '../src/config';

const base = { DATABASE_URL: 'postgres://u@127.0.0.1/db', SERVER_SECRET: 'x'.repeat(32) };

describe('audit configuration', () => {
  it('uses embedded ClickHouse locally, in .data/clickhouse unless told otherwise', () => {
    expect(loadAuditConfig(base)).toMatchObject({ CLICKHOUSE_PATH: '.data/clickhouse', AUDIT_RETENTION_DAYS: 365 });
    expect(loadAuditConfig(base).CLICKHOUSE_URL).toBeUndefined();
    expect(loadAuditConfig({ ...base, CLICKHOUSE_PATH: '/var/lib/ch' }).CLICKHOUSE_PATH).toBe('/var/lib/ch');
  });

  it('refuses a distributed profile without a ClickHouse server or an explicit chdb path, and without Kafka brokers', () => {
    let message = '';
    try {
      loadAuditConfig({ ...base, PROFILE: 'distributed' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('KAFKA_BROKERS: required');
    expect(message).toContain('CLICKHOUSE_URL: required with PROFILE=distributed');
    expect(loadAuditConfig({ ...base, PROFILE: 'distributed', KAFKA_BROKERS: 'k:9092', CLICKHOUSE_URL: 'https://ch.internal:8443' })).toMatchObject({
      CLICKHOUSE_URL: 'https://ch.internal:8443',
    });
    expect(loadAuditConfig({ ...base, PROFILE: 'distributed', KAFKA_BROKERS: 'k:9092', CLICKHOUSE_PATH: '/data/ch' }).CLICKHOUSE_PATH).toBe('/data/ch');
  });

  it('names bad values', () => {
    expect(() => loadAuditConfig({ ...base, AUDIT_RETENTION_DAYS: '0' })).toThrow(/AUDIT_RETENTION_DAYS/);
    expect(() => loadAuditConfig({ ...base, CLICKHOUSE_URL: 'not a url' })).toThrow(/CLICKHOUSE_URL: must be a URL \(value hidden\)/);
  });

  it('names what GRPC_TLS and the ClickHouse TLS files lack, together', () => {
    expect(() => loadAuditConfig({ ...base, GRPC_TLS: 'mtls', CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CA_FILE: '/etc/ch/ca.crt' })).toThrow(
      /GRPC_TLS_CERT_FILE: required with GRPC_TLS=mtls[\s\S]*GRPC_TLS_CA_FILE: required[\s\S]*CLICKHOUSE_CA_FILE: only used with an https:\/\/ CLICKHOUSE_URL/,
    );
    // The files are read when the process starts, not by the loader.
    expect(loadAuditConfig({ ...base, CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_CA_FILE: '/nonexistent/ca.crt' })).toMatchObject({ CLICKHOUSE_CA_FILE: '/nonexistent/ca.crt' });
  });
});
