import { existsSync } from 'node:fs';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * `describe` for a suite that needs Debian's chromium (and whatever `needs` names: each a reason the suite cannot
 * run here, or undefined); without them `describe.skip` with a loud note, and under CI=true a failure instead (a
 * need's own check throws under CI=true, as keycloakSkipReason does).
 */
export function browserSuite(title: string, needs: (string | undefined)[] = []): jest.Describe {
  const have = existsSync(CHROMIUM);
  if (!have && process.env.CI === 'true') {
    throw new Error(`chromium is missing at ${CHROMIUM}: .ci/run installs it (apt-get install chromium)`);
  }
  const missing = [...(have ? [] : [`no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)`]), ...needs.filter((n): n is string => !!n)];
  if (missing.length && process.env.CI === 'true') throw new Error(`"${title}" cannot run under CI=true: ${missing.join('; ')}`);
  // Loud on purpose: these suites are the only checks of the pages in a browser (and against real peers).
  if (missing.length) process.stderr.write(`SKIPPED "${title}": ${missing.join('; ')}\n`);
  return missing.length ? describe.skip : describe; // skip reason: chromium (or another need) is not installed outside CI (CI=true throws instead)
}

/** Headless chromium (no sandbox as root), without background traffic. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}

/**
 * A tab in a context of its own (`options`: no JavaScript, a viewport...) that records what the product's pages
 * must never do: Content-Security-Policy refusals (the console's messages) and uncaught errors of their script.
 */
export async function watchedPage(browser: Browser, options: BrowserContextOptions = {}): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  return { context, page, problems };
}
