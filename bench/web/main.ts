/**
 * Web app benchmark in headless Chromium (Debian's /usr/bin/chromium, playwright-core) against the
 * compiled standalone service: the initial JavaScript (gzip, as served); a trace of N runs (default
 * 10,000: a root, 100 chains, 99 LLM runs under each) from navigation to its first rows painted and to
 * the whole tree loaded and painted (rows are virtualized: only those in view are in the DOM), median of
 * --repeat loads, and the tree's API read alone; a run with an output of --big-mb MB (default 20) opened,
 * with the longest main-thread task (PerformanceObserver 'longtask') from navigation until its output
 * is shown and until its largest array is opened.
 *
 *   npm run build && npm run build:web && node scripts/run.js bench/web/main.js [--runs 10000] [--repeat 5] [--big-mb 20]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startAppProcess } from '@th/testing';
import { median, round } from '../lib/stats';

const arg = (k: string, d: number) => {
  const i = process.argv.indexOf(`--${k}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};

/** A dotted_order part: the run's start (UTC, microseconds) and its id. */
const part = (t: Date, id: string) => `${t.toISOString().replace(/[-:]/g, '').replace(/\.(\d{3})Z$/, '$1000Z')}${id}`;

async function main(): Promise<void> {
  const total = arg('runs', 10_000);
  const repeat = arg('repeat', 5);
  const dir = mkdtempSync(join(tmpdir(), 'th-bench-web-'));
  chmodSync(dir, 0o755); // embedded PostgreSQL's initdb runs as the postgres user
  const apiKey = `th_bench_${randomBytes(12).toString('hex')}`;
  const svc = await startAppProcess('standalone', { DATA_DIR: join(dir, 'data'), BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false' });
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const api = async (path: string, body?: unknown) => {
      const res = await fetch(`${svc.url}/api/v1${path}`, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { 'x-api-key': apiKey, 'content-type': 'application/json', 'accept-encoding': 'gzip' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
      return res;
    };

    // Initial JavaScript: every script the page loads first, compressed as served.
    const html = await (await fetch(`${svc.url}/`)).text();
    let jsGzip = 0;
    for (const [, src] of html.matchAll(/<script[^>]*src="([^"]+)"/g)) {
      const res = await fetch(`${svc.url}${src}`, { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit);
      jsGzip += Number(res.headers.get('content-length'));
    }

    // One trace of `total` runs.
    const project = `bench-web-${randomUUID().slice(0, 8)}`;
    const t0 = Date.now() - 3_600_000;
    const rootId = randomUUID();
    const rootOrder = part(new Date(t0), rootId);
    const runs: Record<string, unknown>[] = [
      { id: rootId, trace_id: rootId, dotted_order: rootOrder, name: 'agent', run_type: 'chain', start_time: new Date(t0).toISOString(), end_time: new Date(t0 + 60_000).toISOString(), inputs: { q: 'bench' }, outputs: { a: 'ok' }, session_name: project },
    ];
    const chains = 100;
    const perChain = Math.max(0, Math.ceil((total - 1 - chains) / chains));
    for (let c = 0; c < chains && runs.length < total; c++) {
      const id = randomUUID();
      const start = new Date(t0 + c * 500);
      const order = `${rootOrder}.${part(start, id)}`;
      runs.push({ id, trace_id: rootId, parent_run_id: rootId, dotted_order: order, name: `step-${c}`, run_type: 'chain', start_time: start.toISOString(), end_time: new Date(start.getTime() + 400).toISOString(), inputs: { c }, outputs: { c }, session_name: project });
      for (let k = 0; k < perChain && runs.length < total; k++) {
        const cid = randomUUID();
        const cs = new Date(start.getTime() + k * 3);
        runs.push({
          id: cid, trace_id: rootId, parent_run_id: id, dotted_order: `${order}.${part(cs, cid)}`, name: 'ChatOpenAI', run_type: 'llm',
          start_time: cs.toISOString(), end_time: new Date(cs.getTime() + 2).toISOString(), session_name: project,
          inputs: { messages: [{ role: 'user', content: `question ${c}.${k}` }] },
          outputs: { choices: [{ message: { role: 'assistant', content: `answer ${c}.${k}` } }], usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 } },
        });
      }
    }
    const batches: Record<string, unknown>[][] = [];
    for (let i = 0; i < runs.length; i += 100) batches.push(runs.slice(i, i + 100));
    let next = 0;
    await Promise.all(Array.from({ length: 4 }, async () => {
      while (next < batches.length) await api('/runs/batch', { post: batches[next++] });
    }));
    const projectId = ((await (await api(`/sessions?name=${project}`)).json()) as { id: string }[])[0].id;
    const workspace = ((await (await api('/auth/session')).json()) as { tenant_id: string }).tenant_id;
    for (let i = 0; i < 120; i++) {
      const stats = (await (await api('/runs/stats', { trace: rootId, session: [projectId] })).json()) as { run_count: number };
      if (stats.run_count >= runs.length) break;
      await new Promise((r) => setTimeout(r, 500));
    }

    // The tree's reads alone (the app's query: the tree's light fields, up to 10,000 runs a page), for comparison.
    const apiStart = performance.now();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = (await (await api('/runs/query', { trace: rootId, session: [projectId], limit: 10_000, cursor, select: ['id', 'name', 'run_type', 'status', 'dotted_order', 'latency', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'total_cost', 'parent_run_id', 'start_time', 'end_time'], order: 'asc' })).json()) as { cursors: { next: string | null } };
      cursor = res.cursors.next;
      pages++;
    } while (cursor && pages < 50);
    const apiMs = performance.now() - apiStart;

    // A run whose output is --big-mb MB of JSON: an array of objects with a text field each.
    const bigMb = arg('big-mb', 20);
    const bigId = randomUUID();
    const bigStart = new Date(t0 + 120_000);
    const rowText = 'x'.repeat(180);
    const bigRows = Array.from({ length: Math.round((bigMb * 1024 * 1024) / 210) }, (_, i) => ({ i, text: rowText }));
    await api('/runs', { id: bigId, trace_id: bigId, dotted_order: part(bigStart, bigId), name: 'big-output', run_type: 'tool', start_time: bigStart.toISOString(), end_time: new Date(bigStart.getTime() + 1000).toISOString(), inputs: { n: bigRows.length }, outputs: { rows: bigRows }, session_name: project });
    const bigChars = JSON.stringify({ rows: bigRows }).length;
    for (let i = 0; i < 120; i++) {
      const stats = (await (await api('/runs/stats', { trace: bigId, session: [projectId] })).json()) as { run_count: number };
      if (stats.run_count >= 1) break;
      await new Promise((r) => setTimeout(r, 500));
    }

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const signIn = await context.request.post(`${svc.url}/api/v1/auth/session`, { headers: { 'x-requested-with': 'bench' }, data: { api_key: apiKey } });
    if (!signIn.ok()) throw new Error(`sign-in: ${signIn.status()}`);
    const page = await context.newPage();
    const url = `${svc.url}/o/${workspace}/projects/p/${projectId}/r/${rootId}`;
    const firstPaints: number[] = [];
    const paints: number[] = [];
    // performance.now() counts from this navigation's start; read after the next frame is painted.
    const painted = async () => Number(await page.evaluate('new Promise((r) => requestAnimationFrame(() => setTimeout(() => r(performance.now()), 0)))'));
    const count = `${runs.length.toLocaleString('en-US')} runs`;
    for (let i = 0; i < repeat; i++) {
      await page.goto('about:blank');
      await page.goto(url);
      // The first screen of the tree (its first rows), then the whole trace loaded (the count, nothing more to load).
      await page.locator('[role="treeitem"]').nth(10).waitFor({ state: 'attached', timeout: 60_000 });
      firstPaints.push(await painted());
      await page.getByTestId('tree-count').getByText(count, { exact: true }).waitFor({ timeout: 60_000 });
      paints.push(await painted());
    }
    // The last load's request waterfall (ms from navigation): which reads wait for which.
    const waterfall = (await page.evaluate(
      "performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation')).map((e) => ({ name: e.name.replace(location.origin, '').slice(0, 60), start: Math.round(e.startTime), end: Math.round(e.responseEnd) }))",
    )) as { name: string; start: number; end: number }[];

    // The large output: every main-thread task over 50 ms is recorded from the page's start (the observer is
    // installed over the DevTools protocol, before the app's scripts run).
    await context.addInitScript(
      "window.__longtasks = []; new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longtasks.push(e.duration); }).observe({ type: 'longtask', buffered: true });",
    );
    const bigShown: number[] = [];
    const bigLongest: number[] = [];
    const bigOpenedLongest: number[] = [];
    const longest = async () => Number(await page.evaluate('Math.max(0, ...window.__longtasks)'));
    for (let i = 0; i < repeat; i++) {
      await page.goto('about:blank');
      await page.goto(`${svc.url}/o/${workspace}/projects/p/${projectId}/r/${bigId}`);
      const rows = page.getByRole('group', { name: 'Outputs (JSON)' }).getByRole('button', { name: /^▸ rows / });
      await rows.waitFor({ timeout: 60_000 });
      bigShown.push(await painted());
      await new Promise((r) => setTimeout(r, 300));
      bigLongest.push(await longest());
      await rows.click();
      await page.getByRole('group', { name: 'Outputs (JSON)' }).locator('[data-path="rows.0"]').waitFor({ timeout: 60_000 });
      await painted();
      bigOpenedLongest.push(await longest());
    }
    process.stdout.write(
      JSON.stringify(
        {
          initial_js_gzip_bytes: jsGzip,
          trace_runs: runs.length,
          trace_api_pages: pages,
          trace_api_ms: round(apiMs, 0),
          trace_first_rows_painted_ms: { median: round(median(firstPaints), 0), all: firstPaints.map((p) => round(p, 0)) },
          trace_whole_tree_painted_ms: { median: round(median(paints), 0), all: paints.map((p) => round(p, 0)) },
          trace_requests: waterfall.map((w) => `${w.start}-${w.end} ${w.name}`),
          big_output_chars: bigChars,
          big_output_shown_ms: { median: round(median(bigShown), 0), all: bigShown.map((p) => round(p, 0)) },
          big_output_longest_task_ms: { max: round(Math.max(...bigLongest), 0), all: bigLongest.map((p) => round(p, 0)) },
          big_output_opened_longest_task_ms: { max: round(Math.max(...bigOpenedLongest), 0), all: bigOpenedLongest.map((p) => round(p, 0)) },
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await browser.close();
    await svc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
