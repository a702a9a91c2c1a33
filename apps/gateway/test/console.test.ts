/**
 * The admin console at /console over a build folder made here: index.html for the app's routes (never cached),
 * hashed assets cached for a year (a missing one is a 404, never the page), the strict CSP on every answer,
 * config.json from identity's answer (no secret), and the page saying the console is not built.
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { AppError } from '@secsvc/shared';
import { CONSOLE_CSP, DEFAULT_CONSOLE_DIR, resolveConsoleDir } from '../src/console';
import { call, startGateway, type TestGateway } from './support/gateway';

const INDEX = '<!doctype html><html lang="en"><head><script type="module" src="/console/assets/index-abc123.js"></script></head><body><div id="root"></div></body></html>';
const ISSUER = 'http://127.0.0.1:8080';

let dir: string;
let gw: TestGateway;

/** A GET whose path goes on the wire exactly as written (no dot-segment resolution). */
function rawGet(base: string, rawPath: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    http
      .get({ hostname, port, path: rawPath }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'console-dist-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), INDEX);
  writeFileSync(path.join(dir, 'assets', 'index-abc123.js'), 'console.log("app")');
  writeFileSync(path.join(dir, 'assets', 'index-abc123.css'), 'body{}');
  writeFileSync(path.join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  gw = await startGateway({ extra: { oauth: { issuer: ISSUER }, console: { dir } } });
});
afterAll(async () => {
  await gw.close();
  rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => gw.fake.reset());

const expectSecurityHeaders = (headers: Headers) => {
  expect(headers.get('content-security-policy')).toBe(
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  );
  expect(headers.get('x-content-type-options')).toBe('nosniff');
  expect(headers.get('referrer-policy')).toBe('no-referrer');
};

describe('/console', () => {
  it('answers index.html, never cached, for /console and every app route under it', async () => {
    for (const p of ['/console', '/console/', '/console/users', '/console/users/user_01abc/sessions', '/console/callback?code=x&state=y', '/console/index.html']) {
      const res = await call(gw, 'GET', p, { auth: false });
      expect([p, res.status, res.text]).toEqual([p, 200, INDEX]);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expectSecurityHeaders(res.headers);
    }
    expect((await call(gw, 'HEAD', '/console/users', { auth: false })).status).toBe(200);
  });

  it('serves hashed assets for a year (immutable), other files for an hour, and a missing asset as a 404', async () => {
    const js = await call(gw, 'GET', '/console/assets/index-abc123.js', { auth: false });
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect(js.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expectSecurityHeaders(js.headers);
    expect((await call(gw, 'GET', '/console/assets/index-abc123.css', { auth: false })).headers.get('content-type')).toMatch(/^text\/css/);
    const icon = await call(gw, 'GET', '/console/favicon.svg', { auth: false });
    expect([icon.status, icon.headers.get('cache-control')]).toEqual([200, 'public, max-age=3600']);
    const missing = await call(gw, 'GET', '/console/assets/index-old999.js', { auth: false });
    expect(missing.status).toBe(404);
    expect(missing.text).not.toContain('<html');
    // Paths sent as they are (fetch would resolve the dots before sending): nothing outside the build folder.
    const secret = path.join(path.dirname(dir), `${path.basename(dir)}-secret.txt`);
    writeFileSync(secret, 'outside the build');
    try {
      for (const raw of ['/console/assets/../../package.json', `/console/../${path.basename(secret)}`, `/console/assets/..%2f..%2f${path.basename(secret)}`, '/console/assets/%2e%2e/%2e%2e/package.json']) {
        const res = await rawGet(gw.url, raw);
        expect([raw, res.status < 500, res.body]).toEqual([raw, true, expect.not.stringMatching(/outside the build|"name"/)]);
      }
    } finally {
      rmSync(secret, { force: true });
    }
  });

  it('answers config.json: the issuer, the redirect URI, the scope and the client of each environment, from identity (reused a while)', async () => {
    const res = await call(gw, 'GET', '/console/config.json', { auth: false });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      issuer: ISSUER,
      redirectUri: 'http://127.0.0.1:8080/console/callback',
      scope: 'openid offline_access',
      environments: { live: { clientId: 'cli_console_live' }, test: { clientId: 'cli_console_test' } },
    });
    expectSecurityHeaders(res.headers);
    await call(gw, 'GET', '/console/config.json', { auth: false });
    expect(gw.fake.callsOf('getConsoleClients').length).toBe(1);
  });

  it('leaves out an environment without a client, and answers 503 in the error shape while identity is down', async () => {
    const fresh = await startGateway({ extra: { oauth: { issuer: ISSUER }, console: { dir } } });
    try {
      fresh.fake.consoleClients = { ...fresh.fake.consoleClients, testClientId: '' };
      expect((await call(fresh, 'GET', '/console/config.json', { auth: false })).body.environments).toEqual({ live: { clientId: 'cli_console_live' } });
    } finally {
      await fresh.close();
    }
    const down = await startGateway({ extra: { oauth: { issuer: ISSUER }, console: { dir } } });
    try {
      down.fake.failWith('getConsoleClients', new AppError('unavailable', 'identity is not reachable'));
      const res = await call(down, 'GET', '/console/config.json', { auth: false });
      expect(res.status).toBe(503);
      expect(res.body.error.code).toBe('unavailable');
    } finally {
      await down.close();
    }
  });

  it('answers a 404 page saying the console is not built when the folder has no index.html', async () => {
    const empty = mkdtempSync(path.join(os.tmpdir(), 'console-empty-'));
    const bare = await startGateway({ extra: { oauth: { issuer: ISSUER }, console: { dir: path.join(empty, 'missing') } } });
    try {
      for (const p of ['/console', '/console/users']) {
        const res = await call(bare, 'GET', p, { auth: false });
        expect(res.status).toBe(404);
        expect(res.text).toContain('The admin console is not built');
        expect(res.text).toContain('npm run build');
        expectSecurityHeaders(res.headers);
      }
    } finally {
      await bare.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('finds the console beside the gateway unless CONSOLE_DIR says otherwise', () => {
    expect(DEFAULT_CONSOLE_DIR).toBe(path.resolve(__dirname, '../../console/dist'));
    expect(resolveConsoleDir(undefined)).toBe(DEFAULT_CONSOLE_DIR);
    expect(resolveConsoleDir('/srv/console')).toBe('/srv/console');
    expect(CONSOLE_CSP).not.toMatch(/unsafe|\*/);
  });
});
