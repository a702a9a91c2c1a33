/**
 * "Sign in with SSO" on the OAuth login page in a real browser (Debian's chromium through playwright-core,
 * JavaScript off): the work email's domain picks the SAML connection, the browser goes to a test IdP served
 * on 127.0.0.1 (AuthnRequest in, signed assertion posted back by a plain form), the ACS signs the user in
 * just in time and the authorization request goes on to the client with a code. Without chromium the suite
 * is skipped with a note; under CI=true a missing chromium is a failure.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import type { Browser } from 'playwright-core';
import { browserSuite, launchChromium } from './chromium';
import { selfSignedCertificate, startTestIdp, type TestIdp } from '../../gateway/test/support/saml-idp';
import { authorizationRequest, exchangeCode, registerClient, startOAuthStack, type OAuthStack } from './oauth-support';

jest.setTimeout(180_000);

const KEY = 'svc_sk_' + 'ssoBrowserTests'.repeat(3);

const suite = browserSuite('Sign in with SSO in chromium');

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

let s: OAuthStack;
let browser: Browser;
let idp: TestIdp;
let idpServer: Server;
let callbackServer: Server;
let callbackBase: string;
let keysDir: string;
let sp: { acsUrl: string; entityId: string };
/** Where the app's /start sends the browser (an authorization request), once a test sets it. */
let appAuthorization: string | undefined;

suite('Sign in with SSO in chromium', () => {
  beforeAll(async () => {
    // The IdP's SSO endpoint: reads the AuthnRequest, answers with a page that posts the signed response.
    idpServer = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname === '/tile') {
        // The app's tile on the IdP's dashboard: an unsolicited (IdP-initiated) response.
        const unsolicited = idp.response({ acsUrl: sp.acsUrl, audience: sp.entityId, email: 'kim@sso-corp.example.com' });
        res.setHeader('content-type', 'text/html');
        res.end(`<!doctype html><title>Test IdP</title><form method="post" action="${esc(sp.acsUrl)}"><input type="hidden" name="SAMLResponse" value="${esc(unsolicited)}"><button id="idp-tile" type="submit">Open Corp portal</button></form>`);
        return;
      }
      // Anything but an AuthnRequest (the browser's /favicon.ico, say) is not the IdP's business.
      if (!url.searchParams.get('SAMLRequest')) {
        res.statusCode = 404;
        res.end();
        return;
      }
      const xml = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
      const requestId = /ID="([^"]+)"/.exec(xml)?.[1] ?? '';
      const response = idp.response({ acsUrl: sp.acsUrl, audience: sp.entityId, email: 'lin@sso-corp.example.com', inResponseTo: requestId });
      res.setHeader('content-type', 'text/html');
      res.end(
        `<!doctype html><title>Test IdP</title><form method="post" action="${esc(sp.acsUrl)}">` +
          `<input type="hidden" name="SAMLResponse" value="${esc(response)}">` +
          `<input type="hidden" name="RelayState" value="${esc(url.searchParams.get('RelayState') ?? '')}">` +
          `<button id="idp-continue" type="submit">Continue as lin</button></form>`,
      );
    });
    await new Promise<void>((resolve) => idpServer.listen(0, '127.0.0.1', resolve));
    // Named `localhost` (still the 127.0.0.1 listener): another site than the gateway's 127.0.0.1, so the
    // browser treats the IdP's POST to the ACS as cross-site, as it is in real life (no Lax cookies on it).
    idp = await startTestIdp('sso-corp', `http://localhost:${(idpServer.address() as AddressInfo).port}/sso`);

    callbackServer = createServer((req, res) => {
      // The app's login initiation URL (initiate_login_uri): it starts its own authorization request.
      if (req.url?.startsWith('/start?') && appAuthorization) {
        res.statusCode = 302;
        res.setHeader('location', appAuthorization);
        res.end();
        return;
      }
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Client app</title><p>Back at the client</p>');
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    callbackBase = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`;

    const keys = await selfSignedCertificate('secsvc-sp.test');
    keysDir = await mkdtemp(path.join(os.tmpdir(), 'secsvc-sso-browser-'));
    await writeFile(path.join(keysDir, 'sp.key'), keys.privateKey, { mode: 0o600 });
    await writeFile(path.join(keysDir, 'sp.crt'), keys.certificate);
    s = await startOAuthStack('sso-browser', KEY, { SAML_SP_KEY_FILE: path.join(keysDir, 'sp.key'), SAML_SP_CERT_FILE: path.join(keysDir, 'sp.crt') });

    const created = await s.api('POST', '/sso/connections', { name: 'SSO Corp', idpMetadataXml: idp.metadata(), domains: ['sso-corp.example.com'], defaultRoles: ['role_staff'] });
    expect(created.status).toBe(201);
    sp = created.body.data.sp;

    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await s?.stop();
    for (const server of [idpServer, callbackServer]) await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (keysDir) await rm(keysDir, { recursive: true, force: true });
  });

  it('routes by email domain to the IdP and comes back to the client with a code for the just-in-time user', async () => {
    const client = await registerClient(s.api, { name: 'Corp portal', type: 'confidential', redirectUris: [`${callbackBase}/callback`], scopes: ['openid', 'email'], firstParty: true });
    const { url: authorize, verifier } = authorizationRequest(s.issuer, { client_id: client.clientId, redirect_uri: `${callbackBase}/callback`, scope: 'openid email', state: 'sso-state' });

    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(authorize.href);
    // A domain without a connection is told so on the login page.
    await page.fill('#sso-email', 'someone@no-sso.example.com');
    await page.click('form.sso button[type=submit]');
    expect(await page.locator('.error').textContent()).toBe('Single sign-on is not set up for this email domain');

    await page.fill('#sso-email', 'lin@sso-corp.example.com');
    await page.click('form.sso button[type=submit]');
    await page.waitForSelector('#idp-continue');
    expect(page.url()).toMatch(/^http:\/\/localhost:\d+\/sso\?SAMLRequest=/);
    await page.click('#idp-continue');
    await page.waitForURL(`${callbackBase}/callback?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe('sso-state');

    const tokens = await exchangeCode(s.issuer, { code: back.searchParams.get('code')!, redirectUri: `${callbackBase}/callback`, verifier, client });
    expect(tokens).toMatchObject({ token_type: 'Bearer' });
    const userinfo = await (await fetch(`${s.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).json();
    expect(userinfo).toMatchObject({ email: 'lin@sso-corp.example.com', email_verified: true });
    await context.close();
  });

  it('IdP-initiated: the tile on the IdP signs the user in and the app gets a code through its own authorization request', async () => {
    const client = await registerClient(s.api, { name: 'Corp tiles', type: 'confidential', redirectUris: [`${callbackBase}/callback`], scopes: ['openid', 'email'], firstParty: true });
    const { url: authorize, verifier } = authorizationRequest(s.issuer, { client_id: client.clientId, redirect_uri: `${callbackBase}/callback`, scope: 'openid email', state: 'tile-state' });
    appAuthorization = authorize.href;
    const connectionId = new URL(sp.acsUrl).pathname.split('/').at(-2)!;
    const patched = await s.api('PATCH', `/sso/connections/${connectionId}`, { allowIdpInitiated: true, initiateLoginUrl: `${callbackBase}/start` });
    expect(patched.body.data.initiateLoginUrl).toBe(`${callbackBase}/start`);
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(`${new URL(idp.ssoUrl).origin}/tile`);
    await page.click('#idp-tile');
    await page.waitForURL(`${callbackBase}/callback?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe('tile-state');
    const tokens = await exchangeCode(s.issuer, { code: back.searchParams.get('code')!, redirectUri: `${callbackBase}/callback`, verifier, client });
    const userinfo = await (await fetch(`${s.issuer}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).json();
    expect(userinfo).toMatchObject({ email: 'kim@sso-corp.example.com', email_verified: true });
    await context.close();
  });

  it('refuses a response the attacker obtained when it is posted from the victim browser (login CSRF)', async () => {
    const client = await registerClient(s.api, { name: 'Corp wiki', type: 'public', redirectUris: [`${callbackBase}/callback`], scopes: ['openid'], firstParty: true });
    const { url: authorize } = authorizationRequest(s.issuer, { client_id: client.clientId, redirect_uri: `${callbackBase}/callback`, scope: 'openid', state: 'csrf-state' });
    // The attacker starts a login in their own browser and stops at the IdP's page (the signed response).
    const attacker = await browser.newContext({ javaScriptEnabled: false });
    const attackerPage = await attacker.newPage();
    await attackerPage.goto(authorize.href);
    await attackerPage.fill('#sso-email', 'lin@sso-corp.example.com');
    await attackerPage.click('form.sso button[type=submit]');
    await attackerPage.waitForSelector('#idp-continue');
    // The victim's browser is made to post it (a page of the attacker's with that form).
    const victim = await browser.newContext({ javaScriptEnabled: false });
    const victimPage = await victim.newPage();
    await victimPage.goto(attackerPage.url());
    await victimPage.click('#idp-continue');
    await victimPage.waitForURL(/\/continue\?state=/);
    const answer = JSON.parse((await victimPage.locator('body').textContent()) ?? '{}');
    expect(answer.error).toMatchObject({ code: 'unauthorized', details: [{ field: 'SAMLResponse', message: 'browser_mismatch' }] });
    // Not signed in: no OAuth session cookie was set in the victim's browser.
    expect((await victim.cookies()).map((c) => c.name)).not.toContain('secsvc_oauth_session');
    await Promise.all([attacker.close(), victim.close()]);
  });
});
