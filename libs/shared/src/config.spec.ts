import { commonConfig, ConfigError, databaseConfig, env, loadConfig } from './config';

const shape = {
  ...commonConfig,
  ...databaseConfig,
  PORT: env.port(8080),
  PEER_ADDR: env.address('127.0.0.1:50051'),
  DEBUG_SQL: env.bool(false),
};

const good = {
  DATABASE_URL: 'postgres://svc:pw@127.0.0.1:5432/svc',
  SERVER_SECRET: 's'.repeat(32),
};

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the defaults and coerces values', () => {
    const config = loadConfig(shape, { ...good });
    expect(config).toEqual({
      LOG_LEVEL: 'info',
      PROFILE: 'local',
      ADMIN_HOST: '127.0.0.1',
      SHUTDOWN_DELAY_MS: 0,
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://localhost:4318',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_EXPORTER_OTLP_HEADERS: '',
      OTEL_RESOURCE_ATTRIBUTES: '',
      OTEL_TRACES_SAMPLER: 'parentbased_always_on',
      DATABASE_URL: good.DATABASE_URL,
      DATABASE_POOL_MAX: 10,
      SERVER_SECRET: good.SERVER_SECRET,
      PORT: 8080,
      PEER_ADDR: '127.0.0.1:50051',
      DEBUG_SQL: false,
    });
  });

  it('uses the given values over the defaults', () => {
    const config = loadConfig(shape, {
      ...good,
      PORT: '9000',
      LOG_LEVEL: 'debug',
      PROFILE: 'distributed',
      DATABASE_POOL_MAX: '25',
      DEBUG_SQL: '1',
      PEER_ADDR: 'identity:50051',
    });
    expect(config.PORT).toBe(9000);
    expect(config.LOG_LEVEL).toBe('debug');
    expect(config.PROFILE).toBe('distributed');
    expect(config.DATABASE_POOL_MAX).toBe(25);
    expect(config.DEBUG_SQL).toBe(true);
    expect(config.PEER_ADDR).toBe('identity:50051');
  });

  it('takes gRPC targets as host:port, dns:///host:port or an ipv4 list, and nothing else', () => {
    for (const good_ of ['identity:50051', 'dns:///identity-headless.secsvc.svc:50051', 'ipv4:127.0.0.1:50051,127.0.0.1:50061']) {
      expect(loadConfig(shape, { ...good, PEER_ADDR: good_ }).PEER_ADDR).toBe(good_);
    }
    for (const bad of ['identity', 'dns://identity:50051', 'ipv4:identity:1', 'a:1,b:2', 'http://x:1', 'ipv4:1.2.3.4:5,']) {
      expect(configError(() => loadConfig(shape, { ...good, PEER_ADDR: bad })).message).toContain('PEER_ADDR: must be host:port');
    }
  });

  it('reads only the variables of the shape', () => {
    const config = loadConfig({ PORT: env.port(1) }, { PORT: '2', OTHER: 'x' });
    expect(config).toEqual({ PORT: 2 });
  });

  it('throws a ConfigError naming the variable of a bad value', () => {
    const err = configError(() => loadConfig(shape, { ...good, PORT: 'abc' }));
    expect(err.message).toContain('PORT');
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(/^PORT: /);
  });

  it('rejects out-of-range numbers', () => {
    expect(configError(() => loadConfig(shape, { ...good, PORT: '70000' })).message).toContain('PORT');
    expect(configError(() => loadConfig(shape, { ...good, PORT: '80.5' })).message).toContain('PORT');
    expect(configError(() => loadConfig(shape, { ...good, DATABASE_POOL_MAX: '0' })).message).toContain('DATABASE_POOL_MAX');
  });

  it('names every bad variable at once', () => {
    const err = configError(() =>
      loadConfig(shape, {
        ...good,
        PORT: 'abc',
        LOG_LEVEL: 'loud',
        PROFILE: 'cloud',
        PEER_ADDR: 'no-port',
        DEBUG_SQL: 'yes',
      }),
    );
    for (const name of ['PORT', 'LOG_LEVEL', 'PROFILE', 'PEER_ADDR', 'DEBUG_SQL']) {
      expect(err.message).toContain(name);
      expect(err.problems.some((p) => p.startsWith(`${name}:`))).toBe(true);
    }
    expect(err.problems).toHaveLength(5);
  });

  it('names a missing required variable', () => {
    const err = configError(() => loadConfig(shape, { SERVER_SECRET: good.SERVER_SECRET }));
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(/^DATABASE_URL: .*not set/);
  });

  it('never shows the value of a secret', () => {
    const value = 'too-short-secret-hunter2';
    const err = configError(() => loadConfig(shape, { ...good, SERVER_SECRET: value }));
    expect(err.message).toContain('SERVER_SECRET');
    expect(err.message).not.toContain(value);
    expect(err.message).not.toContain('hunter2');
  });

  it('never shows a bad database URL (it may carry a password)', () => {
    const url = 'mysql://svc:hunter2@db:3306/svc';
    const err = configError(() => loadConfig(shape, { ...good, DATABASE_URL: url }));
    expect(err.message).toContain('DATABASE_URL');
    expect(err.message).not.toContain('hunter2');
  });

  it('shows the value of a non-secret variable to help fix it', () => {
    expect(configError(() => loadConfig(shape, { ...good, PORT: 'abc' })).message).toContain('"abc"');
  });

  it('treats an empty string as unset', () => {
    const config = loadConfig(shape, { ...good, PORT: '', LOG_LEVEL: '', DEBUG_SQL: '' });
    expect(config.PORT).toBe(8080);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.DEBUG_SQL).toBe(false);
    const err = configError(() => loadConfig(shape, { ...good, DATABASE_URL: '' }));
    expect(err.problems).toHaveLength(1);
    expect(err.problems[0]).toMatch(/^DATABASE_URL: .*not set/);
  });

  it('does not touch process.env when given an env object', () => {
    const before = { ...process.env };
    loadConfig(shape, { ...good, PORT: '1234' });
    expect(process.env).toEqual(before);
  });
});
