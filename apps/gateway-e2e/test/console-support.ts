/**
 * The admin console's browser harness, shared by the console suites (console*.test.ts): a local stack with an
 * administrator (a user with a password whose role a policy allows everything), Debian's chromium, tabs that
 * record what the console must never do (console errors, requests to another origin, CSP refusals), the
 * sign-in through the product's own login page, screenshots and axe-core checks in
 * apps/gateway-e2e/test-output/<suite>/ (gitignored).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from './chromium';
import { PASSWORD, startOAuthStack, userWithPassword, type OAuthStack } from './oauth-support';

export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export interface ConsoleConfig {
  issuer: string;
  redirectUri: string;
  scope: string;
  environments: { live?: { clientId: string }; test?: { clientId: string } };
}

/** A browser tab that records what the console must never do: console errors, requests elsewhere, CSP refusals. */
export interface Tab {
  context: BrowserContext;
  page: Page;
  errors: string[];
  foreign: string[];
  /** Answers of 400 and above (method, path, status), to tell which request a "Failed to load resource" was. */
  failed: string[];
  /** The latest refresh token the token endpoint answered this tab (to check revocation from outside). */
  refreshToken?: string;
  /** The access token of the latest answer. */
  accessToken?: string;
}

/**
 * Console errors besides the ones a test provokes on purpose: Chromium logs every 4xx answer of fetch as
 * "Failed to load resource", so a deliberate 400 is expected there, nothing else. Also left out: the 404 of
 * /favicon.ico, which Chromium asks for on a page that names no icon (the product's login page, not the
 * console, which names its own).
 */
const FAVICON_404 = /Failed to load resource: the server responded with a status of 404 \(Not Found\) \[https?:\/\/[^/]+\/favicon\.ico\]$/;
export const unexpected = (tab: Tab, allowed: RegExp[] = []) => tab.errors.filter((e) => !FAVICON_404.test(e) && !allowed.some((a) => a.test(e)));

/** Chromium's console error for an answer of 400 (one the test provoked on purpose). */
export const FAILED_400 = /Failed to load resource: the server responded with a status of 400/;

/**
 * The end of a test's tab: no request to another origin; when `failed` is given, exactly those answers of 400
 * and above (the 400s the test provoked), and Chromium's console errors about them allowed; no other console
 * error. Then the tab is closed.
 */
export async function closeCleanTab(tab: Tab, failed?: string[]): Promise<void> {
  expect(tab.foreign).toEqual([]);
  // In any order: the page's requests run in parallel (the entries and the chart's counts).
  if (failed) expect([...tab.failed].sort()).toEqual([...failed].sort());
  expect(unexpected(tab, failed?.length ? [FAILED_400] : [])).toEqual([]);
  await tab.context.close();
}

export /** Follows a link of the page and waits for the heading (h1) of the page it leads to. */
async function follow(page: Page, link: string, heading = link): Promise<void> {
  await page.getByRole('link', { name: link }).click();
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

export interface ConsoleHarness {
  s: OAuthStack;
  browser: Browser;
  config: ConsoleConfig;
  /** The live administrator (role_console_admin, allowed everything by a policy). */
  admin: { id: string; email: string };
  /** Where this suite's screenshots and axe results go. */
  out: string;
  openTab: (width: number) => Promise<Tab>;
  /** From the console's sign-in page through the product's login page back to the users list. */
  signIn: (tab: Tab, email: string, environment?: 'live' | 'test', screenshots?: string) => Promise<void>;
  shot: (page: Page, name: string) => Promise<void>;
  /** axe-core over the page as it is: no serious or critical violation; every result kept in the output folder. */
  checkAccessibility: (page: Page, name: string) => Promise<void>;
  stop: () => Promise<void>;
}

/** The stack (named `suite`, bootstrap key `key`), an administrator of live, the console's config.json and chromium. */
export async function startConsole(suite: string, key: string): Promise<ConsoleHarness> {
  const out = path.resolve(__dirname, '..', 'test-output', suite);
  mkdirSync(out, { recursive: true });
  const s = await startOAuthStack(suite, key);
  let browser: Browser | undefined;
  try {
    const policy = await s.api('POST', '/policies', { name: 'console administrators', effect: 'allow', principals: ['role:console_admin'], actions: ['*'], resources: ['*'] });
    if (policy.status !== 201) throw new Error(`policy: ${policy.status} ${JSON.stringify(policy.body)}`);
    const admin = await userWithPassword(s.api, `admin@${suite}.example`, ['role_console_admin']);
    const config = (await (await fetch(`${s.issuer}/console/config.json`)).json()) as ConsoleConfig;
    browser = await launchChromium();
    const b = browser;
    const shot = async (page: Page, name: string) => {
      await page.screenshot({ path: path.join(out, `${name}.png`), fullPage: true });
    };
    const checkAccessibility = async (page: Page, name: string) => {
      // Evaluated through the DevTools protocol, which the page's CSP does not govern (an injected <script> would be refused).
      await page.evaluate(`${AXE_SOURCE}\n;void 0`);
      const result = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] })`)) as { violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] };
      writeFileSync(path.join(out, `${name}.axe.json`), JSON.stringify(result.violations, null, 2));
      const severe = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
      expect([name, severe]).toEqual([name, []]);
    };
    const openTab = async (width: number): Promise<Tab> => {
      const context = await b.newContext({ viewport: { width, height: width < 500 ? 844 : 900 }, deviceScaleFactor: 1 });
      const page = await context.newPage();
      const tab: Tab = { context, page, errors: [], foreign: [], failed: [] };
      const origin = new URL(s.issuer).origin;
      page.on('console', (m) => {
        if (m.type() === 'error' || /Content Security Policy|Refused to/i.test(m.text())) tab.errors.push(`${m.text()} [${m.location().url}]`);
      });
      page.on('pageerror', (err) => tab.errors.push(`pageerror: ${err.message}`));
      page.on('request', (r) => {
        const url = r.url();
        if (!url.startsWith('data:') && new URL(url).origin !== origin) tab.foreign.push(url);
      });
      page.on('response', async (r) => {
        if (r.status() >= 400) tab.failed.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`);
        if (new URL(r.url()).pathname !== '/oauth/token' || r.status() !== 200) return;
        const body = (await r.json().catch(() => ({}))) as { refresh_token?: string; access_token?: string };
        if (body.refresh_token) tab.refreshToken = body.refresh_token;
        if (body.access_token) tab.accessToken = body.access_token;
      });
      return tab;
    };
    const signIn = async (tab: Tab, email: string, environment: 'live' | 'test' = 'live', screenshots?: string) => {
      const { page } = tab;
      const first = await page.goto(`${s.issuer}/console/users`);
      expect(first!.status()).toBe(200);
      expect(first!.headers()['content-security-policy']).toBe(CONSOLE_CSP);
      await page.getByRole('button', { name: /^Sign in to / }).waitFor();
      if (environment === 'test') {
        await page.getByRole('group', { name: 'Environment' }).getByRole('button', { name: 'Test' }).click();
        await expect(page.getByRole('note', { name: 'Test environment' }).textContent()).resolves.toContain('Test environment.');
      }
      if (screenshots) {
        await shot(page, `${screenshots}-sign-in`);
        await checkAccessibility(page, `${screenshots}-sign-in`);
      }
      await page.getByRole('button', { name: `Sign in to ${environment}` }).click();
      await page.waitForURL((u) => u.pathname === '/oauth/authorize');
      const authorize = new URL(page.url());
      expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
        response_type: 'code',
        client_id: config.environments[environment]!.clientId,
        redirect_uri: `${s.issuer}/console/callback`,
        code_challenge_method: 'S256',
        code_challenge: expect.stringMatching(/^[\w-]{43}$/),
        state: expect.stringMatching(/^[\w-]{43}$/),
        nonce: expect.stringMatching(/^[\w-]{43}$/),
      });
      await page.fill('#email', email);
      await page.fill('#password', PASSWORD);
      if (screenshots) await shot(page, `${screenshots}-login-page`);
      await page.click('button[type=submit]');
      await page.waitForURL((u) => u.pathname === '/console/users');
      await page.getByRole('heading', { name: 'Users', level: 1 }).waitFor();
    };
    return {
      s,
      browser: b,
      config,
      admin,
      out,
      openTab,
      signIn,
      shot,
      checkAccessibility,
      stop: async () => {
        await b.close();
        await s.stop();
      },
    };
  } catch (err) {
    await browser?.close();
    await s.stop();
    throw err;
  }
}
