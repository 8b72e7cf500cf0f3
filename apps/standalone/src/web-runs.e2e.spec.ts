import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client, RunTree } from 'langsmith';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { ProjectDashboard, SavedFilter } from '@th/contracts';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';
import { CHROMIUM, launchChromium, seriousA11yFindings, signedInPage } from './testing/web-browser';

const ROOT = join(__dirname, '..', '..', '..');
/** Each wait in the browser is bounded. */
const WAIT_MS = 15_000;

describe('web app: runs table, saved filters, monitoring (Chromium against the standalone service)', () => {
  let svc: TestStandalone;
  let client: Client;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const cspViolations: string[] = [];
  const project = `web-runs-${randomUUID().slice(0, 8)}`;
  let projectId: string;
  const AGENTS = 3;
  const RETRIEVERS = 4;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: npm test installs it (apt-get install -y chromium, as root)`);
    execFileSync(process.execPath, ['-e', "require('./scripts/ensure-deps').buildWeb()"], { cwd: ROOT, stdio: 'inherit' });
    svc = await startTestStandalone({ WEB_LINK_PORT: '0' });
    client = new Client({ apiUrl: `${svc.url}/api/v1`, webUrl: svc.url, apiKey: svc.apiKey, autoBatchTracing: false, timeout_ms: 20_000 });
    // Root runs through the published SDK: agents (metadata user, tag prod, one fails) and retrievers, each with an llm child with tokens.
    const roots: RunTree[] = [];
    for (let i = 0; i < AGENTS + RETRIEVERS; i++) {
      const agent = i < AGENTS;
      const root = new RunTree({
        name: agent ? 'agent' : 'retrieve-docs',
        run_type: 'chain',
        inputs: { i },
        project_name: project,
        client,
        tags: agent ? ['prod'] : ['batch'],
        extra: { metadata: { user: agent ? 'alice' : 'bob' } },
      });
      await root.postRun();
      const llm = root.createChild({ name: 'ChatOpenAI', run_type: 'llm', inputs: { messages: [{ role: 'user', content: 'hi' }] } });
      await llm.postRun();
      await llm.end({ choices: [{ index: 0, message: { role: 'assistant', content: 'hello' } }], usage: { prompt_tokens: 8, completion_tokens: 2, total_tokens: 10 } });
      await llm.patchRun();
      await root.end(i === 0 ? undefined : { ok: true }, i === 0 ? 'it failed' : undefined);
      await root.patchRun();
      roots.push(root);
    }
    projectId = (await client.readProject({ projectName: project })).id;
    await client.createFeedback(roots[1].id, 'helpfulness', { score: 0.5, sessionId: projectId, traceId: roots[1].id });
    await client.createFeedback(roots[2].id, 'helpfulness', { score: 1, sessionId: projectId, traceId: roots[2].id });

    browser = await launchChromium();
    ({ context, page } = await signedInPage(browser, svc, WAIT_MS, (p) =>
      p.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
      }),
    ));
    // Starting the service and writing through the SDK take long on a busy machine.
  }, 300_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await svc?.close();
  });

  const runsUrl = () => `${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}`;
  const table = () => page.getByRole('table', { name: 'Runs' });
  const editor = () => page.getByRole('textbox', { name: 'Filter', exact: true });
  const names = () => table().locator('[role="cell"][data-col="name"]').allTextContents();
  /** Accepts the selected completion once CodeMirror takes Enter for it: the list must be settled (not
   * marked disabled while a source is pending) and open for longer than its 75 ms interaction delay. */
  const acceptCompletion = async (label: string) => {
    const selected = page.locator('.cm-tooltip-autocomplete:not(.cm-tooltip-autocomplete-disabled) [role="option"][aria-selected="true"]', { hasText: label });
    await selected.waitFor({ timeout: 10_000 }).catch(async () => {
      throw new Error(`no selected completion '${label}' after ${JSON.stringify(await editor().textContent())}; options: ${JSON.stringify(await page.locator('.cm-tooltip-autocomplete [role="option"]').allTextContents())}`);
    });
    await page.waitForTimeout(150);
    await page.keyboard.press('Enter');
  };

  it('completes the filter as it is typed (operator, field, known value) and filters the table', async () => {
    await page.goto(runsUrl());
    await table().getByRole('link', { name: 'retrieve-docs' }).first().waitFor();
    expect(await table().getByRole('link').count()).toBe(AGENTS + RETRIEVERS);
    expect(await seriousA11yFindings(page)).toEqual([]);
    await editor().click();
    await page.keyboard.type('eq');
    const options = page.locator('.cm-tooltip-autocomplete [role="option"]');
    await options.first().waitFor();
    expect(await options.allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('eq')]));
    await acceptCompletion('eq'); // `eq(`
    await page.keyboard.type('na');
    await acceptCompletion('name'); // `name, `
    await page.keyboard.type('ag');
    await acceptCompletion('agent'); // `"agent"`, a known run name of the project
    await page.keyboard.type(')');
    expect(await editor().textContent()).toMatch(/^eq\(name, ?"agent"\)$/);
    await page.keyboard.press('Enter'); // applies
    await page.waitForURL(/filter=eq/);
    expect(new URL(page.url()).searchParams.get('filter')).toMatch(/^eq\(name, ?"agent"\)$/);
    await table().getByRole('link', { name: 'retrieve-docs' }).first().waitFor({ state: 'detached' });
    await table().getByRole('link', { name: 'agent' }).first().waitFor();
    expect(await names()).toEqual(Array(AGENTS).fill('agent'));
    expect(cspViolations).toEqual([]);
  });

  it('marks a parse error where it is', async () => {
    await editor().fill('and(eq(name, "agent"), gt(latency 1))');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.locator('#filter-error').waitFor();
    expect(await page.locator('#filter-error').textContent()).toContain('position 34');
    const marked = page.locator('.cm-lintRange-error');
    await marked.waitFor();
    expect(await marked.textContent()).toBe('1');
    expect(await seriousA11yFindings(page)).toEqual([]);
  });

  it('adds a metadata column and a feedback column with the column picker; the URL carries them with the range and order', async () => {
    await page.goto(`${runsUrl()}?filter=${encodeURIComponent('eq(name, "agent")')}`);
    await table().getByRole('link', { name: 'agent' }).first().waitFor();
    await page.getByText('Columns').click();
    await page.getByRole('group', { name: 'Metadata' }).getByLabel('user').check();
    await table().locator('[role="columnheader"][data-col="metadata.user"]').waitFor();
    await table().locator('[role="cell"][data-col="metadata.user"]').first().waitFor();
    expect(await table().locator('[role="cell"][data-col="metadata.user"]').allTextContents()).toEqual(Array(AGENTS).fill('alice'));
    await page.getByRole('group', { name: 'Feedback' }).getByLabel('helpfulness').check();
    await table().locator('[role="columnheader"][data-col="feedback.helpfulness"]').waitFor();
    await page.getByRole('group', { name: 'Fields' }).getByLabel('Prompt tokens').check();
    await page.getByText('Columns').click();
    await page.getByLabel('Order').selectOption('asc');
    await page.getByLabel('Time range').selectOption('24h');
    const url = new URL(page.url());
    expect(url.searchParams.get('cols')?.split(',')).toEqual(expect.arrayContaining(['metadata.user', 'feedback.helpfulness', 'prompt_tokens']));
    expect(url.searchParams.get('order')).toBe('asc');
    expect(url.searchParams.get('range')).toBe('24h');
    // The shared URL opens the same view.
    await page.goto(url.toString());
    await table().locator('[role="cell"][data-col="metadata.user"]').first().waitFor();
    const scores = await table().locator('[role="cell"][data-col="feedback.helpfulness"]').allTextContents();
    expect([...scores].sort()).toEqual(['0.50', '1.00', '—']);
    // Tokens are on the model calls: all runs, filtered to them.
    const llms = new URL(url);
    llms.searchParams.set('filter', 'eq(run_type, "llm")');
    llms.searchParams.set('all', 'true');
    await page.goto(llms.toString());
    await table().getByRole('link', { name: 'ChatOpenAI' }).first().waitFor();
    expect(await table().locator('[role="cell"][data-col="prompt_tokens"]').allTextContents()).toEqual(Array(AGENTS + RETRIEVERS).fill('8'));
    expect(await seriousA11yFindings(page)).toEqual([]);
  });

  it('saves a filter for the project and applies it again', async () => {
    await page.goto(`${runsUrl()}?filter=${encodeURIComponent('eq(name, "retrieve-docs")')}`);
    await table().getByRole('link', { name: 'retrieve-docs' }).first().waitFor();
    await page.getByLabel('Name this view').fill('retrievers');
    await page.getByRole('button', { name: 'Save', exact: true }).click();
    await page.getByRole('button', { name: 'Delete “retrievers”' }).waitFor();
    const stored = (await (await svc.api(`/api/v1/sessions/${projectId}/filters`)).json()) as SavedFilter[];
    expect(stored.map((f) => [f.name, f.filter])).toEqual([['retrievers', 'eq(name, "retrieve-docs")']]);
    await page.goto(runsUrl());
    await table().getByRole('link', { name: 'agent' }).first().waitFor();
    await page.getByLabel('Saved views').selectOption({ label: 'retrievers' });
    await page.waitForURL(/filter=/);
    await table().getByRole('link', { name: 'agent' }).first().waitFor({ state: 'detached' });
    await table().getByRole('link', { name: 'retrieve-docs' }).first().waitFor();
    expect(await names()).toEqual(Array(RETRIEVERS).fill('retrieve-docs'));
    expect(await editor().textContent()).toBe('eq(name, "retrieve-docs")');
    expect(await seriousA11yFindings(page)).toEqual([]);
  });

  it('shows the monitoring charts with the counts the API answers', async () => {
    await page.goto(runsUrl());
    await page.getByRole('link', { name: 'Monitoring' }).click();
    await page.waitForURL(/\/monitor$/);
    await page.getByLabel('Time range').selectOption('24h');
    const runCount = page.locator('figure[data-chart="run_count"]');
    await runCount.locator('canvas').first().waitFor();
    await page.locator('figure[data-chart="feedback"] [data-series="feedback:helpfulness"]').waitFor();
    expect(await runCount.locator('[data-summary="run_count"]').textContent()).toBe(String(AGENTS + RETRIEVERS));
    expect(await page.locator('figure[data-chart="tokens"] [data-summary="total_tokens"]').textContent()).toBe(String((AGENTS + RETRIEVERS) * 10));
    expect(await page.locator('figure[data-chart="error_rate"] [data-summary="error_rate"]').textContent()).not.toBe('—');
    // The figures are the API's: the same range through POST /sessions/{id}/dashboard.
    const end = new Date(Math.ceil(Date.now() / 60_000) * 60_000 + 60_000);
    const api = (await (
      await svc.api(`/api/v1/sessions/${projectId}/dashboard`, { method: 'POST', json: { start_time: new Date(end.getTime() - 86_400_000).toISOString(), end_time: end.toISOString(), stride: { minutes: 30 } } })
    ).json()) as ProjectDashboard;
    const sum = (id: string) => api.charts.flatMap((c) => c.data).filter((p) => p.series_id === id).reduce((a, p) => a + (p.value ?? 0), 0);
    expect(sum('run_count')).toBe(AGENTS + RETRIEVERS);
    expect(sum('total_tokens')).toBe((AGENTS + RETRIEVERS) * 10);
    for (const chart of ['run_count', 'error_rate', 'latency', 'tokens', 'cost', 'feedback']) {
      expect(await page.locator(`figure[data-chart="${chart}"] figcaption`).count()).toBe(1);
    }
    expect(await page.locator('figure[data-chart="latency"] .legend li').allTextContents()).toEqual([expect.stringContaining('P50'), expect.stringContaining('P99')]);
    // (Before axe-core runs: its probes are the page's own DOM writes, which the CSP governs.)
    expect(cspViolations).toEqual([]);
    expect(await seriousA11yFindings(page)).toEqual([]);
  });

  it('shows the projects figures over a chosen time range', async () => {
    await page.goto(`${svc.url}/o/${svc.workspaceId}/projects`);
    const row = page.getByRole('row', { name: new RegExp(project) });
    await row.waitFor();
    await page.getByLabel('Time range').selectOption('1h');
    await page.waitForURL(/range=1h/);
    await row.locator('[data-col="run_count"]').waitFor();
    expect(Number(await row.locator('[data-col="run_count"]').textContent())).toBe((AGENTS + RETRIEVERS) * 2);
    // A range that ends before these runs: the same project, no runs counted.
    const before = await svc.api(`/api/v1/sessions/${projectId}?include_stats=true&stats_start_time=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`);
    expect(((await before.json()) as { run_count: number }).run_count).toBe(0);
    expect(await seriousA11yFindings(page)).toEqual([]);
  });
});
