import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Client, RunTree } from 'langsmith';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';
import { CSRF, launchChromium, seriousA11yFindings } from './testing/web-browser';

const ROOT = join(__dirname, '..', '..', '..');
/** Each wait in the browser is bounded. */
const WAIT_MS = 15_000;
/** A 1×1 PNG. */
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const STACK = 'ValueError: the tool failed\n    at lookup (tools.js:12:3)\n    at run (agent.js:40:9)';

type Json = Record<string, unknown>;

describe('web app: the trace view, threads and themes', () => {
  let svc: TestStandalone;
  let client: Client;
  let browser: Browser;
  const project = `web-trace-${randomUUID().slice(0, 8)}`;
  const threadKey = `conv-${randomUUID().slice(0, 8)}`;
  let projectId: string;
  let root: RunTree;
  let llm: RunTree;
  let failing: RunTree;
  let shotId: string;
  let bigId: string;
  let exampleId: string;
  let datasetId: string;
  let feedbackId: string;
  const turnIds: string[] = [];

  const waitFor = async (what: string, done: () => Promise<boolean>) => {
    for (let i = 0; i < 60; i++) {
      if (await done()) return;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`timed out waiting for ${what}`);
  };

  beforeAll(async () => {
    execFileSync(process.execPath, ['-e', "require('./scripts/ensure-deps').buildWeb()"], { cwd: ROOT, stdio: 'inherit' });
    svc = await startTestStandalone();
    client = new Client({ apiUrl: `${svc.url}/api/v1`, webUrl: svc.url, apiKey: svc.apiKey, autoBatchTracing: false, timeout_ms: 20_000 });

    const dataset = await client.createDataset(`web-trace-ds-${randomUUID().slice(0, 8)}`);
    datasetId = dataset.id;
    exampleId = (await client.createExample({ dataset_id: dataset.id, inputs: { question: 'What is 6 x 7?' }, outputs: { answer: '42' } })).id;

    // One trace: a chat model call that streamed (a new_token event), a tool that failed with a stack,
    // a run with attachments (an image and an HTML file), and a run with a large output.
    const t0 = Date.now() - 60_000;
    root = new RunTree({ name: 'agent', run_type: 'chain', inputs: { question: 'What is 6 x 7?' }, project_name: project, client, reference_example_id: exampleId, start_time: t0 });
    await root.postRun();
    llm = root.createChild({ name: 'ChatOpenAI', run_type: 'llm', inputs: { messages: [{ role: 'user', content: 'What is 6 x 7?' }] }, start_time: t0 + 100 });
    llm.events = [{ name: 'new_token', time: new Date(t0 + 350).toISOString(), kwargs: { token: 'It' } }];
    await llm.postRun();
    await llm.end({ choices: [{ message: { role: 'assistant', content: 'It is 42.' } }], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 } }, undefined, t0 + 900);
    await llm.patchRun();
    failing = root.createChild({ name: 'lookup', run_type: 'tool', inputs: { q: 42 }, start_time: t0 + 1_000 });
    await failing.postRun();
    await failing.end(undefined, STACK, t0 + 1_500);
    await failing.patchRun();
    const shot = root.createChild({ name: 'screenshot', run_type: 'tool', inputs: { page: 'home' }, start_time: t0 + 1_600 });
    shotId = shot.id;
    await client.multipartIngestRuns({
      runCreates: [
        {
          id: shot.id, name: 'screenshot', run_type: 'tool', trace_id: root.id, parent_run_id: root.id, dotted_order: shot.dotted_order, start_time: t0 + 1_600, end_time: t0 + 1_700,
          inputs: { page: 'home' }, outputs: { ok: true }, session_name: project,
          attachments: { pic: ['image/png', new Uint8Array(PNG)], page: ['text/html', new TextEncoder().encode('<script>document.title="owned"</script>')] },
        },
      ],
    });
    const big = root.createChild({ name: 'export', run_type: 'tool', inputs: { rows: 3000 }, start_time: t0 + 1_800 });
    bigId = big.id;
    await big.postRun();
    await big.end({ rows: Array.from({ length: 3_000 }, (_, i) => ({ i, text: `row ${i} `.padEnd(120, 'x') })) }, undefined, t0 + 2_000);
    await big.patchRun();
    await root.end({ answer: 'It is 42.' }, undefined, t0 + 3_000);
    await root.patchRun();

    // A conversation of three turns (metadata session_id, as the SDKs' chat integrations send it).
    for (let i = 1; i <= 3; i++) {
      const turn = new RunTree({ name: `chat-turn`, run_type: 'chain', inputs: { question: `question ${i}` }, project_name: project, client, extra: { metadata: { session_id: threadKey } }, start_time: t0 + 10_000 * i });
      await turn.postRun();
      await turn.end({ answer: `answer ${i}` }, undefined, t0 + 10_000 * i + 500);
      await turn.patchRun();
      turnIds.push(turn.id);
    }
    projectId = (await client.readProject({ projectName: project })).id;
    feedbackId = (await client.createFeedback(root.id, 'quality', { score: 0.2, comment: 'first take', sessionId: projectId, traceId: root.id })).id;
    await waitFor('the runs and the feedback', async () => {
      const stats = (await (await svc.api('/api/v1/runs/stats', { method: 'POST', json: { session: [projectId] } })).json()) as { run_count: number };
      const fb = (await (await svc.api(`/api/v1/feedback?run=${root.id}`)).json()) as unknown[];
      return stats.run_count >= 8 && fb.length === 1;
    });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it("serves attachments so they never run as the app's code: images inline, other files as downloads, sandboxed", async () => {
    const run = (await (await svc.api(`/api/v1/runs/${shotId}`)).json()) as { s3_urls: Record<string, { presigned_url: string }> };
    const png = await fetch(`${svc.url}${run.s3_urls['attachment.pic'].presigned_url}`);
    expect(png.status).toBe(200);
    expect(png.headers.get('content-disposition')).toBe('inline');
    expect(png.headers.get('x-content-type-options')).toBe('nosniff');
    const html = await fetch(`${svc.url}${run.s3_urls['attachment.page'].presigned_url}`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-disposition')).toBe("attachment; filename*=UTF-8''page");
    expect(html.headers.get('content-security-policy')).toContain('sandbox');
    const page = await fetch(`${svc.url}/o/${svc.workspaceId}/projects`);
    expect(page.headers.get('content-security-policy')).toContain("worker-src 'self'");
    expect(page.headers.get('content-security-policy')).not.toContain('blob:');
  });

  describe('in Chromium', () => {
    let context: BrowserContext;
    let page: Page;
    const cspViolations: string[] = [];
    const treeReads: string[] = [];
    const traceUrl = (run: string, selected?: string) => `${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}/r/${run}${selected ? `?selected=${selected}` : ''}`;

    beforeAll(async () => {
      context = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: 'light' });
      const signIn = await context.request.post(`${svc.url}/api/v1/auth/session`, { headers: CSRF, data: { api_key: svc.apiKey } });
      expect(signIn.status()).toBe(200);
      page = await context.newPage();
      page.setDefaultTimeout(WAIT_MS);
      page.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
      });
      page.on('request', (r) => {
        if (r.url().endsWith('/api/v1/runs/query') && (r.postData() ?? '').includes('"trace"')) treeReads.push(r.postData() ?? '');
      });
    });
    afterAll(async () => {
      await context?.close();
    });

    it('draws the tree from one read and a waterfall bar on every row, the root spanning the trace', async () => {
      await page.goto(traceUrl(root.id));
      const tree = page.getByRole('tree');
      await page.getByTestId('tree-count').getByText('5 runs', { exact: true }).waitFor();
      expect(await tree.getByRole('treeitem').locator('.node-name').allTextContents()).toEqual(['agent', 'ChatOpenAI', 'lookup', 'screenshot', 'export']);
      expect(treeReads).toHaveLength(1);
      expect(JSON.parse(treeReads[0])).toMatchObject({ limit: 10_000 });
      expect(JSON.parse(treeReads[0]).select).not.toContain('inputs');
      const bars = tree.locator('[data-testid="wf"] .wf-bar');
      expect(await bars.count()).toBe(5);
      const widths = await bars.evaluateAll((els) => els.map((e) => e.getAttribute('style') ?? ''));
      expect(Number(/width: ([\d.]+)%/.exec(widths[0])?.[1])).toBeCloseTo(100, 0);
      expect(await tree.getByRole('treeitem', { name: /ChatOpenAI/ }).locator('[data-testid="wf"]').textContent()).toBe('starts at +100 ms, takes 800 ms');
      expect(await tree.getByRole('treeitem', { name: /lookup/ }).locator('.wf-bar').getAttribute('class')).toContain('failed');
      // The waterfall can be hidden; the selection follows the keyboard either way.
      await page.getByRole('button', { name: 'Waterfall' }).click();
      await tree.locator('[data-testid="wf"]').first().waitFor({ state: 'detached' });
      await page.getByRole('button', { name: 'Waterfall' }).click();
      await tree.getByRole('treeitem').first().focus();
      await page.keyboard.press('ArrowDown');
      await page.waitForURL(new RegExp(`selected=${llm.id}`));
      expect(await page.getByRole('treeitem', { selected: true }).locator('.node-name').textContent()).toBe('ChatOpenAI');
      expect(await seriousA11yFindings(page)).toEqual([]);
    });

    it('shows the time to first token of a streamed run and the stack of a failed one', async () => {
      await page.goto(traceUrl(root.id, llm.id));
      await page.getByRole('heading', { name: 'ChatOpenAI', exact: true }).waitFor();
      expect(await page.getByTestId('ttft').textContent()).toBe('250 ms');
      await page.goto(traceUrl(root.id, failing.id));
      await page.getByRole('heading', { name: 'lookup', exact: true }).waitFor();
      expect(await page.locator('.error-message').textContent()).toBe('ValueError: the tool failed');
      expect(await page.getByTestId('error-stack').textContent()).toBe(STACK.slice(STACK.indexOf('\n') + 1));
      expect(await seriousA11yFindings(page)).toEqual([]);
    });

    it("lists a run's attachments with download links and shows the image inline (allowed by the page's CSP)", async () => {
      await page.goto(traceUrl(root.id, shotId));
      await page.getByRole('region', { name: 'Attachments' }).waitFor();
      const links = page.locator('.attachments a');
      expect((await links.allTextContents()).sort()).toEqual(['page', 'pic']);
      expect(await links.first().getAttribute('href')).toMatch(/^\/public\/run-attachments\//);
      const img = page.getByRole('img', { name: 'Attachment pic' });
      await img.waitFor();
      await page.waitForFunction('document.querySelector(".attachments img").complete');
      expect(await page.evaluate('document.querySelector(".attachments img").naturalWidth')).toBe(1);
      expect(await page.getByRole('img').count()).toBe(1); // the HTML file is only a link
      expect(await seriousA11yFindings(page)).toEqual([]);
    });

    it('opens a large output collapsed, reads its entries from the worker on demand', async () => {
      await page.goto(traceUrl(root.id, bigId));
      await page.getByRole('heading', { name: 'export', exact: true }).waitFor();
      const outputs = page.getByRole('group', { name: 'Outputs (JSON)' });
      await outputs.getByRole('button', { name: /rows \[3,000\]/ }).waitFor();
      expect(await page.getByText(/KB, read level by level/).count()).toBe(1);
      expect(await outputs.getByRole('button', { name: /rows/ }).getAttribute('aria-expanded')).toBe('false');
      await outputs.getByRole('button', { name: /rows/ }).click();
      await outputs.locator('[data-path="rows.0"]').waitFor();
      // Virtualized: only the rows in view are in the page.
      expect(await outputs.locator('.json-row').count()).toBeLessThan(100);
      await outputs.getByRole('button', { name: /^▸ 0 \{2\}/ }).click();
      await outputs.locator('[data-path="rows.0.text"]').waitFor();
      expect(await outputs.locator('[data-path="rows.0.text"]').textContent()).toContain('row 0 xxx');
      expect(cspViolations).toEqual([]);
      expect(await seriousA11yFindings(page)).toEqual([]);
    });

    it('edits and deletes feedback through the session cookie', async () => {
      await page.goto(traceUrl(root.id));
      const table = page.getByRole('table', { name: 'Feedback' });
      await table.getByRole('row', { name: /first take/ }).waitFor();
      await page.getByRole('button', { name: 'Edit feedback quality' }).click();
      const form = page.getByRole('form', { name: 'Edit feedback quality' });
      await form.getByLabel('Score').fill('0.9');
      await form.getByLabel('Comment').fill('second take');
      await form.getByRole('button', { name: 'Save' }).click();
      await table.getByRole('row', { name: /second take/ }).waitFor();
      const stored = (await (await svc.api(`/api/v1/feedback/${feedbackId}`)).json()) as Json;
      expect(stored).toMatchObject({ key: 'quality', score: 0.9, comment: 'second take' });
      expect(await seriousA11yFindings(page)).toEqual([]);
      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Delete feedback quality' }).click();
      await page.getByText('No feedback.').waitFor();
      expect((await svc.api(`/api/v1/feedback/${feedbackId}`)).status).toBe(404);
    });

    it('links a run to its parent, its trace root and the dataset example it came from', async () => {
      await page.goto(traceUrl(llm.id));
      await page.getByRole('heading', { name: 'ChatOpenAI', exact: true }).waitFor();
      expect(await page.getByRole('link', { name: 'Parent run' }).getAttribute('href')).toBe(`/o/${svc.workspaceId}/projects/p/${projectId}/r/${root.id}`);
      expect(await page.getByRole('link', { name: 'Trace root' }).getAttribute('href')).toBe(`/o/${svc.workspaceId}/projects/p/${projectId}/r/${root.id}`);
      await page.goto(traceUrl(root.id));
      await page.getByRole('link', { name: 'Dataset example' }).click();
      await page.waitForURL(`${svc.url}/o/${svc.workspaceId}/datasets/${datasetId}?example=${exampleId}`);
      await page.getByRole('table', { name: 'Examples' }).getByRole('row', { name: /6 x 7/ }).waitFor();
    });

    it("lists the project's threads and shows a conversation turn after turn, each turn opening its trace", async () => {
      await page.goto(`${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}/threads`);
      const threads = page.getByRole('table', { name: 'Threads' });
      const row = threads.getByRole('row', { name: new RegExp(threadKey) });
      await row.waitFor();
      expect(await row.locator('td').nth(1).textContent()).toBe('3');
      expect(await seriousA11yFindings(page)).toEqual([]);
      await row.getByRole('link', { name: threadKey }).click();
      await page.waitForURL(`${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}/t/${threadKey}`);
      const turns = page.getByRole('list', { name: 'Turns' }).locator('.turn');
      await turns.nth(2).waitFor();
      expect(await turns.evaluateAll((els) => els.map((e) => e.getAttribute('data-turn')))).toEqual(['1', '2', '3']);
      expect(await turns.locator('.turn-input').allTextContents()).toEqual([expect.stringContaining('question 1'), expect.stringContaining('question 2'), expect.stringContaining('question 3')]);
      expect(await turns.locator('.turn-output').allTextContents()).toEqual([expect.stringContaining('answer 1'), expect.stringContaining('answer 2'), expect.stringContaining('answer 3')]);
      expect(await page.getByTestId('thread-stats').textContent()).toContain('3 turns');
      expect(await seriousA11yFindings(page)).toEqual([]);
      await turns.nth(1).getByRole('link', { name: 'chat-turn' }).click();
      await page.waitForURL(traceUrl(turnIds[1]));
      await page.getByRole('heading', { name: 'chat-turn', exact: true }).waitFor();
    });

    it('follows the system theme, and a chosen theme is remembered across loads (axe in dark)', async () => {
      const dark = await browser.newContext({ viewport: { width: 1400, height: 900 }, colorScheme: 'dark' });
      try {
        await dark.request.post(`${svc.url}/api/v1/auth/session`, { headers: CSRF, data: { api_key: svc.apiKey } });
        const p = await dark.newPage();
        p.setDefaultTimeout(WAIT_MS);
        const bg = () => p.evaluate('getComputedStyle(document.documentElement).getPropertyValue("--bg").trim()');
        await p.goto(traceUrl(root.id));
        await p.getByTestId('tree-count').getByText('5 runs', { exact: true }).waitFor();
        expect(await bg()).toBe('#111318');
        expect(await seriousA11yFindings(p)).toEqual([]);
        await p.getByLabel('Theme').selectOption('light');
        expect(await bg()).toMatch(/^#fff(fff)?$/);
        await p.reload();
        await p.getByTestId('tree-count').getByText('5 runs', { exact: true }).waitFor();
        expect(await bg()).toMatch(/^#fff(fff)?$/);
        expect(await p.getByLabel('Theme').inputValue()).toBe('light');
        await p.getByLabel('Theme').selectOption('system');
        expect(await bg()).toBe('#111318');
        // Keyboard navigation is unchanged by the theme.
        await p.getByRole('tree').getByRole('treeitem').first().focus();
        await p.keyboard.press('End');
        await p.waitForURL(new RegExp(`selected=${bigId}`));
      } finally {
        await dark.close();
      }
    });
  });
});
