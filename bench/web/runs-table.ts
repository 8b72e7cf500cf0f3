/**
 * The runs table over millions of runs, in headless Chromium against the compiled standalone service:
 * from navigation to the first page of rows painted (median of --repeat loads), and the first page's
 * API read alone. The runs are written straight into the embedded engine's runs table with one
 * INSERT ... SELECT FROM numbers() while the service is stopped (chDB binds its data directory to one
 * process), then the service is started again on the same data.
 *
 *   npm run build && npm run build:web && node scripts/run.js bench/web/runs-table.js [--runs 5000000] [--repeat 5]
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { ClickHouse } from '@th/clickhouse';
import { startAppProcess } from '@th/testing';
import { median, round } from '../lib/stats';

const arg = (k: string, d: number) => {
  const i = process.argv.indexOf(`--${k}`);
  return i >= 0 ? Number(process.argv[i + 1]) : d;
};
/** The insert may take this long at most (the engine stops it past the bound). */
const INSERT_MAX_S = 900;

async function main(): Promise<void> {
  const total = arg('runs', 5_000_000);
  const repeat = arg('repeat', 5);
  const dir = mkdtempSync(join(tmpdir(), 'th-bench-runs-'));
  chmodSync(dir, 0o755); // embedded PostgreSQL's initdb runs as the postgres user
  const apiKey = `th_bench_${randomBytes(12).toString('hex')}`;
  const env = { DATA_DIR: join(dir, 'data'), BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false', WEB_LINK_PORT: '0' };
  let svc = await startAppProcess('standalone', env);
  const api = async (path: string, body?: unknown) => {
    const res = await fetch(`${svc.url}/api/v1${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<unknown>;
  };
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const project = (await api('/sessions', { name: `bench-runs-${randomBytes(4).toString('hex')}` })) as { id: string; tenant_id: string };
    await svc.stop();

    // `total` root runs, one every 10 ms back from now, through the engine itself (the locator view fills too).
    const ch = ClickHouse.connect({ kind: 'embedded', path: join(env.DATA_DIR, 'clickhouse') });
    const insertStart = performance.now();
    await ch.command(
      `INSERT INTO runs (tenant_id, session_id, id, trace_id, name, run_type, start_time, end_time, status, is_root, dotted_order, trace_tier,
                         inputs, outputs, extra, events, serialized, tags, metadata, feedback_stats, total_tokens, prompt_tokens, completion_tokens,
                         total_cost, prompt_cost, completion_cost, attachments, merge_state, received_at, version, is_deleted)
       SELECT {tenant:UUID}, {session:UUID}, id, id, concat('run-', toString(number % 100)), if(number % 3 = 0, 'llm', 'chain'),
              t, t + toIntervalMillisecond(200 + number % 1800), if(number % 50 = 0, 'error', 'success'), true,
              concat(formatDateTime(t, '%Y%m%dT%H%i%S%fZ'), toString(id)), 'longlived',
              '{"q":"bench"}', '{"a":"ok"}', '{}', '[]', '{}', ['bench'], map('user', concat('u', toString(number % 7))), '',
              number % 500, number % 400, number % 100, (number % 500) * 0.000001, NULL, NULL, '', '{}', t, 1, 0
       FROM (SELECT number, generateUUIDv4(number) AS id, now64(6, 'UTC') - toIntervalMillisecond(number * 10) AS t FROM numbers({total:UInt64}))`,
      { tenant: project.tenant_id, session: project.id, total },
      { max_execution_time: INSERT_MAX_S, max_insert_threads: 2 },
    );
    const insertS = (performance.now() - insertStart) / 1000;
    await ch.close();

    svc = await startAppProcess('standalone', env, { timeoutMs: 300_000 });
    const stats = (await api('/runs/stats', { session: [project.id] })) as { run_count: number };
    // The first page as the app reads it (roots, the table's columns), through the API alone.
    const select = ['id', 'name', 'trace_id', 'run_type', 'status', 'start_time', 'latency', 'total_tokens', 'total_cost'];
    // Roots and all runs, each without and with a filter (one run in three is an llm run).
    const variants = {
      roots: { is_root: true },
      all: { is_root: null },
      roots_filtered: { is_root: true, filter: 'eq(run_type, "llm")' },
      all_filtered: { is_root: null, filter: 'eq(run_type, "llm")' },
    };
    const apiMs: Record<string, number[]> = {};
    for (const [name, v] of Object.entries(variants)) {
      apiMs[name] = [];
      for (let i = 0; i < repeat; i++) {
        const t = performance.now();
        const page = (await api('/runs/query', { session: [project.id], ...v, limit: 100, select })) as { runs: unknown[] };
        apiMs[name].push(performance.now() - t);
        if (page.runs.length !== 100) throw new Error(`${name}: ${page.runs.length} runs on the first page`);
      }
    }

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const signIn = await context.request.post(`${svc.url}/api/v1/auth/session`, { headers: { 'x-requested-with': 'bench' }, data: { api_key: apiKey } });
    if (!signIn.ok()) throw new Error(`sign-in: ${signIn.status()}`);
    const page = await context.newPage();
    const url = `${svc.url}/o/${project.tenant_id}/projects/p/${project.id}`;
    const painted = async () => Number(await page.evaluate('new Promise((r) => requestAnimationFrame(() => setTimeout(() => r(performance.now()), 0)))'));
    const paints: number[] = [];
    for (let i = 0; i < repeat; i++) {
      await page.goto('about:blank');
      await page.goto(url);
      // The first screen of rows: the table shows the newest runs first.
      await page.getByRole('table', { name: 'Runs' }).getByRole('row').nth(15).waitFor({ state: 'attached', timeout: 60_000 });
      paints.push(await painted());
    }
    process.stdout.write(
      JSON.stringify(
        {
          runs: stats.run_count,
          insert_s: round(insertS, 1),
          first_page_api_ms: Object.fromEntries(Object.entries(apiMs).map(([k, ms]) => [k, { median: round(median(ms), 0), all: ms.map((v) => round(v, 0)) }])),
          runs_table_first_page_painted_ms: { median: round(median(paints), 0), all: paints.map((v) => round(v, 0)) },
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
