/**
 * The login and consent pages in a real browser: Debian's chromium driven by playwright-core, with
 * JavaScript switched off (the pages must work without it), screenshots of each page in
 * apps/gateway-e2e/test-output/oauth/ (gitignored). Without chromium the suite is skipped with a note;
 * under CI=true a missing chromium is a failure.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { browserSuite, launchChromium, watchedPage } from './chromium';
import { authorizationRequest, exchangeCode, PASSWORD, registerClient, startOAuthStack, userWithPassword, type OAuthStack } from './oauth-support';

jest.setTimeout(180_000);

const OUT = path.resolve(__dirname, '..', 'test-output', 'oauth');
const KEY = 'svc_sk_' + 'oauthBrowserTest'.repeat(3);

const suite = browserSuite('login and consent pages in chromium');

let s: OAuthStack;
let browser: Browser;
let callbackServer: Server;
let callbackBase: string;
let user: { email: string };
let client: { clientId: string; clientSecret?: string };

suite('login and consent pages in chromium', () => {
  beforeAll(async () => {
    mkdirSync(OUT, { recursive: true });
    // The client application's callback: a page that says where the browser arrived.
    callbackServer = createServer((req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>Client app</title><p>Back at the client</p>');
      void req;
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    callbackBase = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`;
    s = await startOAuthStack('oauth-browser', KEY);
    user = await userWithPassword(s.api, 'grace.browser@example.com');
    client = await registerClient(s.api, {
      name: 'Partner <b>Dashboard</b>',
      type: 'confidential',
      redirectUris: [`${callbackBase}/callback`],
      scopes: ['openid', 'email', 'profile', 'read:users'],
    });
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await s?.stop();
    await new Promise<void>((resolve) => (callbackServer ? callbackServer.close(() => resolve()) : resolve()));
  });

  const authorization = () =>
    authorizationRequest(s.issuer, {
      client_id: client.clientId,
      redirect_uri: `${callbackBase}/callback`,
      scope: 'openid email profile read:users',
      state: 'browser-state',
      nonce: 'browser-nonce',
    });

  /** A page without JavaScript that records Content-Security-Policy violations. */
  const newPage = () => watchedPage(browser, { javaScriptEnabled: false });

  it('signs in, consents and returns to the client with a code, all without JavaScript', async () => {
    const { url, verifier } = authorization();
    const { page, problems } = await newPage();
    const first = await page.goto(url.href);
    expect(first!.status()).toBe(200);
    const headers = first!.headers();
    expect(headers['content-security-policy']).toContain("default-src 'none'");
    expect(headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(headers['x-frame-options']).toBe('DENY');
    const html = await page.content();
    expect(html).not.toMatch(/<script/i);
    // the client's name is text, not markup
    expect(await page.locator('h1').textContent()).toBe('Sign in to continue to Partner <b>Dashboard</b>');
    await page.screenshot({ path: path.join(OUT, '1-login.png'), fullPage: true });

    await page.fill('#email', user.email);
    await page.fill('#password', 'not the password at all');
    await page.click('button[type=submit]');
    expect(await page.locator('.error').textContent()).toBe('Invalid email or password');
    expect(await page.inputValue('#email')).toBe(user.email);
    await page.screenshot({ path: path.join(OUT, '2-login-error.png'), fullPage: true });

    await page.fill('#password', PASSWORD);
    await page.click('button[type=submit]');
    await expect(page.locator('h1').textContent()).resolves.toBe('Partner <b>Dashboard</b> wants to access your account');
    expect(await page.locator('ul.scopes li').count()).toBe(4);
    await page.screenshot({ path: path.join(OUT, '3-consent.png'), fullPage: true });

    await page.click('button[value=allow]');
    await page.waitForURL(`${callbackBase}/callback?**`);
    const back = new URL(page.url());
    expect(back.searchParams.get('state')).toBe('browser-state');
    expect(back.searchParams.get('iss')).toBe(s.issuer);
    await page.screenshot({ path: path.join(OUT, '4-back-at-client.png'), fullPage: true });

    const tokens = await exchangeCode(s.issuer, { code: back.searchParams.get('code')!, redirectUri: `${callbackBase}/callback`, verifier, client });
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'openid email profile read:users' });
    expect(problems).toEqual([]);

    // The browser is now logged in and has consented: the next authorization goes straight back.
    await page.goto(authorization().url.href);
    await page.waitForURL(`${callbackBase}/callback?**`);
    expect(new URL(page.url()).searchParams.get('code')).toMatch(/^ocd_/);
    await page.context().close();
  });

  it('denying consent goes back to the client with access_denied', async () => {
    const { page } = await newPage();
    await page.goto(authorization().url.href + '&prompt=consent');
    await page.fill('#email', user.email);
    await page.fill('#password', PASSWORD);
    await page.click('button[type=submit]');
    await page.click('button[value=deny]');
    await page.waitForURL(`${callbackBase}/callback?**`);
    expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
    await page.context().close();
  });

  it('shows an error page (not a redirect) for an unregistered redirect URI', async () => {
    const { page } = await newPage();
    const { url } = authorization();
    url.searchParams.set('redirect_uri', 'https://evil.example/steal');
    const res = await page.goto(url.href);
    expect(res!.status()).toBe(400);
    expect(page.url()).toBe(url.href);
    expect(await page.locator('.error').textContent()).toContain('redirect_uri');
    await page.screenshot({ path: path.join(OUT, '5-error-page.png'), fullPage: true });
    await page.context().close();
  });
});
