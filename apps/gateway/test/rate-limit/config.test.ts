import { ConfigError } from '@secsvc/shared';
import { loadGatewayConfig } from '../../src/config';

const problems = (env: Record<string, string>) => {
  try {
    loadGatewayConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.join('\n');
    throw err;
  }
  return '';
};

describe('rate-limit configuration', () => {
  it('keeps limits in memory by default, in Redis when REDIS_URL is set, and as asked otherwise', () => {
    expect(loadGatewayConfig({})).toMatchObject({
      RATE_LIMIT_STORE: 'memory',
      RATE_LIMIT_FAIL_MODE: 'open',
      RATE_LIMIT_ANONYMOUS_PER_MINUTE: 100,
      RATE_LIMIT_USER_PER_MINUTE: 1000,
      RATE_LIMIT_ENTERPRISE_PER_MINUTE: 10_000,
      REDIS_TIMEOUT_MS: 250,
    });
    expect(loadGatewayConfig({ REDIS_URL: 'redis://127.0.0.1:6379' }).RATE_LIMIT_STORE).toBe('redis');
    expect(loadGatewayConfig({ REDIS_URL: 'redis://127.0.0.1:6379', RATE_LIMIT_STORE: 'memory' }).RATE_LIMIT_STORE).toBe('memory');
    expect(loadGatewayConfig({ PROFILE: 'distributed', REDIS_URL: 'rediss://cache:6380/0' }).RATE_LIMIT_STORE).toBe('redis');
    expect(loadGatewayConfig({ RATE_LIMIT_STORE: 'off', RATE_LIMIT_FAIL_MODE: 'closed' })).toMatchObject({ RATE_LIMIT_STORE: 'off', RATE_LIMIT_FAIL_MODE: 'closed' });
  });

  it('refuses Redis limits without REDIS_URL, naming the variable', () => {
    expect(problems({ RATE_LIMIT_STORE: 'redis' })).toMatch(/^REDIS_URL: required .*RATE_LIMIT_STORE=redis/);
    expect(problems({ PROFILE: 'distributed' })).toMatch(/^REDIS_URL: required .*PROFILE=distributed/);
  });

  it('names each bad value, hiding the URL (it may hold a password)', () => {
    const text = problems({ REDIS_URL: 'http://user:hunter2@cache', RATE_LIMIT_FAIL_MODE: 'maybe', RATE_LIMIT_STORE: 'disk', RATE_LIMIT_USER_PER_MINUTE: '0' });
    for (const name of ['REDIS_URL', 'RATE_LIMIT_FAIL_MODE', 'RATE_LIMIT_STORE', 'RATE_LIMIT_USER_PER_MINUTE']) expect(text).toContain(name);
    expect(text).not.toContain('hunter2');
  });
});
