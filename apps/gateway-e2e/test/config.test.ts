/** A bad configuration value stops a process at start-up with a message naming the variable. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const rootDir = path.resolve(__dirname, '../../..');

function start(app: string, env: Record<string, string>) {
  return spawnSync(process.execPath, [path.join(rootDir, 'apps', app, 'dist', 'main.js')], {
    env: { PATH: process.env.PATH, ...env },
    encoding: 'utf8',
    timeout: 20_000,
  });
}

const valid = { DATABASE_URL: 'postgres://u:p@127.0.0.1:1/db', SERVER_SECRET: 'x'.repeat(40) };

describe('configuration errors', () => {
  it('stops the gateway naming PORT', () => {
    const res = start('gateway', { PORT: '99999' });
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('PORT');
    expect(res.stderr).toContain('got "99999"');
  });

  it('stops identity naming every faulty variable and hiding secret values', () => {
    const res = start('identity', { ...valid, GRPC_PORT: 'abc', SERVER_SECRET: 'short-secret', LOG_LEVEL: 'loud' });
    expect(res.status).toBe(1);
    for (const name of ['GRPC_PORT', 'SERVER_SECRET', 'LOG_LEVEL']) expect(res.stderr).toContain(name);
    expect(res.stderr).not.toContain('short-secret');
  });

  it('stops a service without DATABASE_URL', () => {
    const res = start('policy', { SERVER_SECRET: valid.SERVER_SECRET });
    expect(res.status).toBe(1);
    expect(res.stderr).toMatch(/DATABASE_URL: .*\(not set\)/);
  });
});
