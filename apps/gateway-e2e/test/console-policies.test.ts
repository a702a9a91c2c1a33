/**
 * The console's Policies pages in Chromium against the local stack (the harness of console-support.ts): an
 * administrator lists the policies, creates one through the form (a faulty principal first: the API's message
 * under the field, with the request id; conditions that are not JSON named while typed), tries a changed draft
 * in the simulator beside the editor before saving (the page shows what POST /v1/policies/simulate answers for
 * the very body the page sent: allowed or denied, the reason, the matched policies, the explanations, the
 * evaluation time), sees a simulator field's message, saves, and deletes after a confirmation. At 1280 and
 * 390 px: axe-core finds no serious or critical violation, no sideways scrolling at 390, no console error but the
 * 400s provoked, no request to another origin. Screenshots: apps/gateway-e2e/test-output/console-policies/.
 */
import type { Page } from 'playwright-core';
import { browserSuite } from './chromium';
import { closeCleanTab, follow, startConsole, type ConsoleHarness } from './console-support';

jest.setTimeout(300_000);

const KEY = 'svc_sk_' + 'consolePoliciesTest'.repeat(2);
const PRINCIPAL_MESSAGE = 'role:<name>: the name is 1 to 63 characters of a-z, 0-9, _ and -, starting with a letter or digit';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- API answers as JSON

const suite = browserSuite('console policies in chromium');

let h: ConsoleHarness;
let reader: { id: string };

/** What the result panel of the simulator shows, read from the page. */
async function shownResult(page: Page) {
  const result = page.getByRole('region', { name: 'Simulation result' });
  const matched = result.getByRole('list', { name: 'Matched policies' }).locator(':scope > li');
  const explained = result.getByRole('list', { name: 'Policies that did not match' }).locator(':scope > li');
  return {
    decision: await result.locator('.sim-decision').textContent(),
    reason: await result.locator('.sim-reason').textContent(),
    matched: await Promise.all((await matched.all()).map(async (li) => ({ id: await li.locator('code').textContent(), name: await li.locator('strong').textContent(), effect: await li.locator('.chip').textContent() }))),
    explained: await Promise.all((await explained.all()).map(async (li) => ({ id: await li.locator(':scope > code').textContent(), why: await li.locator('.sim-why').textContent() }))),
    time: await result.locator('.facts > div').filter({ hasText: 'Evaluation time' }).locator('dd').textContent(),
  };
}

/** The same panel, as it should read for the API's answer. */
function expectedResult(data: Json) {
  const list = (v: string[]) => (v.length ? v.join(', ') : '(no bound)');
  const actual = (v: string | string[] | null) => (v === null ? '(none)' : Array.isArray(v) ? v.join(', ') : v);
  return {
    decision: data.allowed ? 'Allowed' : 'Denied',
    reason: data.reason,
    matched: (data.matchedPolicies as Json[]).map((m) => ({ id: m.id, name: m.name, effect: m.effect })),
    explained: (data.explanations as Json[]).map((x) => ({
      id: x.policyId,
      why: `failed on ${x.condition ? `${x.failed} ${x.condition}` : x.failed}: expected ${list(x.expected)}, got ${actual(x.actual)}`,
    })),
    time: expect.stringMatching(/^\d+ ms$/),
  };
}

/**
 * The bodies of the page's simulate requests, read through the DevTools protocol (the console's fetch sends the
 * body as a stream, which playwright's postData() does not hold).
 */
async function recordSimulateBodies(page: Page): Promise<Promise<Json>[]> {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  const bodies: Promise<Json>[] = [];
  cdp.on('Network.requestWillBeSent', (e) => {
    if (e.request.method !== 'POST' || new URL(e.request.url).pathname !== '/v1/policies/simulate') return;
    bodies.push(cdp.send('Network.getRequestPostData', { requestId: e.requestId }).then((r) => JSON.parse(r.postData) as Json));
  });
  return bodies;
}

/**
 * Clicks Simulate; answers the body the page sent and what the API says to the same body sent directly. An
 * answer is on the page once the page shows its decision id (each decision has its own).
 */
async function simulate(page: Page, bodies: Promise<Json>[]): Promise<{ sent: Json; direct: Json }> {
  const before = bodies.length;
  const response = page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/v1/policies/simulate');
  await page.getByRole('button', { name: 'Simulate' }).click();
  const answer = await response;
  const body = (await answer.json()) as Json;
  if (answer.status() === 200) await page.getByRole('region', { name: 'Simulation result' }).getByText(body.data.decisionId, { exact: true }).waitFor();
  else await page.locator('.simulator').getByRole('alert').waitFor();
  expect(bodies.length).toBeGreaterThan(before);
  const sent = await bodies.at(-1)!;
  const direct = await h.s.api('POST', '/policies/simulate', sent);
  return { sent, direct: direct.body };
}

const width = (page: Page) => page.evaluate('document.documentElement.scrollWidth');

/** A tab of `width` px recording the simulate bodies, signed in, on its way to the policies (from the main navigation). */
async function openPolicies(width: number) {
  const tab = await h.openTab(width);
  const bodies = await recordSimulateBodies(tab.page);
  await h.signIn(tab, h.admin.email);
  await tab.page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Policies' }).click();
  return { tab, page: tab.page, bodies };
}

suite('console policies in chromium', () => {
  beforeAll(async () => {
    h = await startConsole('console-policies', KEY);
    const created = await h.s.api('POST', '/users', { email: 'reader@policies.example', name: 'Reader', roles: ['role_reader'] });
    expect(created.status).toBe(201);
    reader = created.body.data;
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('lists, creates with the API’s field messages, simulates a draft as the API does, saves and deletes at 1280 px', async () => {
    const { tab, page, bodies } = await openPolicies(1280);

    // The list: the harness's policy.
    await page.getByRole('heading', { name: 'Policies', level: 1 }).waitFor();
    const table = page.getByRole('table', { name: 'Policies' });
    await table.waitFor();
    await expect(table.locator('tbody tr td:first-child').allTextContents()).resolves.toEqual(['console administrators']);
    await h.shot(page, '1-policies');
    await h.checkAccessibility(page, '1-policies');

    // A new policy: the conditions are checked as JSON while typed, the principals by the API.
    await follow(page, 'New policy');
    await page.getByLabel('Name').fill('readers of users');
    await page.getByLabel('Description').fill('Readers may read users from the office network');
    await page.getByLabel('Effect').selectOption('allow');
    await page.getByLabel('Principals').fill('role:reader\nrole:Bad!');
    await page.getByLabel('Actions').fill('read');
    await page.getByLabel('Resources').fill('/users/*');
    await page.getByLabel('Conditions (JSON)').fill('{"ip": {"allowlist": ["10.0.0.0/8"]}');
    const conditionsError = page.locator('.field-invalid .field-errors');
    await expect(conditionsError.textContent()).resolves.toMatch(/^conditions is not valid JSON: /);
    await page.getByLabel('Conditions (JSON)').fill('{"ip": {"allowlist": ["10.0.0.0/8"]}}');
    await expect(page.locator('.field-invalid').count()).resolves.toBe(0);
    // Tried before it exists: the simulator's answer names the draft's fault under the editor's field.
    await page.getByLabel('Principal', { exact: true }).fill(`user:${reader.id}`);
    await page.getByLabel('Action', { exact: true }).fill('read');
    await page.getByLabel('Resource', { exact: true }).fill(`/users/${reader.id}`);
    await page.getByLabel('IP address').fill('10.1.2.3');
    let run = await simulate(page, bodies);
    expect(run.direct.error.details).toEqual([{ field: 'policies[0].principals[1]', message: PRINCIPAL_MESSAGE }]);
    const fieldError = page.locator('.field-invalid .field-errors');
    await expect(fieldError.textContent()).resolves.toBe(`policies[0].principals[1] ${PRINCIPAL_MESSAGE}`);
    await expect(page.locator('.simulator').getByRole('alert').textContent()).resolves.toContain('The simulation failed');
    // Creating it: the API's message under the field, the request id above the form.
    await page.getByRole('button', { name: 'Create policy' }).click();
    const alert = page.getByRole('alert').filter({ hasText: 'The policy was not created' });
    await alert.waitFor();
    await expect(fieldError.textContent()).resolves.toBe(`principals[1] ${PRINCIPAL_MESSAGE}`);
    await expect(page.getByLabel('Principals').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(alert.textContent()).resolves.toContain('The policy was not created');
    await expect(alert.textContent()).resolves.toContain('The request is invalid');
    await expect(alert.locator('.request-id code').textContent()).resolves.toMatch(/^req_[0-9a-z]{26}$/);
    await h.shot(page, '2-new-invalid');
    await h.checkAccessibility(page, '2-new-invalid');
    await page.getByLabel('Principals').fill('role:reader');
    run = await simulate(page, bodies);
    expect(run.sent.policies).toEqual([{ name: 'readers of users', description: 'Readers may read users from the office network', effect: 'allow', principals: ['role:reader'], actions: ['read'], resources: ['/users/*'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } }]);
    expect(run.direct.data).toMatchObject({ allowed: true, matchedPolicies: [{ id: 'draft_0', name: 'readers of users', effect: 'allow' }] });
    await expect(shownResult(page)).resolves.toEqual(expectedResult(run.direct.data));
    await expect(page.getByRole('list', { name: 'Matched policies' }).textContent()).resolves.toContain('(draft)');
    await page.getByRole('button', { name: 'Create policy' }).click();
    await page.getByText('The policy was created.').waitFor();
    await page.getByRole('heading', { name: 'readers of users', level: 1 }).waitFor();
    const id = new URL(page.url()).pathname.split('/').pop()!;
    expect(id).toMatch(/^pol_/);
    expect((await h.s.api('GET', `/policies/${id}`)).body.data).toMatchObject({
      name: 'readers of users',
      description: 'Readers may read users from the office network',
      effect: 'allow',
      principals: ['role:reader'],
      actions: ['read'],
      resources: ['/users/*'],
      conditions: { ip: { allowlist: ['10.0.0.0/8'] } },
    });

    // A draft change tried before saving: updating is allowed by the draft, not by the stored policy.
    await page.getByLabel('Actions').fill('read\nupdate');
    await page.getByLabel('Principal', { exact: true }).fill(`user:${reader.id}`);
    await page.getByLabel('Action', { exact: true }).fill('update');
    await page.getByLabel('Resource', { exact: true }).fill(`/users/${reader.id}`);
    await page.getByLabel('IP address').fill('10.1.2.3');
    run = await simulate(page, bodies);
    expect(run.sent).toEqual({
      principal: `user:${reader.id}`,
      action: 'update',
      resource: `/users/${reader.id}`,
      context: { ip: '10.1.2.3' },
      policies: [
        {
          id,
          name: 'readers of users',
          description: 'Readers may read users from the office network',
          effect: 'allow',
          principals: ['role:reader'],
          actions: ['read', 'update'],
          resources: ['/users/*'],
          conditions: { ip: { allowlist: ['10.0.0.0/8'] } },
        },
      ],
      mode: 'merge',
      explain: true,
    });
    expect(run.direct.data).toMatchObject({ allowed: true, reason: 'allowed by readers of users', matchedPolicies: [{ id, name: 'readers of users', effect: 'allow' }] });
    await page.getByText('Allowed', { exact: true }).waitFor();
    await expect(shownResult(page)).resolves.toEqual(expectedResult(run.direct.data));
    await expect(page.getByRole('list', { name: 'Matched policies' }).textContent()).resolves.toContain('(this policy, as drafted)');
    // Nothing was saved: the stored policies alone deny it.
    expect((await h.s.api('GET', `/policies/${id}`)).body.data.actions).toEqual(['read']);
    const storedOnly = await h.s.api('POST', '/policies/simulate', { principal: `user:${reader.id}`, action: 'update', resource: `/users/${reader.id}`, context: { ip: '10.1.2.3' } });
    expect(storedOnly.body.data).toMatchObject({ allowed: false, matchedPolicies: [] });
    await h.shot(page, '3-simulated-allowed');
    await h.checkAccessibility(page, '3-simulated-allowed');

    // From outside the allowlist: denied, and the explanation names the condition and the values compared.
    await page.getByLabel('IP address').fill('192.168.1.1');
    await expect(page.getByText('The inputs or the draft changed since').isVisible()).resolves.toBe(true);
    run = await simulate(page, bodies);
    await page.getByText('Denied', { exact: true }).waitFor();
    expect(run.direct.data).toMatchObject({ allowed: false, reason: 'no policy allows it', matchedPolicies: [] });
    expect((run.direct.data.explanations as Json[])[0]).toEqual({ policyId: id, name: 'readers of users', effect: 'allow', failed: 'condition', condition: 'ip.allowlist', expected: ['10.0.0.0/8'], actual: '192.168.1.1' });
    await expect(shownResult(page)).resolves.toEqual(expectedResult(run.direct.data));
    await h.shot(page, '4-simulated-denied');

    // The stored policies only (no draft): the page sends no draft and shows the API's answer.
    await page.getByLabel('IP address').fill('10.1.2.3');
    await page.getByLabel('Evaluate').selectOption('stored');
    run = await simulate(page, bodies);
    expect(run.sent).not.toHaveProperty('policies');
    await page.getByText('Denied', { exact: true }).waitFor();
    await expect(shownResult(page)).resolves.toEqual(expectedResult(run.direct.data));
    await page.getByLabel('Evaluate').selectOption('merge');

    // A simulator field the API refuses: its message under the field.
    await page.getByLabel('IP address').fill('not-an-ip');
    await simulate(page, bodies);
    const ipErrors = page.locator('.simulator .field-invalid .field-errors');
    await ipErrors.waitFor();
    await expect(ipErrors.textContent()).resolves.toBe('context.ip must be an IPv4 or IPv6 address');
    await expect(page.locator('.simulator').getByRole('alert').locator('.request-id code').textContent()).resolves.toMatch(/^req_/);
    await page.getByLabel('IP address').fill('10.1.2.3');

    // Save the draft: now the stored policy allows it.
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('Saved.', { exact: true }).waitFor();
    expect((await h.s.api('GET', `/policies/${id}`)).body.data).toMatchObject({ actions: ['read', 'update'], conditions: { ip: { allowlist: ['10.0.0.0/8'] } } });
    await expect(page.getByLabel('Principal', { exact: true }).inputValue()).resolves.toBe(`user:${reader.id}`); // the simulator's inputs outlive the save
    run = await simulate(page, bodies);
    await page.getByText('Allowed', { exact: true }).waitFor();
    await expect(shownResult(page)).resolves.toEqual(expectedResult(run.direct.data));

    // Back in the list, then delete after a confirmation.
    await page.getByRole('link', { name: 'Policies', exact: true }).first().click();
    await follow(page, 'readers of users');
    await page.getByRole('button', { name: 'Delete policy' }).click();
    const dialog = page.getByRole('dialog', { name: 'Delete readers of users?' });
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await expect(dialog.isVisible()).resolves.toBe(false);
    await page.getByRole('button', { name: 'Delete policy' }).click();
    await h.shot(page, '5-delete');
    await h.checkAccessibility(page, '5-delete');
    await dialog.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('Policy readers of users was deleted.').waitFor();
    expect((await h.s.api('GET', `/policies/${id}`)).status).toBe(404);
    // The list as reloaded after the delete (waited for: the notice shows while it loads).
    const listed = page.getByRole('table', { name: 'Policies' });
    await listed.getByText('console administrators').waitFor();
    await expect(listed.locator('tbody tr td:first-child').allTextContents()).resolves.toEqual(['console administrators']);

    await closeCleanTab(tab, ['POST /v1/policies/simulate 400', 'POST /v1/policies 400', 'POST /v1/policies/simulate 400']);
  });

  it('is usable at 390 px: no sideways scrolling, the simulator under the editor, accessible', async () => {
    const { tab, page, bodies } = await openPolicies(390);
    await page.getByRole('table', { name: 'Policies' }).waitFor();
    await expect(width(page)).resolves.toBeLessThanOrEqual(390);
    await h.shot(page, '6-narrow-policies');
    await h.checkAccessibility(page, '6-narrow-policies');

    await follow(page, 'console administrators');
    await page.getByLabel('Principal', { exact: true }).fill(`user:${h.admin.id}`);
    await page.getByLabel('Action', { exact: true }).fill('delete');
    await page.getByLabel('Resource', { exact: true }).fill('/policies/pol_x');
    await page.getByRole('checkbox', { name: /completed a multi-factor authentication/ }).check();
    await page.getByLabel('MFA age (seconds)').fill('60');
    const run = await simulate(page, bodies);
    expect(run.sent.context).toEqual({ mfa: true, mfaAgeSeconds: 60 });
    await page.getByText('Allowed', { exact: true }).waitFor();
    await expect(shownResult(page)).resolves.toEqual(expectedResult(run.direct.data));
    const editor = await page.getByRole('region', { name: 'Edit', exact: true }).boundingBox();
    const simulator = await page.getByRole('region', { name: 'Simulator', exact: true }).boundingBox();
    expect(simulator!.y).toBeGreaterThanOrEqual(editor!.y + editor!.height);
    await expect(width(page)).resolves.toBeLessThanOrEqual(390);
    await h.shot(page, '7-narrow-policy');
    await h.checkAccessibility(page, '7-narrow-policy');

    await page.getByRole('link', { name: 'Policies', exact: true }).first().click();
    await follow(page, 'New policy');
    await expect(width(page)).resolves.toBeLessThanOrEqual(390);
    await h.checkAccessibility(page, '8-narrow-new-policy');
    await closeCleanTab(tab);
  });

  it('places the simulator beside the editor at 1280 px', async () => {
    const { tab, page } = await openPolicies(1280);
    await page.getByRole('link', { name: 'console administrators' }).click();
    const editor = page.getByRole('region', { name: 'Edit', exact: true });
    await editor.waitFor();
    const e = (await editor.boundingBox())!;
    const s = (await page.getByRole('region', { name: 'Simulator', exact: true }).boundingBox())!;
    expect(s.x).toBeGreaterThanOrEqual(e.x + e.width);
    expect(s.y).toBeLessThan(e.y + e.height);
    await closeCleanTab(tab);
  });
});
