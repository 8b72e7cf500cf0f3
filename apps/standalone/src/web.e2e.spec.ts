import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, RunTree } from 'langsmith';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { BUILTIN_ROLES, IdentityService } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';
import { CHROMIUM, CSRF, launchChromium, seriousA11yFindings } from './testing/web-browser';

const ROOT = join(__dirname, '..', '..', '..');
/** The README's screenshots are rewritten with UPDATE_SCREENSHOTS=1; other runs keep theirs in a temporary folder. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : mkdtempSync(join(tmpdir(), 'th-web-shots-'));
/** Each wait in the browser is bounded; the whole suite stays under a minute. */
const WAIT_MS = 15_000;

const cookieOf = (res: Response): string => res.headers.get('set-cookie') ?? '';
const cookiePair = (setCookie: string): string => setCookie.split(';')[0];

/** A port nothing listens on now (the OS picks it). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

describe('web app against the standalone service', () => {
  let svc: TestStandalone;
  let client: Client;
  let browser: Browser;
  const project = `web-e2e-${randomUUID().slice(0, 8)}`;
  let projectId: string;
  let rootRunId: string;
  let llmRunId: string;
  let llmTokens: number;
  let linkPort: number;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: npm test installs it (apt-get install -y chromium, as root)`);
    // The served files: built when missing or older than the app's sources (as npm start does).
    execFileSync(process.execPath, ['-e', "require('./scripts/ensure-deps').buildWeb()"], { cwd: ROOT, stdio: 'inherit' });
    linkPort = await freePort();
    svc = await startTestStandalone({ WEB_LINK_PORT: String(linkPort) });
    client = new Client({ apiUrl: `${svc.url}/api/v1`, webUrl: svc.url, apiKey: svc.apiKey, autoBatchTracing: false, timeout_ms: 20_000 });

    // One trace with a chat model call in the OpenAI format and a tool call, feedback on its root, and more roots for the table.
    const root = new RunTree({ name: 'agent', run_type: 'chain', inputs: { question: 'What is 6 x 7?' }, project_name: project, client, tags: ['web-e2e'] });
    await root.postRun();
    const llm = root.createChild({
      name: 'ChatOpenAI',
      run_type: 'llm',
      inputs: { messages: [{ role: 'system', content: 'You answer with a number.' }, { role: 'user', content: 'What is 6 x 7?' }], model: 'gpt-4o-mini' },
      extra: { metadata: { ls_provider: 'openai', ls_model_name: 'gpt-4o-mini' } },
    });
    await llm.postRun();
    await llm.end({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'gpt-4o-mini',
      choices: [{ index: 0, message: { role: 'assistant', content: 'It is 42.' }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 21, completion_tokens: 5, total_tokens: 26 },
    });
    await llm.patchRun();
    const tool = root.createChild({ name: 'calculator', run_type: 'tool', inputs: { expression: '6*7' } });
    await tool.postRun();
    await tool.end({ result: 42 });
    await tool.patchRun();
    await root.end({ answer: 'It is 42.' });
    await root.patchRun();
    for (let i = 0; i < 24; i++) {
      const r = new RunTree({ name: `batch-${String(i).padStart(2, '0')}`, run_type: 'chain', inputs: { i }, project_name: project, client });
      await r.postRun();
      await r.end({ i });
      await r.patchRun();
    }
    projectId = (await client.readProject({ projectName: project })).id;
    await client.createFeedback(root.id, 'correctness', { score: 1, comment: 'right answer', sessionId: projectId, traceId: root.id });
    rootRunId = root.id;
    llmRunId = llm.id;
    const stored = await client.readRun(llm.id);
    llmTokens = stored.total_tokens ?? 0;

    browser = await launchChromium();
    mkdirSync(SCREENSHOTS, { recursive: true });
  });

  afterAll(async () => {
    await browser?.close();
    await svc?.close();
    if (process.env.UPDATE_SCREENSHOTS !== '1') rmSync(SCREENSHOTS, { recursive: true, force: true });
  });

  it('the written trace is what the views show (tokens from the OpenAI usage block)', () => {
    expect(llmTokens).toBe(26);
  });

  it('serves the app page with a strict CSP at app routes, hashed assets immutable and gzipped, and leaves the API alone', async () => {
    for (const path of ['/', '/login', `/o/${svc.workspaceId}/projects`, `/o/${svc.workspaceId}/projects/p/${projectId}/r/${rootRunId}?poll=true`]) {
      const res = await fetch(`${svc.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain('text/html');
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      const html = await res.text();
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    }
    const html = await (await fetch(`${svc.url}/`)).text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${svc.url}${script}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toContain('text/javascript');
    expect(asset.headers.get('content-encoding')).toBe('gzip');
    expect((await fetch(`${svc.url}/assets/missing-0000.js`)).status).toBe(404);
    expect((await fetch(`${svc.url}/assets/..%2Findex.html`)).status).toBe(404);
    // The API at the root and under /api/v1 is not shadowed.
    expect((await fetch(`${svc.url}/info`)).headers.get('content-type')).toContain('application/json');
    expect((await fetch(`${svc.url}/sessions`)).status).toBe(401);
    expect((await fetch(`${svc.url}/api/v1/sessions`)).status).toBe(401);
  });

  it("also serves the app and the API on the SDK's link port (WEB_LINK_PORT), and the sign-in link names it", async () => {
    expect(svc.linkUrl).toBe(`http://localhost:${linkPort}`);
    const page = await fetch(`http://127.0.0.1:${linkPort}/o/${svc.workspaceId}/projects/p/${projectId}/r/${rootRunId}?poll=true`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect((await fetch(`http://127.0.0.1:${linkPort}/api/v1/info`)).status).toBe(200);
    expect(svc.signInLink()).toMatch(new RegExp(`^http://localhost:${linkPort}/login#token=[\\w-]+$`));
  });

  it('signing in sets an httpOnly SameSite=Strict cookie; cookie writes need the CSRF header and this origin; logout clears it', async () => {
    const url = (p: string) => `${svc.url}/api/v1${p}`;
    const json = { 'content-type': 'application/json' };
    // Without the header a page of another site could sign a browser in: refused.
    expect((await fetch(url('/auth/session'), { method: 'POST', headers: json, body: JSON.stringify({ api_key: svc.apiKey }) })).status).toBe(403);
    expect((await fetch(url('/auth/session'), { method: 'POST', headers: { ...json, ...CSRF }, body: JSON.stringify({ api_key: 'th_not_a_key' }) })).status).toBe(401);
    const bad = await fetch(url('/auth/session'), { method: 'POST', headers: { ...json, ...CSRF }, body: JSON.stringify({ api_key: 42 }) });
    expect(bad.status).toBe(422);
    const signedIn = await fetch(url('/auth/session'), { method: 'POST', headers: { ...json, ...CSRF }, body: JSON.stringify({ api_key: svc.apiKey }) });
    expect(signedIn.status).toBe(200);
    expect(await signedIn.json()).toMatchObject({ organization_id: svc.organizationId, tenant_id: svc.workspaceId });
    const setCookie = cookieOf(signedIn);
    expect(setCookie).toMatch(/^th_session=[\w-]+\.[\w-]+\.[\w-]+;/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/');
    expect(setCookie).not.toContain(svc.apiKey);
    const cookie = cookiePair(setCookie);

    // Reads through the cookie work, writes without the header or from another origin do not.
    expect((await fetch(url('/auth/session'), { headers: { cookie } })).status).toBe(200);
    expect((await fetch(url('/sessions'), { headers: { cookie } })).status).toBe(200);
    const query = JSON.stringify({ session: [projectId], limit: 1 });
    expect((await fetch(url('/runs/query'), { method: 'POST', headers: { cookie, ...json }, body: query })).status).toBe(403);
    expect((await fetch(url('/runs/query'), { method: 'POST', headers: { cookie, ...json, ...CSRF, origin: 'https://evil.example' }, body: query })).status).toBe(403);
    expect((await fetch(url('/runs/query'), { method: 'POST', headers: { cookie, ...json, ...CSRF, 'sec-fetch-site': 'cross-site' }, body: query })).status).toBe(403);
    const ok = await fetch(url('/runs/query'), { method: 'POST', headers: { cookie, ...json, ...CSRF, origin: svc.url }, body: query });
    expect(ok.status).toBe(200);
    // An API key in the header is not subject to the cookie's rules (SDK clients send no CSRF header).
    expect((await svc.api('/api/v1/runs/query', { method: 'POST', json: { session: [projectId], limit: 1 } })).status).toBe(200);

    const out = await fetch(url('/auth/session'), { method: 'DELETE', headers: { cookie, ...CSRF } });
    expect(out.status).toBe(200);
    expect(cookieOf(out)).toMatch(/^th_session=;.*Max-Age=0/);
    // A forged or tampered cookie is no session.
    expect((await fetch(url('/sessions'), { headers: { cookie: `${cookie}x` } })).status).toBe(401);
  });

  it('a one-time sign-in link works once', async () => {
    const token = new URL(svc.signInLink()).hash.replace('#token=', '');
    const post = () => fetch(`${svc.url}/api/v1/auth/session`, { method: 'POST', headers: { 'content-type': 'application/json', ...CSRF }, body: JSON.stringify({ sign_in_token: token }) });
    const first = await post();
    expect(first.status).toBe(200);
    expect(cookieOf(first)).toContain('HttpOnly');
    expect((await post()).status).toBe(401);
  });

  describe('in Chromium', () => {
    let context: BrowserContext;
    let page: Page;
    const cspViolations: string[] = [];
    beforeAll(async () => {
      context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
      page = await context.newPage();
      page.setDefaultTimeout(WAIT_MS);
      page.on('console', (m) => {
        if (/Content Security Policy/i.test(m.text())) cspViolations.push(m.text());
      });
    });
    afterAll(async () => {
      await context?.close();
    });

    it('signs in with the API key and lists the project with its run count', async () => {
      await page.goto(`${svc.url}/`);
      await page.waitForURL(/\/login\?next=/);
      expect(await seriousA11yFindings(page)).toEqual([]);
      await page.getByLabel('API key').fill(svc.apiKey);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${svc.url}/o/${svc.workspaceId}/projects`);
      const row = page.getByRole('row', { name: new RegExp(project) });
      await row.waitFor();
      expect(await row.locator('[data-col="run_count"]').textContent()).toBe('27');
      // The session is in an httpOnly cookie: nothing the page's scripts can read.
      expect(await page.evaluate('document.cookie')).toBe('');
      expect(await page.evaluate('JSON.stringify(localStorage) + JSON.stringify(sessionStorage)')).not.toContain(svc.apiKey);
      expect(await seriousA11yFindings(page)).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOTS, 'projects.png') });
    });

    it('opens the runs table and filters it', async () => {
      await page.getByRole('link', { name: project }).click();
      await page.waitForURL(`${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}`);
      const table = page.getByRole('table', { name: 'Runs' });
      await table.getByRole('link', { name: 'agent' }).waitFor();
      expect(await table.getByRole('link', { name: /^batch-/ }).count()).toBeGreaterThan(10);
      await page.screenshot({ path: join(SCREENSHOTS, 'runs.png') });
      expect(await seriousA11yFindings(page)).toEqual([]);
      await page.getByLabel('Filter').fill('eq(name, "agent")');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.waitForURL(/filter=eq/);
      // (A string predicate would be eval in the page, which its CSP refuses: wait with a locator.)
      await table.getByRole('link', { name: /^batch-/ }).first().waitFor({ state: 'detached' });
      await table.getByRole('link', { name: 'agent' }).waitFor();
      expect(await table.getByRole('link').allTextContents()).toEqual(['agent']);
      // A malformed filter is reported where it is typed, not as a blank table.
      await page.getByLabel('Filter').fill('eq(name, ');
      await page.getByRole('button', { name: 'Apply' }).click();
      await page.locator('#filter-error').waitFor();
      expect(await page.locator('#filter-error').textContent()).not.toBe('');
      await page.getByLabel('Filter').fill('eq(name, "agent")');
      await page.getByRole('button', { name: 'Apply' }).click();
      await table.getByRole('link', { name: 'agent' }).waitFor();
    });

    it('opens the trace: the tree by dotted_order, the chat messages by role, token counts and feedback', async () => {
      await page.getByRole('table', { name: 'Runs' }).getByRole('link', { name: 'agent' }).click();
      await page.waitForURL(`${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}/r/${rootRunId}`);
      const tree = page.getByRole('tree');
      await tree.getByRole('treeitem').nth(2).waitFor();
      const nodes = await tree.getByRole('treeitem').evaluateAll((els) => els.map((e) => [e.getAttribute('aria-level'), e.querySelector('.node-name')?.textContent]));
      expect(nodes).toEqual([
        ['1', 'agent'],
        ['2', 'ChatOpenAI'],
        ['2', 'calculator'],
      ]);
      // The root's detail: its feedback.
      const feedback = page.getByRole('table', { name: 'Feedback' });
      await feedback.waitFor();
      expect(await feedback.getByRole('row').nth(1).textContent()).toContain('correctness');
      expect(await feedback.getByRole('row').nth(1).textContent()).toContain('right answer');
      // Select the model call (keyboard: the tree is navigable with the arrow keys).
      await tree.getByRole('treeitem').first().focus();
      await page.keyboard.press('ArrowDown');
      await page.waitForURL(new RegExp(`selected=${llmRunId}`));
      await page.getByRole('heading', { name: 'ChatOpenAI', exact: true }).waitFor();
      const roles = await page.locator('.messages [data-role]').evaluateAll((els) => els.map((e) => e.getAttribute('data-role')));
      expect(roles).toEqual(['system', 'user', 'assistant']);
      expect(await page.locator('.messages [data-role="assistant"] .text').textContent()).toBe('It is 42.');
      expect(await page.getByTestId('run-tokens').textContent()).toBe('26 (21 prompt, 5 completion)');
      expect(await tree.getByRole('treeitem', { name: /ChatOpenAI/ }).getByTestId('tokens').textContent()).toBe('26 tokens');
      expect(await seriousA11yFindings(page)).toEqual([]);
      await page.screenshot({ path: join(SCREENSHOTS, 'trace.png') });
      // Search inside the tree keeps the matches and their ancestors; collapsing hides a run's descendants.
      const names = () => tree.getByRole('treeitem').locator('.node-name').allTextContents();
      await page.getByLabel('Search in trace').fill('calc');
      await tree.getByRole('treeitem', { name: /ChatOpenAI/ }).waitFor({ state: 'detached' });
      expect(await names()).toEqual(['agent', 'calculator']);
      await page.getByLabel('Search in trace').fill('');
      await page.getByRole('button', { name: 'Collapse agent' }).click();
      await tree.getByRole('treeitem', { name: /calculator/ }).waitFor({ state: 'detached' });
      expect(await names()).toEqual(['agent']);
      expect(await tree.getByRole('treeitem').first().getAttribute('aria-expanded')).toBe('false');
      await page.getByRole('button', { name: 'Expand agent' }).click();
      await tree.getByRole('treeitem', { name: /calculator/ }).waitFor();
      expect(await names()).toEqual(['agent', 'ChatOpenAI', 'calculator']);
    });

    it('shows new runs in the runs table without a reload when Live is on', async () => {
      await page.goto(`${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}?live=true`);
      const table = page.getByRole('table', { name: 'Runs' });
      await table.getByRole('link', { name: 'agent' }).waitFor();
      expect(await page.getByLabel('Live').isChecked()).toBe(true);
      const run = new RunTree({ name: 'arrived-live', run_type: 'chain', inputs: {}, project_name: project, client });
      await run.postRun();
      await run.end({});
      await run.patchRun();
      await table.getByRole('link', { name: 'arrived-live' }).waitFor();
    });

    it("follows the SDK's run link (?poll=true) to that run's trace", async () => {
      const link = await client.getRunUrl({ run: await client.readRun(llmRunId) });
      expect(link).toBe(`${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}/r/${llmRunId}?poll=true`);
      await page.goto(link);
      await page.getByRole('heading', { name: 'ChatOpenAI', exact: true }).waitFor();
      await page.getByRole('tree').getByRole('treeitem').nth(2).waitFor();
      expect(await page.getByRole('treeitem', { selected: true }).locator('.node-name').textContent()).toBe('ChatOpenAI');
      expect(cspViolations).toEqual([]);
    });

    it("follows a dataset link to the dataset's examples; a comparison link naming a project that is no experiment of it says so", async () => {
      const dataset = await client.createDataset(`web-ds-${randomUUID().slice(0, 8)}`, { description: 'questions for the web test' });
      await client.createExamples([
        { dataset_id: dataset.id, inputs: { question: 'What is 6 x 7?' }, outputs: { answer: '42' } },
        { dataset_id: dataset.id, inputs: { question: 'What is 2 + 2?' }, outputs: { answer: '4' } },
      ]);
      await page.goto(`${svc.url}/o/${svc.workspaceId}/datasets/${dataset.id}`);
      await page.getByRole('heading', { name: `Dataset · ${dataset.name}` }).waitFor();
      const examples = page.getByRole('table', { name: 'Examples' });
      await examples.getByRole('row', { name: /6 x 7/ }).waitFor();
      expect(await examples.getByRole('row').count()).toBe(3);
      expect(await page.getByText('questions for the web test').count()).toBe(1);
      await page.getByText('No experiments on this dataset yet').waitFor();
      expect(await seriousA11yFindings(page)).toEqual([]);
      // The experiment-comparison form of the link (web-experiments.e2e.spec.ts compares real experiments).
      await page.goto(`${svc.url}/o/${svc.workspaceId}/datasets/${dataset.id}/compare?selectedSessions=${projectId}`);
      await page.getByRole('heading', { name: `Compare experiments · ${dataset.name}` }).waitFor();
      await page.getByRole('alert').waitFor();
    });

    it('adds feedback to a run through the session cookie (a CSRF-protected write)', async () => {
      await page.goto(`${svc.url}/o/${svc.workspaceId}/projects/p/${projectId}/r/${rootRunId}`);
      const form = page.getByRole('form', { name: 'Add feedback' });
      await form.waitFor();
      await form.getByLabel('Key').fill('helpfulness');
      await form.getByLabel('Score').fill('0.5');
      await form.getByLabel('Comment').fill('added in the browser');
      await form.getByRole('button', { name: 'Add feedback' }).click();
      await page.getByRole('table', { name: 'Feedback' }).getByRole('row', { name: /added in the browser/ }).waitFor();
      const stored = (await (await svc.api(`/api/v1/feedback?run=${rootRunId}`)).json()) as { key: string; score: number; comment: string }[];
      expect(stored).toEqual(expect.arrayContaining([expect.objectContaining({ key: 'helpfulness', score: 0.5, comment: 'added in the browser' })]));
    });

    it('creates, renames and deletes a project', async () => {
      const name = `made-in-web-${randomUUID().slice(0, 6)}`;
      await page.goto(`${svc.url}/o/${svc.workspaceId}/projects`);
      await page.getByRole('textbox', { name: 'New project' }).fill(name);
      await page.getByRole('button', { name: 'Create' }).click();
      await page.waitForURL(new RegExp(`/o/${svc.workspaceId}/projects/p/[0-9a-f-]{36}$`));
      await page.getByRole('heading', { name, exact: true }).waitFor();
      await page.getByRole('button', { name: 'Rename' }).click();
      await page.getByRole('textbox', { name: 'New name' }).fill(`${name}-renamed`);
      await page.getByRole('button', { name: 'Save' }).click();
      await page.getByRole('heading', { name: `${name}-renamed`, exact: true }).waitFor();
      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Delete project' }).click();
      await page.waitForURL(`${svc.url}/o/${svc.workspaceId}/projects`);
      await page.getByRole('link', { name: project }).waitFor();
      expect(await page.getByRole('link', { name: `${name}-renamed` }).count()).toBe(0);
      const left = (await (await svc.api(`/api/v1/sessions?name_contains=${name}`)).json()) as unknown[];
      expect(left).toEqual([]);
    });

    it('signs a user in with email and password, and switches workspace', async () => {
      const email = `web-${randomUUID().slice(0, 8)}@example.com`;
      const users = await svc.api('/api/v1/orgs/current/members/basic', { method: 'POST', json: { users: [{ email, password: 'a long password', role_id: BUILTIN_ROLES.organizationAdmin.id }] } });
      expect(users.status).toBe(200);
      const second = (await (await svc.api('/api/v1/workspaces', { method: 'POST', json: { name: `Second ${randomUUID().slice(0, 4)}` } })).json()) as { id: string; name: string };
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      try {
        const p = await ctx.newPage();
        p.setDefaultTimeout(WAIT_MS);
        await p.goto(`${svc.url}/login`);
        await p.getByRole('tab', { name: 'Email and password' }).click();
        await p.getByLabel('Email').fill(email);
        await p.getByLabel('Password').fill('wrong password');
        await p.getByRole('button', { name: 'Sign in' }).click();
        await p.getByRole('alert').waitFor();
        expect(await p.getByRole('alert').textContent()).toContain('Invalid email or password');
        await p.getByLabel('Password').fill('a long password');
        await p.getByRole('button', { name: 'Sign in' }).click();
        await p.waitForURL(`${svc.url}/o/${svc.workspaceId}/projects`);
        await p.getByRole('link', { name: project }).waitFor();
        const picker = p.getByLabel('Workspace');
        expect(await picker.locator('option').allTextContents()).toEqual(expect.arrayContaining([second.name]));
        await picker.selectOption(second.id);
        await p.waitForURL(`${svc.url}/o/${second.id}/projects`);
        await p.getByRole('heading', { name: 'Send your first trace' }).waitFor();
        expect(await seriousA11yFindings(p)).toEqual([]);
      } finally {
        await ctx.close();
      }
    });

    it('shows how to send a first trace to a workspace with no projects, and signs out', async () => {
      const empty = await svc.app.get(IdentityService).createOrganization({ name: `empty-${randomUUID().slice(0, 8)}` });
      const other = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'dark' });
      try {
        const p = await other.newPage();
        p.setDefaultTimeout(WAIT_MS);
        await p.goto(`${svc.url}/login`);
        await p.getByLabel('API key').fill(empty.api_key);
        await p.getByRole('button', { name: 'Sign in' }).click();
        await p.getByRole('heading', { name: 'Send your first trace' }).waitFor();
        const text = await p.locator('.empty pre').textContent();
        expect(text).toContain(`LANGSMITH_ENDPOINT=${svc.url}/api/v1`);
        expect(text).toContain('LANGSMITH_API_KEY=');
        expect(await seriousA11yFindings(p)).toEqual([]);
        await p.screenshot({ path: join(SCREENSHOTS, 'empty-dark.png') });
        await p.getByRole('button', { name: 'Sign out' }).click();
        await p.waitForURL(/\/login$/);
        expect((await other.cookies()).filter((c) => c.name === 'th_session')).toEqual([]);
        await p.goto(`${svc.url}/o/${empty.workspace_id}/projects`);
        await p.waitForURL(/\/login\?next=/);
      } finally {
        await other.close();
      }
    });

    it("the one-time link (on the SDK's link address) signs a new browser in, and a second use is refused", async () => {
      const link = svc.signInLink();
      expect(link.startsWith(`${svc.linkUrl}/login#token=`)).toBe(true);
      const fresh = await browser.newContext();
      try {
        const p = await fresh.newPage();
        p.setDefaultTimeout(WAIT_MS);
        await p.goto(link);
        await p.waitForURL(`${svc.linkUrl}/o/${svc.workspaceId}/projects`);
        const cookie = (await fresh.cookies()).find((c) => c.name === 'th_session');
        expect(cookie).toMatchObject({ domain: 'localhost', httpOnly: true, sameSite: 'Strict' });
        const again = await browser.newContext();
        const p2 = await again.newPage();
        p2.setDefaultTimeout(WAIT_MS);
        await p2.goto(link);
        await p2.getByRole('alert').waitFor();
        expect(await p2.getByRole('alert').textContent()).toContain('used already or has expired');
        await again.close();
      } finally {
        await fresh.close();
      }
    });
  });
});
