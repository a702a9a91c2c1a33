import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * `describe` for a suite that needs Debian's chromium; without it `describe.skip` with a loud note, and under
 * CI=true a failure instead.
 */
export function browserSuite(title: string): jest.Describe {
  const have = existsSync(CHROMIUM);
  if (!have && process.env.CI === 'true') {
    throw new Error(`chromium is missing at ${CHROMIUM}: .ci/run installs it (apt-get install chromium)`);
  }
  // Loud on purpose: these suites are the only checks of the pages in a browser.
  if (!have) process.stderr.write(`SKIPPED "${title}": no chromium at ${CHROMIUM} (apt-get install -y chromium, or set CHROMIUM_PATH)\n`);
  return have ? describe : describe.skip; // skip reason: chromium is not installed outside CI (CI=true throws instead)
}

/** Headless chromium (no sandbox as root), without background traffic. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
}
