import { existsSync } from 'node:fs';
import axe from 'axe-core';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium: npm test installs it (apt-get install -y chromium) when it is missing. */
export const CHROMIUM = '/usr/bin/chromium';
/** The header the web app sends with cookie-authenticated writes. */
export const CSRF = { 'x-requested-with': 'tracehouse-web' };

/** Headless Chromium without its background connections (there is no network here; they would be refused many at a time). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: npm test installs it (apt-get install -y chromium, as root)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** A page of a fresh light-themed context, signed in with `apiKey` on the login page: it lands on the workspace's projects. */
export async function signedInPage(
  browser: Browser,
  svc: { url: string; apiKey: string; workspaceId: string },
  waitMs: number,
  /** Called with the page before it opens anything (to listen to its console, say). */
  watch: (page: Page) => void = () => undefined,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: 'light' });
  const page = await context.newPage();
  page.setDefaultTimeout(waitMs);
  watch(page);
  await page.goto(`${svc.url}/login`);
  await page.getByLabel('API key').fill(svc.apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${svc.url}/o/${svc.workspaceId}/projects`);
  return { context, page };
}

/** axe-core's serious and critical findings on the page (evaluated over the DevTools protocol, which the page's CSP does not govern). */
export async function seriousA11yFindings(page: Page): Promise<string[]> {
  await page.evaluate(axe.source);
  // Strings: this file is type-checked for Node, without the DOM's globals.
  const result = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] })")) as axe.AxeResults;
  return result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
