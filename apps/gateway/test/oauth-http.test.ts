/** The OAuth endpoints' HTTP pieces without I/O: scopes per route, client authentication parsing, pages. */
import type { Request } from 'express';
import { routes } from '../src/app';
import { discoveryDocument } from '../src/oauth/discovery';
import { clientCredentialsOf, csrfValid, paramsOf } from '../src/oauth/http';
import { consentPage, errorPage, escapeHtml, loginPage } from '../src/oauth/pages';

const request = (headers: Record<string, string>) => ({ get: (name: string) => headers[name.toLowerCase()] }) as unknown as Request;
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

describe('scopes of API routes', () => {
  it('maps every route to read/write of its area, export:logs, or nothing', () => {
    const table = Object.fromEntries(routes.map((r) => [`${r.method.toUpperCase()} ${r.path}`, r.scope]));
    expect(table).toMatchObject({
      'GET /users': 'read:users',
      'GET /users/:id': 'read:users',
      'POST /users': 'write:users',
      'PATCH /users/:id': 'write:users',
      'DELETE /users/:id': 'write:users',
      'POST /sessions/verify': 'read:users',
      'GET /policies': 'read:policies',
      'POST /policies/simulate': 'read:policies',
      'DELETE /policies/:id': 'write:policies',
      'POST /logs/search': 'read:logs',
      'GET /logs': 'read:logs',
      'POST /logs/export': 'export:logs',
      'GET /logs/export/:id': 'export:logs',
    });
    // reading never needs a write scope
    for (const r of routes.filter((r) => r.method === 'get' && r.scope)) expect([r.path, r.scope]).toEqual([r.path, expect.stringMatching(/^(read|export):/)]);
    // closed to OAuth tokens
    for (const key of ['POST /api-keys', 'GET /api-keys', 'POST /oauth/clients', 'DELETE /oauth/clients/:id', 'POST /tokens', 'POST /auth/login']) {
      expect([key, table[key]]).toEqual([key, undefined]);
    }
  });
});

describe('client authentication (RFC 6749 2.3.1)', () => {
  it('reads HTTP Basic (form-encoded), the body, or client_id alone', () => {
    expect(clientCredentialsOf(request({ authorization: basic('cli_a', 'ocs_x%2By') }), paramsOf({}))).toEqual({
      clientId: 'cli_a',
      clientSecret: 'ocs_x+y',
      clientAuthMethod: 'client_secret_basic',
    });
    expect(clientCredentialsOf(request({}), paramsOf({ client_id: 'cli_a', client_secret: 's' }))).toMatchObject({ clientAuthMethod: 'client_secret_post' });
    expect(clientCredentialsOf(request({}), paramsOf({ client_id: 'cli_a' }))).toEqual({ clientId: 'cli_a', clientSecret: '', clientAuthMethod: 'none' });
  });

  it('refuses two methods at once, mismatching ids, repeated parameters and other schemes', () => {
    expect(clientCredentialsOf(request({ authorization: basic('cli_a', 's') }), paramsOf({ client_secret: 's' }))).toHaveProperty('error');
    expect(clientCredentialsOf(request({ authorization: basic('cli_a', 's') }), paramsOf({ client_id: 'cli_b' }))).toHaveProperty('error');
    expect(clientCredentialsOf(request({}), paramsOf({ client_id: ['cli_a', 'cli_b'] }))).toHaveProperty('error');
    expect(clientCredentialsOf(request({ authorization: 'Bearer abc' }), paramsOf({}))).toEqual({ error: expect.any(String), invalidClient: true });
    expect(clientCredentialsOf(request({ authorization: `Basic ${Buffer.from('no-colon').toString('base64')}` }), paramsOf({}))).toHaveProperty('error');
  });

  it('names parameters given more than once', () => {
    const p = paramsOf({ scope: 'a', redirect_uri: ['x', 'y'] });
    expect(p.get('scope')).toBe('a');
    expect(p.get('redirect_uri')).toBe('');
    expect(p.repeated).toEqual(['redirect_uri']);
    expect(paramsOf({ ['__proto__']: 'x' }).get('constructor')).toBe('');
  });
});

describe('CSRF double submit', () => {
  const token = 'A'.repeat(43);
  it('accepts the cookie value only', () => {
    expect(csrfValid(request({ cookie: `other=1; secsvc_oauth_csrf=${token}` }), token)).toBe(true);
    expect(csrfValid(request({ cookie: `secsvc_oauth_csrf=${token}` }), 'B'.repeat(43))).toBe(false);
    expect(csrfValid(request({ cookie: `secsvc_oauth_csrf=${token}` }), '')).toBe(false);
    expect(csrfValid(request({}), token)).toBe(false);
    expect(csrfValid(request({ cookie: 'secsvc_oauth_csrf=' }), '')).toBe(false);
  });
});

describe('pages', () => {
  it('escape every value and carry no script', () => {
    const evil = `"><script>alert(1)</script>`;
    const pages = [
      loginPage({ clientName: evil, params: { state: evil, client_id: 'cli_x' }, csrf: 'c'.repeat(43), error: evil, email: evil }),
      consentPage({ clientName: evil, params: { nonce: evil }, csrf: 'c'.repeat(43), scopes: ['openid', evil], userEmail: evil }),
      errorPage(evil, evil),
    ];
    for (const html of pages) {
      expect(html).not.toMatch(/<script/i);
      expect(html).toContain(escapeHtml(evil));
    }
    expect(pages[0]).toContain('name="csrf_token" value="cccc');
  });

  it('discovery names every endpoint under the issuer', () => {
    const doc = discoveryDocument('https://auth.example.com');
    expect(doc).toMatchObject({
      issuer: 'https://auth.example.com',
      token_endpoint: 'https://auth.example.com/oauth/token',
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
    });
  });
});
