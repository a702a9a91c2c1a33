import { loadWorkerConfig } from './config';

const base = { DATABASE_URL: 'postgres://u@127.0.0.1/db', SERVER_SECRET: 'x'.repeat(32) };

describe('export worker configuration: TLS', () => {
  it('needs the gRPC CA bundle only when it calls the audit service (no CLICKHOUSE_URL)', () => {
    expect(() => loadWorkerConfig({ ...base, GRPC_TLS: 'tls' })).toThrow('GRPC_TLS_CA_FILE: required with GRPC_TLS=tls');
    expect(loadWorkerConfig({ ...base, GRPC_TLS: 'tls', CLICKHOUSE_URL: 'https://ch:8443' })).toMatchObject({ GRPC_TLS: 'tls' });
    expect(loadWorkerConfig(base)).toMatchObject({ GRPC_TLS: 'off' });
  });

  it('names ClickHouse client certificate problems', () => {
    expect(() => loadWorkerConfig({ ...base, CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_KEY_FILE: '/etc/ch/tls.key' })).toThrow(
      'CLICKHOUSE_CERT_FILE, CLICKHOUSE_KEY_FILE: both or neither',
    );
  });
});
