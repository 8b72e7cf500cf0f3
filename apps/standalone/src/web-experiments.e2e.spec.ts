import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client, type Example } from 'langsmith';
import { evaluate } from 'langsmith/evaluation';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';
import { CHROMIUM, launchChromium, seriousA11yFindings, signedInPage } from './testing/web-browser';

const ROOT = join(__dirname, '..', '..', '..');
/** Each wait in the browser is bounded. */
const WAIT_MS = 15_000;
type Json = Record<string, unknown>;

describe('web app: a dataset, its experiments and their comparison (Chromium against the standalone service)', () => {
  let svc: TestStandalone;
  let client: Client;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const datasetName = `web-exp-${randomUUID().slice(0, 8)}`;
  let datasetId: string;
  let examples: Example[];
  /** The baseline (right on 3 of 4) and a worse experiment (right on 1 of 4). */
  const experiments: { id: string; name: string }[] = [];
  /** The "View results at <link>" lines evaluate() prints. */
  const printedLinks: string[] = [];

  const exactMatch = ({ outputs, referenceOutputs }: { outputs: Json; referenceOutputs?: Json }) => ({
    key: 'exact_match',
    score: outputs.sum === referenceOutputs?.sum ? 1 : 0,
  });
  /** Runs evaluate() as an SDK user does, and waits until the experiment's statistics count its runs and feedback. */
  const runExperiment = async (prefix: string, target: (inputs: Json) => Promise<Json>) => {
    const log = jest.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      const m = /View results at (\S+)/.exec(args.map(String).join(' '));
      if (m) printedLinks.push(m[1]);
    });
    const results = await evaluate(target, { data: datasetName, evaluators: [exactMatch], experimentPrefix: prefix, client, maxConcurrency: 2 }).finally(() => log.mockRestore());
    await client.awaitPendingTraceBatches();
    let p = await client.readProject({ projectName: results.experimentName, includeStats: true });
    for (let i = 0; i < 100 && (p.run_count !== examples.length || !(p.feedback_stats as Json | undefined)?.exact_match); i++) {
      await new Promise((r) => setTimeout(r, 100));
      p = await client.readProject({ projectName: results.experimentName, includeStats: true });
    }
    experiments.push({ id: p.id, name: results.experimentName });
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: npm test installs it (apt-get install -y chromium, as root)`);
    execFileSync(process.execPath, ['-e', "require('./scripts/ensure-deps').buildWeb()"], { cwd: ROOT, stdio: 'inherit' });
    svc = await startTestStandalone({ WEB_LINK_PORT: '0' });
    client = new Client({ apiUrl: `${svc.url}/api/v1`, webUrl: svc.url, apiKey: svc.apiKey, autoBatchTracing: true, timeout_ms: 20_000 });
    const dataset = await client.createDataset(datasetName, { description: 'sums' });
    datasetId = dataset.id;
    // The last reference answer is wrong on purpose.
    const cases = [
      { inputs: { a: 1, b: 2 }, outputs: { sum: 3 } },
      { inputs: { a: 2, b: 2 }, outputs: { sum: 4 } },
      { inputs: { a: 10, b: 5 }, outputs: { sum: 15 } },
      { inputs: { a: 7, b: 0 }, outputs: { sum: 8 } },
    ];
    examples = await client.createExamples(cases.map((c) => ({ ...c, dataset_id: dataset.id })));
    await runExperiment('adder', async (inputs) => ({ sum: (inputs.a as number) + (inputs.b as number) }));
    // Multiplies instead: right only for 2 × 2.
    await runExperiment('multiplier', async (inputs) => ({ sum: (inputs.a as number) * (inputs.b as number) }));

    browser = await launchChromium();
    ({ context, page } = await signedInPage(browser, svc, WAIT_MS));
  }, 300_000);

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await client?.awaitPendingTraceBatches();
    await svc?.close();
  });

  it('lists the dataset’s experiments with their scores and run counts, and links two selected to the comparison', async () => {
    await page.goto(`${svc.url}/o/${svc.workspaceId}/datasets/${datasetId}`);
    const table = page.getByRole('table', { name: 'Experiments' });
    for (const e of experiments) await table.getByRole('link', { name: e.name }).waitFor();
    const row = (name: string) => table.getByRole('row').filter({ has: page.getByRole('link', { name }) });
    expect(await row(experiments[0].name).locator('[data-feedback="exact_match"]').textContent()).toBe('0.75');
    expect(await row(experiments[1].name).locator('[data-feedback="exact_match"]').textContent()).toBe('0.25');
    expect(await row(experiments[0].name).getByRole('cell').nth(3).textContent()).toBe('4');
    expect(await page.getByRole('table', { name: 'Examples' }).getByRole('row').count()).toBe(1 + examples.length);
    expect(await seriousA11yFindings(page)).toEqual([]);

    for (const e of experiments) await page.getByRole('checkbox', { name: `Select ${e.name}` }).check();
    await page.getByRole('link', { name: 'Compare 2 experiments' }).click();
    await page.waitForURL(/\/compare\?selectedSessions=/);
    expect(new URL(page.url()).searchParams.get('selectedSessions')).toBe(experiments.map((e) => e.id).join(','));
  });

  it('opens the SDK’s compare link: one row per example with each experiment’s output and scores, coloured against the baseline', async () => {
    // The link evaluate() prints names its one experiment; a link with several compares them.
    expect(printedLinks).toEqual(experiments.map((e) => `${svc.url}/o/${svc.workspaceId}/datasets/${datasetId}/compare?selectedSessions=${e.id}`));
    await page.goto(printedLinks[0]);
    await page.getByRole('table', { name: 'Examples compared' }).locator('tbody tr').nth(examples.length - 1).waitFor();
    expect(await page.getByRole('table', { name: 'Examples compared' }).getByRole('columnheader').allTextContents()).toEqual(['Inputs', 'Reference outputs', experiments[0].name]);
    await page.goto(`${svc.url}/o/${svc.workspaceId}/datasets/${datasetId}/compare?selectedSessions=${experiments.map((e) => e.id).join(',')}`);
    const summary = page.getByRole('table', { name: 'Experiments compared' });
    await summary.getByRole('link', { name: experiments[1].name }).waitFor();
    const worse = summary.getByRole('row').filter({ has: page.getByRole('link', { name: experiments[1].name }) }).locator('[data-feedback="exact_match"] .score');
    expect(await worse.getAttribute('data-trend')).toBe('worse');
    expect(await worse.textContent()).toContain('0.25');

    const rows = page.getByRole('table', { name: 'Examples compared' }).locator('tbody tr');
    expect(await rows.count()).toBe(examples.length);
    for (const ex of examples) {
      const row = page.locator(`tr[data-example="${ex.id}"]`);
      const a = ex.inputs.a as number;
      const b = ex.inputs.b as number;
      expect(await row.getByRole('cell').nth(0).textContent()).toBe(JSON.stringify(ex.inputs));
      expect(await row.getByRole('cell').nth(1).textContent()).toBe(JSON.stringify(ex.outputs));
      const base = row.locator(`td[data-session="${experiments[0].id}"]`);
      const other = row.locator(`td[data-session="${experiments[1].id}"]`);
      expect(await base.locator('code').textContent()).toBe(JSON.stringify({ sum: a + b }));
      expect(await other.locator('code').textContent()).toBe(JSON.stringify({ sum: a * b }));
      const baseScore = a + b === ex.outputs?.sum ? 1 : 0;
      const otherScore = a * b === ex.outputs?.sum ? 1 : 0;
      expect(await base.locator('[data-feedback="exact_match"] .score').textContent()).toBe(String(baseScore));
      const trend = await other.locator('[data-feedback="exact_match"] .score').getAttribute('data-trend');
      expect(trend).toBe(otherScore > baseScore ? 'better' : otherScore < baseScore ? 'worse' : null);
      expect(await base.textContent()).toMatch(/ms|s ·/);
    }
    expect(await seriousA11yFindings(page)).toEqual([]);

    // A cell opens its run's trace.
    const first = page.locator(`tr[data-example="${examples[0].id}"] td[data-session="${experiments[1].id}"] a.run-output`);
    const href = await first.getAttribute('href');
    expect(href).toMatch(new RegExp(`^/o/${svc.workspaceId}/projects/p/${experiments[1].id}/r/[0-9a-f-]{36}$`));
    await first.click();
    await page.waitForURL(`${svc.url}${href}`);
    await page.getByRole('tree', { name: 'Runs of the trace' }).getByRole('treeitem').first().waitFor();
  });

  it('says what is wrong for an unknown experiment in the link, and what to do with none', async () => {
    await page.goto(`${svc.url}/o/${svc.workspaceId}/datasets/${datasetId}/compare?selectedSessions=${randomUUID()}`);
    await page.getByRole('alert').waitFor();
    await page.goto(`${svc.url}/o/${svc.workspaceId}/datasets/${datasetId}/compare`);
    await page.getByRole('link', { name: 'dataset page' }).waitFor();
  });
});
