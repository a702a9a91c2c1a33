/**
 * The admin console's audit log pages (apps/console/src/pages/logs) in Debian's chromium against the local stack:
 * failed logins (from a London address, through the trusted proxy header) and users are recorded; the
 * administrator searches them with the search language and sees the matches in <mark>, filters by event kind,
 * result and time range (the list's GET /logs filters and the search's clauses), sees the chart of entries per
 * hour (the canvas drawn, the legend and the table giving the right series and counts), opens an entry's full form,
 * exports the current filter to CSV, watches the progress bar reach 100 % and downloads the file, whose rows are
 * the entries listed. An unparsable query shows the API's message under the search field. At 1280 and 390 px:
 * no console error, no request to another origin, no sideways scrolling at 390 px, and axe-core finds no
 * serious or critical violation. Screenshots in apps/gateway-e2e/test-output/console-logs/.
 */
import { readFileSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { browserSuite } from './chromium';
import { closeCleanTab, startConsole, type ConsoleHarness, type Tab } from './console-support';
import { eventually } from './support';

jest.setTimeout(300_000);

// 'consoleLogsTest' twice is 30 characters: a bootstrap key needs at least 32 after its prefix.
const KEY = 'svc_sk_' + 'consoleLogsTest'.repeat(3);
const LONDON = '81.2.69.142';
const FAILED_LOGINS = 3;
/** Console errors a test provokes on purpose: the 400 of an unparsable search. */

const suite = browserSuite('admin console audit log in chromium');

let h: ConsoleHarness;
/** When the events were made (a custom range around them finds them; one in 2020 does not). */
let madeAt: number;

/** How many pixels of the chart's canvas have the first series' colour (#1d4ed8): Chart.js has drawn its bars. */
const SERIES_PIXELS = `(() => {
  const c = document.querySelector('figure.logs-figure canvas');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4) if (d[i] === 0x1d && d[i + 1] === 0x4e && d[i + 2] === 0xd8) n++;
  return n;
})()`;

const wallTime = (ms: number) => new Date(ms).toISOString().slice(0, 16);
const rows = (page: Page) => page.locator('table.logs-table tbody tr');
const width = (page: Page) => page.evaluate('document.documentElement.scrollWidth') as Promise<number>;

/**
 * Submits the filter form and waits for the entries of the new filter: React renders the new filter's page (with
 * "Loading entries…") within the click's event, so once that line is gone its entries are shown.
 */
async function applyFilter(page: Page): Promise<void> {
  await page.getByRole('search', { name: 'Audit log filter' }).getByRole('button', { name: 'Search', exact: true }).click();
  await page.getByText('Loading entries…').waitFor({ state: 'detached' });
}

/** Waits for the chart (or its "no entries" line) to be done counting. */
async function chartDone(page: Page): Promise<void> {
  await page.getByText('Counting entries…').waitFor({ state: 'detached' });
}

suite('admin console audit log in chromium', () => {
  beforeAll(async () => {
    h = await startConsole('console-logs', KEY);
    const { api } = h.s;
    madeAt = Date.now();
    const user = (await api('POST', '/users', { email: 'nightingale@logs.example', name: 'Florence Nightingale' })).body.data as { id: string };
    expect(user.id).toMatch(/^user_/);
    for (let i = 0; i < FAILED_LOGINS; i++) {
      const res = await api('POST', '/auth/login', { email: 'nightingale@logs.example', password: `wrong password ${i}` }, { 'x-forwarded-for': LONDON });
      expect(res.status).toBe(401);
    }
    // An unknown email: an anonymous actor with the email tried.
    expect((await api('POST', '/auth/login', { email: 'ghost@logs.example', password: 'wrong password' }, { 'x-forwarded-for': LONDON })).status).toBe(401);
    // Searchable once the audit consumer has stored them.
    await eventually(
      async () => (await api('POST', '/logs/search', { query: 'nightingale', from: new Date(madeAt - 60_000).toISOString(), limit: 10 })).body.meta?.totalHits,
      (n) => n === FAILED_LOGINS,
    );
    await eventually(
      async () => (await api('GET', '/logs?limit=100&events=user.login&result=failure')).body.data?.length,
      (n) => n === FAILED_LOGINS + 1,
    );
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('searches with highlights, filters, charts, shows an entry and exports the filter at 1280 px', async () => {
    const tab: Tab = await h.openTab(1280);
    const { page } = tab;
    await h.signIn(tab, h.admin.email);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log', level: 1 }).waitFor();
    await page.getByText('Loading entries…').waitFor({ state: 'detached' });
    await chartDone(page);
    // The last 24 hours: the users and logins made above, the administrator's sign-in.
    await expect(rows(page).count()).resolves.toBeGreaterThanOrEqual(FAILED_LOGINS + 2);
    await h.shot(page, '1-logs');

    // The search language: matches of the search text are marked, from the API's highlights.
    await page.getByLabel('Search', { exact: true }).fill('nightingale');
    await applyFilter(page);
    expect(new URL(page.url()).searchParams.get('q')).toBe('nightingale');
    await page.getByRole('status').filter({ hasText: `${FAILED_LOGINS} matches` }).waitFor();
    await expect(rows(page).count()).resolves.toBe(FAILED_LOGINS);
    const marks = page.locator('table.logs-table mark');
    await expect(marks.allTextContents()).resolves.toEqual(Array(FAILED_LOGINS).fill('nightingale'));
    // Marked inside the actor's email, which reads whole; no markup shown as text.
    await expect(page.locator('table.logs-table td[data-label="Actor"]').first().textContent()).resolves.toContain('nightingale@logs.example');
    await expect(page.locator('table.logs-table').textContent()).resolves.not.toMatch(/<\/?em>|&lt;|&amp;/);
    await expect(page.locator('table.logs-table td[data-label="Origin"]').first().textContent()).resolves.toContain('London, GB');

    // A search with a prefix and a field: the city is marked too.
    await page.getByLabel('Search', { exact: true }).fill('night* city:london');
    await applyFilter(page);
    // city: is not a field of the language: the API's message is shown under the search field, with the request id.
    const queryErrors = page.locator('.field-invalid .field-errors');
    await queryErrors.waitFor();
    await expect(queryErrors.textContent()).resolves.toMatch(/query/);
    await expect(page.getByRole('alert').filter({ hasText: 'The search could not run' }).textContent()).resolves.toMatch(/Request id: req_/);
    await h.shot(page, '2-invalid-query');
    await page.getByLabel('Search', { exact: true }).fill('night* london');
    await applyFilter(page);
    await page.getByRole('status').filter({ hasText: `${FAILED_LOGINS} matches` }).waitFor();
    await expect(marks.allTextContents()).resolves.toEqual(Array(FAILED_LOGINS).fill(['nightingale', 'London']).flat());
    await h.shot(page, '3-search-highlights');

    // Filters with the search: one event kind and the result become clauses of the language.
    await page.getByText('Events: all kinds').click();
    await page.getByRole('checkbox', { name: 'user.login', exact: true }).check();
    await page.getByLabel('Result', { exact: true }).selectOption('success');
    await applyFilter(page);
    await page.getByRole('status').filter({ hasText: 'No entries match in this range.' }).waitFor();
    await page.getByLabel('Result', { exact: true }).selectOption('failure');
    await applyFilter(page);
    await page.getByRole('status').filter({ hasText: `${FAILED_LOGINS} matches` }).waitFor();
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({ q: 'night* london', events: 'user.login', result: 'failure' });

    // Several kinds cannot be ORed in a search: the form says so before asking.
    await page.getByText('Events: user.login').click();
    await page.getByRole('checkbox', { name: 'user.created', exact: true }).check();
    await page.getByRole('search', { name: 'Audit log filter' }).getByRole('button', { name: 'Search', exact: true }).click();
    await page.locator('.logs-events .field-errors').waitFor();
    await expect(page.locator('.logs-events .field-errors').textContent()).resolves.toContain('choose one event kind at most');
    await page.getByRole('checkbox', { name: 'user.created', exact: true }).uncheck();

    // Without search text the list's own filters: both failed logins' actors (the user and the unknown email).
    await page.getByLabel('Search', { exact: true }).fill('');
    const listing = page.waitForResponse((r) => new URL(r.url()).pathname === '/v1/logs' && new URL(r.url()).searchParams.get('limit') === '20');
    await applyFilter(page);
    expect(Object.fromEntries(new URL((await listing).url()).searchParams)).toMatchObject({ events: 'user.login', result: 'failure', limit: '20' });
    await expect(rows(page).count()).resolves.toBe(FAILED_LOGINS + 1);
    await expect(page.locator('table.logs-table mark').count()).resolves.toBe(0);

    // A time range: none of them in a day of 2020; all of them around when they were made.
    await page.getByLabel('Time range', { exact: true }).selectOption('custom');
    await page.getByLabel('From (UTC)', { exact: true }).fill('2020-01-01T00:00');
    await page.getByLabel('To (UTC)', { exact: true }).fill('2020-01-02T00:00');
    await applyFilter(page);
    await page.getByRole('status').filter({ hasText: 'No entries match in this range.' }).waitFor();
    await chartDone(page);
    await page.getByRole('status').filter({ hasText: 'No entries in this range.' }).waitFor();
    await page.getByLabel('From (UTC)', { exact: true }).fill(wallTime(madeAt - 3_600_000));
    await page.getByLabel('To (UTC)', { exact: true }).fill(wallTime(madeAt + 3_600_000));
    await page.getByLabel('Search', { exact: true }).fill('nightingale');
    await applyFilter(page);
    await page.getByRole('status').filter({ hasText: `${FAILED_LOGINS} matches` }).waitFor();
    expect(Object.fromEntries(new URL(page.url()).searchParams)).toEqual({
      q: 'nightingale',
      events: 'user.login',
      result: 'failure',
      range: 'custom',
      from: wallTime(madeAt - 3_600_000),
      to: wallTime(madeAt + 3_600_000),
    });

    // The chart of this filter: one series (user.login, failure) of 3 entries, drawn on the canvas, and as a table.
    await chartDone(page);
    const figure = page.locator('figure.logs-figure');
    await expect(figure.getAttribute('data-total')).resolves.toBe(String(FAILED_LOGINS));
    await expect(page.getByRole('list', { name: 'Series' }).getByRole('listitem').allTextContents()).resolves.toEqual([`user.login failure (${FAILED_LOGINS})`]);
    const canvas = figure.locator('canvas[role="img"]');
    await expect(canvas.getAttribute('aria-label')).resolves.toMatch(/^Bar chart of 3 entries per hour from /);
    // Chart.js has drawn bars: pixels of the series' colour (the first of the palette, striped for failures) are on the canvas.
    await eventually(() => page.evaluate(SERIES_PIXELS) as Promise<number>, (n) => n > 20);
    await figure.getByText('The numbers as a table').click();
    const table = page.getByRole('table', { name: 'Entries per hour by event kind and result' });
    const cells = await table.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(cells.every((c) => c[1] === 'user.login' && c[2] === '0')).toBe(true);
    expect(cells.reduce((n, c) => n + Number(c[3]), 0)).toBe(FAILED_LOGINS);
    // The numbers are the API's own counts of this filter (POST /v1/logs/counts), hour by hour.
    const from = new Date(Date.parse(`${wallTime(madeAt - 3_600_000)}:00Z`)).toISOString();
    const to = new Date(Date.parse(`${wallTime(madeAt + 3_600_000)}:00Z`)).toISOString();
    const direct = await h.s.api('POST', '/logs/counts', { from, to, events: ['user.login'], query: 'nightingale result:failure' });
    expect(direct.status).toBe(200);
    expect(direct.body.data.total).toBe(FAILED_LOGINS);
    const byHour = (direct.body.data.counts as { start: string; count: number }[]).map((c) => [c.start.slice(5, 16).replace('T', ' '), c.count]);
    expect(cells.map((c) => [c[0], Number(c[3])])).toEqual(byHour);
    await h.shot(page, '4-filtered-chart');
    await h.checkAccessibility(page, '4-filtered-chart');

    // An entry's full form, and back to the same filter.
    const firstLink = rows(page).first().getByRole('link');
    const entryId = ((await firstLink.getAttribute('aria-label')) ?? '').split(' ')[1]!;
    expect(entryId).toMatch(/^log_/);
    await firstLink.click();
    await page.waitForURL((u) => u.pathname === `/console/logs/${entryId}`);
    await page.getByRole('heading', { level: 1, name: /user\.login/ }).waitFor();
    const full = (await h.s.api('GET', `/logs/${entryId}`)).body.data;
    const facts = page.locator('main');
    for (const text of [entryId, full.traceId, 'nightingale@logs.example', LONDON, 'London', full.context.location.region, String(full.metadata.authMethod)]) {
      await expect(facts.textContent()).resolves.toContain(text);
    }
    await page.getByRole('heading', { name: 'Metadata' }).waitFor();
    await h.shot(page, '5-entry');
    await h.checkAccessibility(page, '5-entry');
    await page.locator('.crumbs').getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('status').filter({ hasText: `${FAILED_LOGINS} matches` }).waitFor();
    expect(new URL(page.url()).searchParams.get('q')).toBe('nightingale');

    // An export of the current filter: the progress bar, then the download, whose rows are the entries listed.
    const listedIds = await rows(page).locator('a').evaluateAll((as) => as.map((a) => (a.getAttribute('aria-label') ?? '').split(' ')[1]));
    await page.getByLabel('Format', { exact: true }).selectOption('csv');
    await page.getByRole('button', { name: 'Export these entries' }).click();
    const bar = page.getByRole('progressbar');
    await bar.waitFor();
    const download = page.getByRole('link', { name: /^Download exp_\w+\.csv$/ });
    await download.waitFor({ timeout: 60_000 });
    await expect(page.evaluate(`(() => { const p = document.querySelector('progress'); return [p.value, p.max]; })()`)).resolves.toEqual([100, 100]);
    await expect(page.locator('.logs-progress-text').textContent()).resolves.toBe(`100% · Completed: ${FAILED_LOGINS} entries written`);
    const exportId = /exp_\w+/.exec((await download.textContent()) ?? '')![0];
    await h.shot(page, '6-export-completed');
    await h.checkAccessibility(page, '6-export-completed');
    const [file] = await Promise.all([page.waitForEvent('download'), download.click()]);
    expect(file.suggestedFilename()).toBe(`${exportId}.csv`);
    const csv = readFileSync((await file.path())!, 'utf8');
    const lines = csv.split('\r\n').filter(Boolean);
    expect(lines[0]!.split(',').slice(0, 4)).toEqual(['id', 'timestamp', 'event', 'actor.id']);
    expect(lines).toHaveLength(FAILED_LOGINS + 1);
    expect(lines.slice(1).map((l) => l.split(',')[0]).sort()).toEqual([...listedIds].sort());
    expect(lines.slice(1).every((l) => l.includes('nightingale@logs.example') && l.includes(',user.login,'))).toBe(true);
    // The export was made of the current filter: its window, the kind as events, the rest as a query.
    const made = (await h.s.api('GET', `/logs/export/${exportId}`)).body.data;
    expect(made).toMatchObject({ status: 'completed', format: 'csv', totalRecords: FAILED_LOGINS, fileSizeBytes: Buffer.byteLength(csv) });
    expect(made.manifest).toMatchObject({
      from: new Date(`${wallTime(madeAt - 3_600_000)}:00Z`).toISOString(),
      to: new Date(`${wallTime(madeAt + 3_600_000)}:00Z`).toISOString(),
      events: ['user.login'],
      query: 'nightingale result:failure',
    });

    // The exports of this tab.
    await page.getByRole('link', { name: 'All exports of this tab' }).click();
    await page.getByRole('heading', { name: 'Exports', level: 1 }).waitFor();
    await page.getByRole('heading', { name: `Export ${exportId}` }).waitFor();
    await page.getByRole('link', { name: `Download ${exportId}.csv` }).waitFor();
    await expect(page.locator('main').textContent()).resolves.toContain('“nightingale” · user.login · failure');
    await h.checkAccessibility(page, '7-exports');

    // The query the API refuses, asked by the entries (search) and by the chart (counts).
    await closeCleanTab(tab, ['POST /v1/logs/search 400', 'POST /v1/logs/counts 400']);
  });

  it('is usable at 390 px: no sideways scrolling, and accessible', async () => {
    const tab: Tab = await h.openTab(390);
    const { page } = tab;
    await h.signIn(tab, h.admin.email);
    // Inside the app (a reload would forget the tokens, which live in memory only).
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
    await page.getByLabel('Search', { exact: true }).fill('nightingale');
    await page.getByLabel('Result', { exact: true }).selectOption('failure');
    await applyFilter(page);
    await page.getByRole('status').filter({ hasText: `${FAILED_LOGINS} matches` }).waitFor();
    await chartDone(page);
    // The search text and the result clause are both marked.
    await expect(page.locator('table.logs-table mark').allTextContents()).resolves.toEqual(Array(FAILED_LOGINS).fill(['nightingale', 'failure']).flat());
    await page.getByText('Events: all kinds').click();
    await page.locator('figure.logs-figure').getByText('The numbers as a table').click();
    await expect(width(page)).resolves.toBeLessThanOrEqual(390);
    await h.shot(page, '8-narrow-logs');
    await h.checkAccessibility(page, '8-narrow-logs');

    await page.getByRole('button', { name: 'Export these entries' }).click();
    await page.getByRole('link', { name: /^Download exp_\w+\.csv$/ }).waitFor({ timeout: 60_000 });
    await expect(width(page)).resolves.toBeLessThanOrEqual(390);
    await h.shot(page, '8-narrow-export');
    await h.checkAccessibility(page, '8-narrow-export');

    await rows(page).first().getByRole('link').click();
    await page.getByRole('heading', { name: 'Context' }).waitFor();
    await page.getByText('The entry as JSON').click();
    await expect(width(page)).resolves.toBeLessThanOrEqual(390);
    await h.shot(page, '8-narrow-entry');
    await h.checkAccessibility(page, '8-narrow-entry');
    await closeCleanTab(tab);
  });
});
