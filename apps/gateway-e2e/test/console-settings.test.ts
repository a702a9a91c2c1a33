/**
 * The admin console's API keys, OAuth clients and SSO connections pages (apps/console/src/pages/api-keys,
 * oauth-clients, sso) in Debian's chromium against the local stack, signed in as an administrator through the
 * product's login page (the console's token carries read/write:api_keys, :clients and :sso).
 *
 * API keys: created through the form, the secret shown once (copied to the clipboard) and working against
 * GET /v1/users, only the masked form in the list, rotated without a grace period (the new secret works, the old
 * one is refused), revoked (refused). OAuth clients: the console's own client marked and its deletion warned
 * about, a confidential client registered (its secret shown once and working at the token endpoint), its
 * redirect URIs edited (a URL refused while typing, an http one refused by the API under the field with the
 * request id), deleted. SSO: a connection made from a test IdP's metadata (text refused while typing, metadata
 * without a certificate refused by the API under the field), its SP metadata URL shown, copied and fetched,
 * edited, deleted. At 1280 and 390 px: axe-core (no serious or critical violation), no sideways scrolling, no
 * console error but the deliberate 400s, no request to another origin. Screenshots and axe results go to
 * apps/gateway-e2e/test-output/console-settings/ (gitignored).
 */
import type { Page } from 'playwright-core';
import { startTestIdp, type TestIdp } from '../../gateway/test/support/saml-idp';
import { browserSuite } from './chromium';
import { closeCleanTab, follow, startConsole, type ConsoleHarness, type Tab } from './console-support';
import { postForm, type Json } from './oauth-support';
import { eventually } from './support';

jest.setTimeout(300_000);

const KEY = 'svc_sk_' + 'consoleSettingsTest'.repeat(2);
const HTTP_URI_MESSAGE = 'must be an https URL (http only for loopback hosts), without fragment, wildcard or credentials';

const suite = browserSuite('console settings pages in chromium');

let h: ConsoleHarness;
let s: ConsoleHarness['s'];
let idp: TestIdp;

const shot = (page: Page, name: string) => h.shot(page, name);
const checkAccessibility = (page: Page, name: string) => h.checkAccessibility(page, name);

/** A call of the API with a key, as an application would make it. */
const usersWith = async (key: string) => (await fetch(`${s.issuer}/v1/users?limit=1`, { headers: { authorization: `Bearer ${key}` } })).status;

/** Opens an area from the main navigation (in-app: the tokens live in memory, a page load would forget them). */
async function openArea(page: Page, label: string, heading: string): Promise<void> {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: label, exact: true }).click();
  await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
}

const secretOf = async (page: Page, region: string) => (await page.getByRole('region', { name: region }).locator('[data-secret]').textContent())!.trim();
const clipboard = (page: Page) => page.evaluate('navigator.clipboard.readText()') as Promise<string>;
/** The page's width, and what sticks out past the viewport (to say what to fix). */
const pageWidth = async (page: Page) =>
  (await page.evaluate(`({
    width: document.documentElement.scrollWidth,
    wider: [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5).slice(0, 5).map((e) => e.tagName.toLowerCase() + (e.className ? '.' + String(e.className).replace(/ /g, '.') : '')),
  })`)) as { width: number; wider: string[] };

async function signedIn(width: number): Promise<Tab> {
  const tab = await h.openTab(width);
  await tab.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: s.issuer });
  await h.signIn(tab, h.admin.email);
  return tab;
}

suite('console settings pages in chromium', () => {
  beforeAll(async () => {
    idp = await startTestIdp('corp');
    h = await startConsole('console-settings', KEY);
    ({ s } = h);
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('creates an API key (its secret shown once), lists it masked, rotates it and revokes it at 1280 px', async () => {
    const tab = await signedIn(1280);
    const { page } = tab;
    await openArea(page, 'API keys', 'API keys');
    // The bootstrap key is there, masked.
    await page.getByRole('table', { name: 'API keys' }).getByText(`svc_sk_…${KEY.slice(-4)}`).waitFor();
    await follow(page, 'New API key');
    await page.getByLabel('Name').fill('billing service');
    await expect(page.getByRole('radio', { name: 'Secret' }).isChecked()).resolves.toBe(true);
    await page.getByLabel('Expires').fill('2099-01-01T12:00');
    await expect(page.locator('.field-invalid').count()).resolves.toBe(0); // a date and time: the API checks the range
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('.field-invalid').getByText('must be within 10 years').waitFor();
    await page.getByLabel('Expires').fill('');
    await page.getByRole('button', { name: 'Create key' }).click();

    // The secret, once, with the warning and a copy button; it works.
    const secret = await secretOf(page, "The key's secret");
    expect(secret).toMatch(/^svc_sk_[\w-]{49}$/);
    await expect(page.getByRole('region', { name: "The key's secret" }).textContent()).resolves.toContain('it will not be shown again');
    await page.getByRole('button', { name: 'Copy the API key' }).click();
    await page.getByRole('status').filter({ hasText: 'Copied' }).waitFor();
    await expect(clipboard(page)).resolves.toBe(secret);
    await shot(page, '1-api-key-created');
    await checkAccessibility(page, '1-api-key-created');
    expect(await usersWith(secret)).toBe(200);

    // The list shows it masked; the secret is nowhere on the page any more.
    await page.getByRole('link', { name: 'Back to the API keys' }).click();
    const row = page.getByRole('table', { name: 'API keys' }).locator('tr', { has: page.getByRole('link', { name: 'billing service' }) });
    await expect(row.locator('.masked-key').textContent()).resolves.toBe(`svc_sk_…${secret.slice(-4)}`);
    await expect(row.locator('.status').textContent()).resolves.toBe('Active');
    await expect(page.content()).resolves.not.toContain(secret);
    await shot(page, '2-api-keys');
    await checkAccessibility(page, '2-api-keys');

    // Rotate without a grace period: a new secret, shown once; the old one is refused, the new one works.
    await row.getByRole('link', { name: 'billing service' }).click();
    await page.getByRole('heading', { name: 'billing service', level: 1 }).waitFor();
    await expect(page.content()).resolves.not.toContain(secret);
    await page.getByLabel('Grace period of the current secret').selectOption('0s');
    await page.getByRole('button', { name: 'Rotate key' }).click();
    const rotateDialog = page.getByRole('dialog', { name: 'Rotate billing service?' });
    await expect(rotateDialog.textContent()).resolves.toContain('stops working at once');
    await shot(page, '3-rotate-dialog');
    await checkAccessibility(page, '3-rotate-dialog');
    await rotateDialog.getByRole('button', { name: 'Rotate' }).click();
    const rotated = await secretOf(page, 'The new secret');
    expect(rotated).toMatch(/^svc_sk_/);
    expect(rotated).not.toBe(secret);
    await page.getByText('The previous secret no longer works.').waitFor();
    expect(await usersWith(rotated)).toBe(200);
    await eventually(() => usersWith(secret), (status) => status === 401);
    await shot(page, '4-rotated');

    // Revoke, after confirming (Cancel first changes nothing).
    await page.getByRole('button', { name: 'Revoke key' }).click();
    const revokeDialog = page.getByRole('dialog', { name: 'Revoke billing service?' });
    await revokeDialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(revokeDialog.isVisible()).resolves.toBe(false);
    expect(await usersWith(rotated)).toBe(200);
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await revokeDialog.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('The key was revoked: every call with it is refused from now on.').waitFor();
    await expect(page.locator('.page-head .status').textContent()).resolves.toBe('Revoked');
    await expect(page.getByRole('region', { name: 'The new secret' }).count()).resolves.toBe(0);
    await expect(page.getByRole('button', { name: 'Rotate key' }).count()).resolves.toBe(0);
    await eventually(() => usersWith(rotated), (status) => status === 401);
    const listed = (await s.api('GET', '/api-keys?limit=100')).body.data as Json[];
    expect(listed.find((k) => k.name === 'billing service')).toMatchObject({ revokedAt: expect.any(String), maskedKey: `svc_sk_…${rotated.slice(-4)}` });
    await shot(page, '5-revoked');

    await closeCleanTab(tab, ['POST /v1/api-keys 400']);
  });

  it('registers an OAuth client (its secret shown once), edits its redirect URIs, deletes it, and warns about the console’s own client at 1280 px', async () => {
    const tab = await signedIn(1280);
    const { page } = tab;
    await openArea(page, 'OAuth clients', 'OAuth clients');
    const consoleClientId = h.config.environments.live!.clientId;
    const consoleRow = page.getByRole('table', { name: 'OAuth clients' }).locator('tr', { hasText: consoleClientId });
    await expect(consoleRow.locator('.chip-console').textContent()).resolves.toBe('this console');
    await shot(page, '6-oauth-clients');
    await checkAccessibility(page, '6-oauth-clients');

    // The console's own client: marked on its page, and its deletion warned about (cancelled here).
    await consoleRow.getByRole('link').first().click();
    await page.getByRole('note', { name: "The console's own client" }).waitFor();
    await page.getByRole('button', { name: 'Delete client' }).click();
    const ownDialog = page.getByRole('dialog', { name: /^Delete / });
    await expect(ownDialog.textContent()).resolves.toContain('This is the console’s own client.');
    await shot(page, '7-console-client-delete');
    await ownDialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await s.api('GET', `/oauth/clients/${consoleClientId}`)).status).toBe(200);

    // Register a confidential client.
    await openArea(page, 'OAuth clients', 'OAuth clients');
    await follow(page, 'New OAuth client');
    await page.getByLabel('Name').fill('Billing portal');
    await page.getByLabel('Redirect URIs').fill('https://billing.example.com/callback');
    await page.getByRole('checkbox', { name: 'read:users' }).check();
    await page.getByRole('checkbox', { name: 'openid' }).uncheck();
    await shot(page, '8-new-client');
    await checkAccessibility(page, '8-new-client');
    await page.getByRole('button', { name: 'Register client' }).click();
    const clientSecret = await secretOf(page, 'The client secret');
    expect(clientSecret).toMatch(/^ocs_/);
    await expect(page.getByRole('region', { name: 'The client secret' }).textContent()).resolves.toContain('it will not be shown again');
    const clientId = (await page.locator('.facts code').first().textContent())!;
    expect(clientId).toMatch(/^cli_/);
    await page.getByRole('button', { name: 'Copy the client secret' }).click();
    await expect(clipboard(page)).resolves.toBe(clientSecret);
    await checkAccessibility(page, '9-client-created');
    expect((await s.api('GET', `/oauth/clients/${clientId}`)).body.data).toMatchObject({ name: 'Billing portal', type: 'confidential', redirectUris: ['https://billing.example.com/callback'], scopes: ['read:users'], firstParty: false });
    // The secret works: a client_credentials token.
    const basic = `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`;
    const token = await postForm(`${s.issuer}/oauth/token`, { grant_type: 'client_credentials', scope: 'read:users' }, undefined, { authorization: basic });
    expect([token.status, ((await token.json()) as Json).token_type]).toEqual([200, 'Bearer']);

    // Edit the redirect URIs: a line that is no URL is named while typing; an http one is refused by the API under the field.
    await page.getByRole('link', { name: 'I have copied it: go to the client' }).click();
    await page.getByRole('heading', { name: 'Edit' }).waitFor();
    await expect(page.content()).resolves.not.toContain(clientSecret);
    const uris = page.getByLabel('Redirect URIs');
    await uris.fill('https://billing.example.com/callback\nbilling.example.com/other');
    await expect(page.locator('.field-invalid .field-errors').textContent()).resolves.toBe('redirectUris[1] must be an absolute http(s) URL');
    await uris.fill('https://billing.example.com/callback\nhttp://billing.example.com/other');
    await expect(page.locator('.field-invalid').count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'Save changes' }).click();
    const fieldError = page.locator('.field-invalid .field-errors');
    await fieldError.waitFor();
    await expect(fieldError.textContent()).resolves.toBe(`redirectUris[1] ${HTTP_URI_MESSAGE}`);
    await expect(uris.getAttribute('aria-invalid')).resolves.toBe('true');
    const alert = page.getByRole('alert');
    await expect(alert.textContent()).resolves.toContain('The changes were not saved');
    await expect(alert.locator('.request-id code').textContent()).resolves.toMatch(/^req_[0-9a-z]{26}$/);
    await shot(page, '10-client-invalid-uri');
    await checkAccessibility(page, '10-client-invalid-uri');
    await uris.fill('https://billing.example.com/callback\nhttps://billing.example.com/other');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    expect((await s.api('GET', `/oauth/clients/${clientId}`)).body.data.redirectUris).toEqual(['https://billing.example.com/callback', 'https://billing.example.com/other']);

    // Delete it: its client credentials stop working.
    await page.getByRole('button', { name: 'Delete client' }).click();
    const deleteDialog = page.getByRole('dialog', { name: 'Delete Billing portal?' });
    await expect(deleteDialog.textContent()).resolves.not.toContain('console’s own client');
    await deleteDialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('The client Billing portal was deleted; its grants have ended.').waitFor();
    expect((await s.api('GET', `/oauth/clients/${clientId}`)).status).toBe(404);
    const refused = await postForm(`${s.issuer}/oauth/token`, { grant_type: 'client_credentials', scope: 'read:users' }, undefined, { authorization: basic });
    expect(refused.status).toBe(401);

    await closeCleanTab(tab, [`PATCH /v1/oauth/clients/${clientId} 400`]);
  });

  it('creates an SSO connection from IdP metadata, shows and fetches its SP metadata, edits and deletes it at 1280 px', async () => {
    const tab = await signedIn(1280);
    const { page } = tab;
    await openArea(page, 'SSO', 'SSO connections');
    await page.getByText('No SSO connections yet.').waitFor();
    await follow(page, 'New SSO connection');
    await page.getByLabel('Name', { exact: true }).fill('Corp IdP');
    await page.getByLabel('Email domains').fill('corp.example.com');
    const metadata = page.getByLabel('IdP metadata (XML)');
    // A URL is not the document: named while typing, nothing sent.
    await metadata.fill('https://corp.example.net/metadata');
    await page.locator('.field-invalid').getByText('is not XML', { exact: false }).waitFor();
    await metadata.fill('<html><body>Sign in</body></html>');
    await page.locator('.field-invalid').getByText('is not SAML metadata: it has no EntityDescriptor').waitFor();
    // Metadata without a signing certificate: the API names the field.
    await metadata.fill(idp.metadata({ noCertificate: true }));
    await expect(page.locator('.field-invalid').count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'Create connection' }).click();
    const metadataError = page.locator('.field-invalid .field-errors');
    await metadataError.waitFor();
    await expect(metadataError.textContent()).resolves.toMatch(/^idpMetadataXml .*certificate/);
    await expect(page.getByRole('alert').locator('.request-id code').textContent()).resolves.toMatch(/^req_/);
    await shot(page, '11-sso-invalid-metadata');
    await checkAccessibility(page, '11-sso-invalid-metadata');
    await metadata.fill(idp.metadata());
    await page.getByLabel('Default roles').fill('role_viewer');
    await page.getByLabel('Email attribute').fill('mail');
    await page.getByRole('button', { name: 'Create connection' }).click();
    await page.getByText('The connection was created.', { exact: false }).waitFor();
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect(id).toMatch(/^sso_/);
    expect((await s.api('GET', `/sso/connections/${id}`)).body.data).toMatchObject({ name: 'Corp IdP', domains: ['corp.example.com'], defaultRoles: ['role_viewer'], attributeMapping: { email: 'mail' }, idp: { entityId: idp.entityId } });

    // The SP side to give the IdP: the metadata URL (copied, then fetched), the entity id and the ACS URL.
    const spSection = page.getByRole('region', { name: 'For the identity provider' });
    const metadataUrl = `${s.issuer}/v1/sso/saml/${id}/metadata`;
    const acsUrl = `${s.issuer}/v1/sso/saml/${id}/acs`;
    await spSection.getByText(metadataUrl, { exact: true }).first().waitFor();
    await spSection.getByText(acsUrl, { exact: true }).waitFor();
    await spSection.getByRole('button', { name: 'Copy the SP metadata URL' }).click();
    await expect(clipboard(page)).resolves.toBe(metadataUrl);
    await spSection.getByRole('button', { name: 'Copy the ACS URL' }).click();
    await expect(clipboard(page)).resolves.toBe(acsUrl);
    const entityId = (await spSection.locator('dd', { has: page.getByRole('button', { name: 'Copy the entity id' }) }).locator('code').textContent())!;
    const spMetadata = await fetch(metadataUrl);
    expect(spMetadata.status).toBe(200);
    const spXml = await spMetadata.text();
    expect(spXml).toContain(`entityID="${entityId}"`);
    expect(spXml).toContain(`Location="${acsUrl}"`);
    await expect(page.getByRole('region', { name: 'Identity provider', exact: true }).textContent()).resolves.toContain(idp.entityId);
    await shot(page, '12-sso-connection');
    await checkAccessibility(page, '12-sso-connection');

    // Edit: another domain, MFA required; empty metadata keeps the stored one.
    await page.getByLabel('Email domains').fill('corp.example.com, corp.example.org');
    await page.getByRole('checkbox', { name: 'Require MFA' }).check();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    expect((await s.api('GET', `/sso/connections/${id}`)).body.data).toMatchObject({ domains: ['corp.example.com', 'corp.example.org'], requireMfa: true, idp: { entityId: idp.entityId } });

    // Delete: the SP metadata is gone with it.
    await page.getByRole('button', { name: 'Delete connection' }).click();
    await page.getByRole('dialog', { name: 'Delete Corp IdP?' }).getByRole('button', { name: 'Delete' }).click();
    await page.getByText('The connection Corp IdP was deleted; the users it created stay.').waitFor();
    expect((await s.api('GET', `/sso/connections/${id}`)).status).toBe(404);
    expect((await fetch(metadataUrl)).status).toBe(404);

    await closeCleanTab(tab, ['POST /v1/sso/connections 400']);
  });

  it('is usable at 390 px: no sideways scrolling, and accessible', async () => {
    // Something in each list.
    const apiKey = (await s.api('POST', '/api-keys', { name: 'narrow screen key with a long name', type: 'secret' })).body.data;
    const connection = await s.api('POST', '/sso/connections', { name: 'Narrow Corp', idpMetadataXml: idp.metadata(), domains: ['narrow.example.com'] });
    expect(connection.status).toBe(201);
    const tab = await signedIn(390);
    const { page } = tab;
    const check = async (name: string) => {
      expect(await pageWidth(page)).toEqual({ width: 390, wider: [] });
      await shot(page, name);
      await checkAccessibility(page, name);
    };
    await openArea(page, 'API keys', 'API keys');
    await check('13-narrow-api-keys');
    await follow(page, apiKey.name);
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await page.getByRole('dialog', { name: `Rotate ${apiKey.name}?` }).getByRole('button', { name: 'Rotate' }).click();
    await page.getByRole('region', { name: 'The new secret' }).waitFor();
    await check('14-narrow-api-key-rotated');
    await openArea(page, 'API keys', 'API keys');
    await follow(page, 'New API key');
    await check('15-narrow-new-api-key');

    await openArea(page, 'OAuth clients', 'OAuth clients');
    await check('16-narrow-oauth-clients');
    await follow(page, 'New OAuth client');
    await check('17-narrow-new-oauth-client');
    await page.getByLabel('Name').fill('Narrow app');
    await page.getByLabel('Redirect URIs').fill('https://narrow.example.com/a/rather/long/callback/path/for/a/narrow/screen');
    await page.getByRole('button', { name: 'Register client' }).click();
    await page.getByRole('region', { name: 'The client secret' }).waitFor();
    await check('18-narrow-client-created');
    await page.getByRole('link', { name: 'I have copied it: go to the client' }).click();
    await page.getByRole('heading', { name: 'Edit' }).waitFor();
    await check('19-narrow-oauth-client');

    await openArea(page, 'SSO', 'SSO connections');
    await check('20-narrow-sso');
    await page.getByRole('link', { name: 'Narrow Corp' }).click();
    await page.getByRole('region', { name: 'For the identity provider' }).waitFor();
    await check('21-narrow-sso-connection');
    await openArea(page, 'SSO', 'SSO connections');
    await follow(page, 'New SSO connection');
    await check('22-narrow-new-sso');

    await closeCleanTab(tab, []);
  });
});
