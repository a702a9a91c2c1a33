/**
 * The admin console (apps/console) in a real browser: Debian's chromium driven by playwright-core against the
 * local stack. An administrator (a user with a password, whose role a policy allows everything) signs in through
 * the product's own login page (authorization code + PKCE with the console's first-party client), lists and
 * searches the users, creates one through the form, edits its roles with an invalid value and sees the API's
 * message with the request id, revokes one session and then all of them, deletes it, and signs out (the refresh
 * token is revoked: introspection says inactive and a refresh fails; the login session ends at the end-session
 * endpoint). The test environment signs in with its own client, under a
 * banner. Throughout: no console error, no request to any other origin, the strict CSP header, tokens in memory
 * only, and axe-core finds no serious or critical violation at 1280 and 390 px. Screenshots and the axe results
 * go to apps/gateway-e2e/test-output/console/ (gitignored). Without chromium the suite is skipped with a note;
 * under CI=true a missing chromium is a failure.
 */
import type { Page } from 'playwright-core';
import { browserSuite } from './chromium';
import { closeCleanTab, CONSOLE_CSP as CSP, startConsole, type ConsoleHarness, type Tab } from './console-support';
import { postForm, userWithPassword, type Json } from './oauth-support';
import { apiClient, type Api } from './support';

jest.setTimeout(300_000);

const KEY = 'svc_sk_' + 'consoleBrowserTest'.repeat(2);
const ROLE_MESSAGE = 'must look like role_<name> (a-z, 0-9, _ and -)';

const suite = browserSuite('admin console in chromium');

let h: ConsoleHarness;
let testApi: Api;
// Short names for the harness's parts, set once it has started.
let s: ConsoleHarness['s'];
let config: ConsoleHarness['config'];
let admin: ConsoleHarness['admin'];
const openTab = (width: number) => h.openTab(width);
const signIn = (tab: Tab, email: string, environment: 'live' | 'test' = 'live', screenshots?: string) => h.signIn(tab, email, environment, screenshots);
const shot = (page: Page, name: string) => h.shot(page, name);
const checkAccessibility = (page: Page, name: string) => h.checkAccessibility(page, name);

/** Nothing of the session outside memory: no web storage, no cookie the page can read. */
async function expectTokensInMemoryOnly(page: Page): Promise<void> {
  const stored = await page.evaluate(`({ local: localStorage.length, session: sessionStorage.length, cookies: document.cookie })`);
  expect(stored).toEqual({ local: 0, session: 0, cookies: '' });
}

const introspect = async (token: string, clientId: string) => (await postForm(`${s.issuer}/oauth/introspect`, { token, client_id: clientId })).json() as Promise<Json>;

suite('admin console in chromium', () => {
  beforeAll(async () => {
    h = await startConsole('console', KEY);
    ({ s, config, admin } = h);
    for (const email of ['ada.search@example.com', 'grace@example.org', 'ada.lovelace.search@example.net']) {
      expect((await s.api('POST', '/users', { email, name: email.split('@')[0], roles: ['role_member'] })).status).toBe(201);
    }
    // The test environment: its own key, administrator, policy and users (nothing of live is visible there).
    const testKey = (await s.api('POST', '/api-keys', { name: 'console test env', type: 'test' })).body.data.key as string;
    testApi = apiClient(`${s.issuer}/v1`, testKey);
    expect((await testApi('POST', '/policies', { name: 'test administrators', effect: 'allow', principals: ['role:console_admin'], actions: ['*'], resources: ['*'] })).status).toBe(201);
    await userWithPassword(testApi, 'tester@console.example', ['role_console_admin']);
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('serves the console and its config.json with the strict CSP, and no secret', async () => {
    for (const p of ['/console', '/console/users/user_x', '/console/config.json']) {
      const res = await fetch(`${s.issuer}${p}`);
      expect([p, res.status]).toEqual([p, 200]);
      expect(res.headers.get('content-security-policy')).toBe(CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    }
    expect(config).toEqual({
      issuer: s.issuer,
      redirectUri: `${s.issuer}/console/callback`,
      scope: 'openid profile email offline_access read:users write:users read:policies write:policies read:logs export:logs read:api_keys write:api_keys read:clients write:clients read:sso write:sso',
      environments: { live: { clientId: expect.stringMatching(/^cli_/) }, test: { clientId: expect.stringMatching(/^cli_/) } },
    });
    // The clients are the first-party public ones identity made at start-up, one per environment.
    const live = await s.api('GET', `/oauth/clients/${config.environments.live!.clientId}`);
    expect(live.body.data).toMatchObject({ type: 'public', firstParty: true, environment: 'live', redirectUris: [`${s.issuer}/console/callback`] });
    expect(live.body.data).not.toHaveProperty('clientSecret');
    expect((await testApi('GET', `/oauth/clients/${config.environments.test!.clientId}`)).body.data).toMatchObject({ environment: 'test', firstParty: true });
    const html = await (await fetch(`${s.issuer}/console`)).text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/i);
    expect(html).not.toMatch(/style=/i);
  });

  it('signs in, lists, searches, creates, edits, revokes sessions, deletes and signs out at 1280 px', async () => {
    const tab = await openTab(1280);
    const { page } = tab;
    await signIn(tab, admin.email, 'live', '1');
    // The signed-in user's email, and the users of live (the administrator among them).
    await expect(page.locator('.account-email').textContent()).resolves.toBe(admin.email);
    await page.getByRole('link', { name: admin.email }).waitFor();
    await expect(page.getByRole('table', { name: 'Users' }).locator('tbody tr').count()).resolves.toBe(4);
    await expectTokensInMemoryOnly(page);
    await shot(page, '2-users');
    await checkAccessibility(page, '2-users');

    // Search by part of the email.
    await page.getByLabel('Search by email').fill('SEARCH@Example.COM');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL((u) => u.searchParams.get('email') === 'SEARCH@Example.COM');
    const found = page.getByRole('table', { name: 'Users whose email contains SEARCH@Example.COM' });
    await found.waitFor();
    await expect(found.locator('tbody tr td:first-child').allTextContents()).resolves.toEqual(['ada.search@example.com']);
    await shot(page, '3-search');
    await page.getByLabel('Search by email').fill('nobody-has-this');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByText('No user’s email contains “nobody-has-this”.').waitFor();

    // Create a user through the form; a faulty email comes back from the API next to its field first.
    await page.getByRole('link', { name: 'New user' }).click();
    await page.getByRole('heading', { name: 'New user' }).waitFor();
    await page.getByLabel('Email').fill('not-an-email');
    await page.getByLabel('Name').fill('Katherine Johnson');
    await page.getByLabel('Roles').fill('role_viewer');
    await page.getByLabel('Metadata (JSON)').fill('{"team": "flight"');
    await expect(page.locator('.field-invalid').count()).resolves.toBe(1); // the JSON, checked as it is typed
    await page.getByLabel('Metadata (JSON)').fill('{"team": "flight"}');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.locator('.field-invalid').getByText('invalid email format').waitFor();
    await page.getByLabel('Email').fill('katherine@example.com');
    await page.getByRole('button', { name: 'Create user' }).click();
    await page.getByText('The user was created.').waitFor();
    await page.getByRole('heading', { name: 'katherine@example.com' }).waitFor();
    const created = new URL(page.url()).pathname.split('/').pop()!;
    expect(created).toMatch(/^user_/);
    expect((await s.api('GET', `/users/${created}`)).body.data).toMatchObject({ email: 'katherine@example.com', name: 'Katherine Johnson', roles: ['role_viewer'], metadata: { team: 'flight' } });
    await shot(page, '4-created');

    // Edit its roles with an invalid value: the API's message next to the field, and the request id.
    await page.getByLabel('Roles').fill('role_viewer, Admin!');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const fieldError = page.locator('.field-invalid .field-errors');
    await fieldError.waitFor();
    await expect(fieldError.textContent()).resolves.toBe(`roles[1] ${ROLE_MESSAGE}`);
    await expect(page.getByLabel('Roles').getAttribute('aria-invalid')).resolves.toBe('true');
    const alert = page.getByRole('alert');
    await expect(alert.textContent()).resolves.toContain('The request is invalid');
    await expect(alert.locator('.request-id code').textContent()).resolves.toMatch(/^req_[0-9a-z]{26}$/);
    await shot(page, '5-invalid-role');
    await checkAccessibility(page, '5-invalid-role');
    await page.getByLabel('Roles').fill('role_viewer role_ops');
    await page.getByLabel('Name').fill('Katherine G. Johnson');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    expect((await s.api('GET', `/users/${created}`)).body.data).toMatchObject({ name: 'Katherine G. Johnson', roles: ['role_viewer', 'role_ops'], metadata: { team: 'flight' } });

    // The user's sessions: three opened by an application, listed; one revoked by itself, then the others together.
    const opened: string[] = [];
    for (let i = 0; i < 3; i++) {
      const made = await s.api('POST', '/sessions', { userId: created, expiresIn: '1h' });
      expect(made.status).toBe(201);
      opened.push(made.body.data.id as string);
    }
    await page.getByRole('link', { name: 'Users', exact: true }).first().click();
    await page.getByRole('link', { name: 'katherine@example.com' }).click();
    const sessions = page.getByRole('table', { name: 'Active sessions of katherine@example.com' });
    await sessions.waitFor();
    await expect(sessions.locator('tbody tr').count()).resolves.toBe(3);
    await page.getByRole('button', { name: `Revoke session ${opened[0]}` }).click();
    const oneDialog = page.getByRole('dialog', { name: 'Revoke this session?' });
    await oneDialog.getByRole('button', { name: 'Revoke session' }).click();
    await page.getByText(`Session ${opened[0]} was revoked.`).waitFor();
    // The list reloads (the table is away while it loads): the two others back, the revoked one gone.
    await sessions.getByText(opened[1]!).waitFor();
    await sessions.getByText(opened[2]!).waitFor();
    await expect(sessions.getByText(opened[0]!).count()).resolves.toBe(0);
    await expect(sessions.locator('tbody tr').count()).resolves.toBe(2);
    expect((await s.api('GET', `/users/${created}/sessions`)).body.data.map((x: { id: string }) => x.id).sort()).toEqual(opened.slice(1).sort());
    await page.getByRole('button', { name: 'Revoke all sessions' }).click();
    const revokeDialog = page.getByRole('dialog', { name: 'Revoke every session?' });
    await revokeDialog.waitFor();
    await shot(page, '6-revoke-sessions');
    await checkAccessibility(page, '6-revoke-sessions');
    await revokeDialog.getByRole('button', { name: 'Revoke all sessions' }).click();
    await page.getByText('Every session of this user was revoked.').waitFor();
    await page.getByText('No active session.').waitFor();
    expect((await s.api('GET', `/users/${created}/sessions`)).body.data).toEqual([]);

    // The administrator's own page lists the session the login page opened.
    await page.getByRole('link', { name: 'Users', exact: true }).first().click();
    await page.getByRole('link', { name: admin.email }).click();
    await expect(page.getByRole('table', { name: `Active sessions of ${admin.email}` }).locator('tbody tr').first().textContent()).resolves.toContain('pwd');

    // Delete the created user, after confirming.
    await page.getByRole('link', { name: 'Users', exact: true }).first().click();
    await page.getByRole('link', { name: 'katherine@example.com' }).click();
    await page.getByRole('button', { name: 'Delete user' }).click();
    const deleteDialog = page.getByRole('dialog', { name: 'Delete katherine@example.com?' });
    await deleteDialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(deleteDialog.isVisible()).resolves.toBe(false);
    await page.getByRole('button', { name: 'Delete user' }).click();
    await deleteDialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('User katherine@example.com was deleted.').waitFor();
    expect((await s.api('GET', `/users/${created}`)).status).toBe(404);
    await shot(page, '7-deleted');

    // Sign out: the refresh token is revoked (its grant ends, the access token with it) and nothing is kept.
    const clientId = config.environments.live!.clientId;
    const refreshToken = tab.refreshToken!;
    const accessToken = tab.accessToken!;
    expect(refreshToken).toMatch(/^ort_/);
    await expect(introspect(refreshToken, clientId)).resolves.toMatchObject({ active: true, token_type: 'refresh_token', sub: admin.id });
    await page.getByRole('button', { name: 'Sign out' }).click();
    // Through the end-session endpoint (with the ID token as the hint: no question asked) back to the console.
    await page.waitForURL((u) => u.pathname === '/console/' || u.pathname === '/console');
    await page.getByText('You are signed out.').waitFor();
    await expect(introspect(refreshToken, clientId)).resolves.toEqual({ active: false });
    // The authorization server's login session is over too: no session of the administrator is left.
    expect((await s.api('GET', `/users/${admin.id}/sessions`)).body.data).toEqual([]);
    const refresh = await postForm(`${s.issuer}/oauth/token`, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });
    expect([refresh.status, ((await refresh.json()) as Json).error]).toEqual([400, 'invalid_grant']);
    expect((await fetch(`${s.issuer}/v1/users`, { headers: { authorization: `Bearer ${accessToken}` } })).status).toBe(401);
    await expectTokensInMemoryOnly(page);
    await shot(page, '8-signed-out');

    await closeCleanTab(tab, ['POST /v1/users 400', `PATCH /v1/users/${created} 400`]);
  });

  it('is usable at 390 px: no sideways scrolling, and accessible', async () => {
    const tab = await openTab(390);
    const { page } = tab;
    await signIn(tab, admin.email, 'live', '9-narrow');
    const width = async () => page.evaluate('document.documentElement.scrollWidth');
    await expect(width()).resolves.toBeLessThanOrEqual(390);
    await shot(page, '9-narrow-users');
    await checkAccessibility(page, '9-narrow-users');
    await page.getByRole('link', { name: 'ada.search@example.com' }).click();
    await page.getByRole('heading', { name: 'ada.search@example.com' }).waitFor();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await expect(width()).resolves.toBeLessThanOrEqual(390);
    await shot(page, '9-narrow-user');
    await checkAccessibility(page, '9-narrow-user');
    await page.goBack();
    await page.getByRole('link', { name: 'New user' }).click();
    await page.getByRole('heading', { name: 'New user' }).waitFor();
    await expect(width()).resolves.toBeLessThanOrEqual(390);
    await checkAccessibility(page, '9-narrow-new-user');
    await closeCleanTab(tab);
  });

  it('signs in to the test environment with its own client, under a banner, showing only test data', async () => {
    const tab = await openTab(1280);
    const { page } = tab;
    await signIn(tab, 'tester@console.example', 'test', '10-test');
    await expect(page.getByRole('note', { name: 'Test environment' }).isVisible()).resolves.toBe(true);
    await expect(page.getByRole('group', { name: 'Environment' }).getByRole('button', { name: 'Test' }).getAttribute('aria-pressed')).resolves.toBe('true');
    const users = page.getByRole('table', { name: 'Users' });
    await users.getByText('tester@console.example').waitFor();
    await expect(users.locator('tbody tr td:first-child').allTextContents()).resolves.toEqual(['tester@console.example']);
    await shot(page, '10-test-users');
    await checkAccessibility(page, '10-test-users');
    // A live user cannot sign in with the test client: switching back asks for a live account.
    await page.getByRole('group', { name: 'Environment' }).getByRole('button', { name: 'Live' }).click();
    await page.waitForURL((u) => u.pathname === '/oauth/authorize' && u.searchParams.get('client_id') === config.environments.live!.clientId);
    await closeCleanTab(tab);
  });
});
