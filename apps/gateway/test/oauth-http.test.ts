/** The OAuth endpoints' HTTP pieces without I/O: scopes per route, client authentication parsing, pages. */
import type { Request } from 'express';
import { routes } from '../src/app';
import { discoveryDocument } from '../src/oauth/discovery';
import { clientCredentialsOf, csrfValid, paramsOf } from '../src/oauth/http';
import { passkeysUsable } from '../src/oauth/authorize';
import { refuseTokenClientChange } from '../src/routes/oauth-clients/schemas';
import { consentPage, errorPage, escapeHtml, jsonDataBlock, loginPage, mfaPage, pageCsp } from '../src/oauth/pages';

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
      'GET /api-keys': 'read:api_keys',
      'POST /api-keys': 'write:api_keys',
      'POST /api-keys/:id/rotate': 'write:api_keys',
      'DELETE /api-keys/:id': 'write:api_keys',
      'GET /oauth/clients/:id': 'read:clients',
      'POST /oauth/clients': 'write:clients',
      'PATCH /oauth/clients/:id': 'write:clients',
      'DELETE /oauth/clients/:id': 'write:clients',
      'GET /sso/connections': 'read:sso',
      'POST /sso/connections': 'write:sso',
      'DELETE /sso/connections/:id': 'write:sso',
      'POST /logs/counts': 'read:logs',
      'DELETE /users/:id/sessions/:sessionId': 'write:users',
    });
    // reading never needs a write scope
    for (const r of routes.filter((r) => r.method === 'get' && r.scope)) expect([r.path, r.scope]).toEqual([r.path, expect.stringMatching(/^(read|export):/)]);
    // closed to OAuth tokens
    for (const key of ['POST /tokens', 'POST /auth/login', 'POST /users/:id/mfa/totp', 'POST /sso/logout']) {
      expect([key, table[key]]).toEqual([key, undefined]);
    }
  });
});

describe('clients an OAuth token may manage', () => {
  const token = { scopes: ['read:users', 'write:clients'] };
  const client = (over: Partial<{ scopes: string[]; firstParty: boolean }> = {}) =>
    ({ id: 'cli_x', environment: 'live', name: 'X', type: 'confidential', redirectUris: [], scopes: ['read:users'], firstParty: false, ...over }) as never;
  const fields = (fn: () => void) => {
    try {
      fn();
      return [];
    } catch (err) {
      return (err as { code: string; details: { field: string }[] }).details.map((d) => d.field);
    }
  };

  it('gives only its own scopes, names each other one, and never makes a client first party', () => {
    expect(fields(() => refuseTokenClientChange(token, { scopes: ['read:users'] }))).toEqual([]);
    expect(fields(() => refuseTokenClientChange(token, {}))).toEqual([]);
    expect(fields(() => refuseTokenClientChange(token, { scopes: ['write:api_keys', 'read:users', 'read:logs'] }))).toEqual(['scopes[0]', 'scopes[2]']);
    expect(fields(() => refuseTokenClientChange(token, { scopes: ['read:users'], firstParty: true }))).toEqual(['firstParty']);
  });

  it('changes or deletes only clients no stronger than itself, and no first-party client', () => {
    expect(fields(() => refuseTokenClientChange(token, { name: 'Y' } as never, client()))).toEqual([]);
    expect(fields(() => refuseTokenClientChange(token, {}, client({ scopes: ['read:users', 'write:api_keys'] })))).toEqual(['id']);
    expect(fields(() => refuseTokenClientChange(token, {}, client({ firstParty: true })))).toEqual(['id']);
  });

  it('leaves API keys and sessions to the policies', () => {
    expect(fields(() => refuseTokenClientChange({}, { scopes: ['write:api_keys'], firstParty: true }, client({ firstParty: true })))).toEqual([]);
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
      loginPage({ clientName: evil, params: { state: evil, client_id: 'cli_x' }, csrf: 'c'.repeat(43), error: evil, email: evil }).html,
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
      acr_values_supported: ['urn:secsvc:acr:1fa', 'urn:secsvc:acr:mfa'],
    });
    expect(doc.claims_supported).toEqual(expect.arrayContaining(['amr', 'acr', 'auth_time']));
  });
});

/** The hidden fields of each form of a page, in order. */
function forms(html: string): Record<string, string>[] {
  const decode = (v: string) => v.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
  return [...html.matchAll(/<form [^>]*>([\s\S]*?)<\/form>/g)].map((f) =>
    Object.fromEntries([...f[1]!.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].map((m) => [m[1]!, decode(m[2]!)])),
  );
}

describe('MFA and passkeys on the pages', () => {
  const evil = `"><script>alert(1)</script>`;
  const csrf = 'c'.repeat(43);
  const params = { client_id: 'cli_x', state: evil, acr_values: 'urn:secsvc:acr:mfa' };
  const options = JSON.stringify({ challenge: 'Y2hhbGxlbmdl', rpId: 'auth.example.com', userVerification: 'required', allowCredentials: [{ id: 'AQID', type: 'public-key' }] });
  const scriptTag = '<script src="/oauth/assets/passkey.js" defer></script>';
  /** The page without its JSON data block: what must hold no script at all. */
  const withoutData = (html: string) => html.replace(/<script type="application\/json" id="passkey-options">[^<]*<\/script>/, '');

  it('the second step: the code form first (one-time-code, numeric), recovery codes, each form with the request, CSRF and mfa_token', () => {
    const page = mfaPage({
      clientName: evil,
      params,
      csrf,
      action: 'mfa',
      state: { mfa_token: 'mft_abc', mfa_methods: 'totp recovery_code', passkey_options: '' },
      methods: { totp: true, recoveryCode: true },
      error: evil,
    });
    expect(page.script).toBe(false);
    expect(page.html).not.toMatch(/<script/i);
    expect(page.html).toContain(escapeHtml(evil));
    expect(page.html).toMatch(/<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code"[^>]*maxlength="6"/);
    expect(page.html).toContain('<details class="recovery">');
    const [totp, recovery, ...more] = forms(page.html);
    expect(more).toEqual([]);
    expect(totp).toEqual({ ...params, csrf_token: csrf, action: 'mfa', mfa_token: 'mft_abc', mfa_methods: 'totp recovery_code', mfa_type: 'totp' });
    expect(recovery).toMatchObject({ action: 'mfa', mfa_token: 'mft_abc', mfa_type: 'recovery_code', csrf_token: csrf, state: evil });
    expect(page.html).not.toContain('passkey');
  });

  it('offers a passkey only with options: the script, a data block that cannot end its element, and a hidden credential field', () => {
    const hostile = JSON.stringify({ challenge: 'Y2hhbGxlbmdl', rpId: '</script><script>alert(1)</script>', note: '\u2028&' });
    const page = mfaPage({ clientName: 'App', params, csrf, action: 'mfa', state: { mfa_token: 'mft_abc' }, methods: { totp: false, recoveryCode: true, passkey: { optionsJson: hostile } } });
    expect(page.script).toBe(true);
    expect(page.html).toContain(scriptTag);
    expect(page.html.match(/<script/g)).toHaveLength(2); // the script and the data block, nothing else
    expect(withoutData(page.html)).not.toContain('</script><script>alert');
    const data = /<script type="application\/json" id="passkey-options">([^<]*)<\/script>/.exec(page.html)![1]!;
    expect(JSON.parse(data)).toEqual(JSON.parse(hostile));
    expect(data).not.toMatch(/[<>&\u2028]/);
    expect(page.html).toContain('<p class="error" role="alert" id="alert" hidden></p>');
    expect(page.html).toContain('<input type="hidden" name="credential" value="">');
    expect(page.html).toContain('<button type="button" id="passkey-button" class="secondary" hidden>Use a passkey</button>');
    const passkeyForm = forms(page.html).at(-1)!;
    expect(passkeyForm).toMatchObject({ action: 'mfa', mfa_type: 'passkey', mfa_token: 'mft_abc', csrf_token: csrf });
    // Recovery codes alone: their disclosure starts open.
    expect(mfaPage({ clientName: 'App', params, csrf, action: 'mfa', state: {}, methods: { totp: false, recoveryCode: true } }).html).toContain('<details class="recovery" open>');
    // No way to answer: a message, no form.
    const none = mfaPage({ clientName: 'App', params, csrf, action: 'mfa', state: {}, methods: { totp: false, recoveryCode: false } });
    expect(forms(none.html)).toEqual([]);
    expect(none.html).toContain('no authenticator app or passkey');
    expect(jsonDataBlock('not json')).toBeUndefined();
    expect(jsonDataBlock('[1]')).toBeUndefined();
    expect(mfaPage({ clientName: 'App', params, csrf, action: 'mfa', state: {}, methods: { totp: true, recoveryCode: false, passkey: { optionsJson: '{' } } }).script).toBe(false);
  });

  it('the login page: the password form stays first; the passkey form posts action=passkey with its challenge', () => {
    const page = loginPage({ clientName: 'App', params, csrf, passkey: { optionsJson: options, challengeId: 'mfc_1' } });
    expect(page.script).toBe(true);
    const [password, passkey] = forms(page.html);
    expect(password).toMatchObject({ action: 'login', csrf_token: csrf, acr_values: 'urn:secsvc:acr:mfa' });
    expect(passkey).toEqual({ ...params, csrf_token: csrf, action: 'passkey', challenge_id: 'mfc_1', credential: '' });
    expect(page.html).toContain('>Sign in with a passkey</button>');
    // An error shows in the one alert region the script also uses.
    const failed = loginPage({ clientName: 'App', params, csrf, error: 'Invalid email or password', passkey: { optionsJson: options, challengeId: 'mfc_1' } });
    expect(failed.html.match(/class="error"/g)).toHaveLength(1);
    expect(failed.html).toContain('<p class="error" role="alert" id="alert">Invalid email or password</p>');
    const plain = loginPage({ clientName: 'App', params, csrf });
    expect(plain.script).toBe(false);
    expect(plain.html).not.toMatch(/<script|passkey/i);
  });

  it('the step-up page posts action=step_up and names the client asking', () => {
    const page = mfaPage({ clientName: 'App <b>', params, csrf, action: 'step_up', state: {}, methods: { totp: true, recoveryCode: false, passkey: { optionsJson: options, challengeId: 'mfc_2' } } });
    expect(page.html).toContain('App &lt;b&gt; asks you to confirm it is you');
    const [totp, passkey] = forms(page.html);
    expect(totp).toMatchObject({ action: 'step_up', mfa_type: 'totp' });
    expect(totp).not.toHaveProperty('mfa_token');
    expect(passkey).toMatchObject({ action: 'step_up', mfa_type: 'passkey', challenge_id: 'mfc_2' });
  });

  it('CSP: script-src self only for pages with the passkey script', () => {
    expect(pageCsp('https://app.example.com/cb')).toBe(
      "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self' https://app.example.com; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(pageCsp(undefined, true)).toBe("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'");
  });

  it('offers passkeys only for an issuer with a domain (WebAuthn has no IP relying parties)', () => {
    expect(passkeysUsable('https://auth.example.com')).toBe(true);
    expect(passkeysUsable('http://localhost:8080')).toBe(true);
    expect(passkeysUsable('http://127.0.0.1:8080')).toBe(false);
    expect(passkeysUsable('http://[::1]:8080')).toBe(false);
    expect(passkeysUsable('not a url')).toBe(false);
  });
});
