/**
 * Query benchmark: read latency of the standalone service's HTTP API over N stored runs
 * (default 5,000,000): a run by id, filtered trace lists (filters, time windows, a second page by
 * cursor, one trace's runs) in the big project and in a small one, and project stats.
 *
 * 1. setup: a data directory, the service started once to create the projects (POST /sessions)
 *    and learn the tenant id, then stopped;
 * 2. seed: a separate process opens the same chDB directory and inserts the runs as pre-serialized
 *    JSONCompactEachRow chunks built by the writer's own row builder (bench/query/dataset.ts);
 * 3. measure: the service restarted on that directory, warmed up, each query type run K times
 *    sequentially from one client, p50/p99 per type; R rounds, one JSON line each, then the medians.
 *
 *   npm run build && node scripts/run.js bench/query/main.js [--runs 5000000] [--repeat 3]
 *       [--data-dir DIR] [--keep] [--get-iters 200] [--list-iters 100] [--stats-iters 20]
 *       [--max-seconds 60] [--projects 20] [--days 30] [--seed 1] [--chunk 100000] [--settle 60]
 *
 * --max-seconds caps one query type in one round (then `<name>_n` reports the samples taken);
 * --settle is how long the seeder waits for background merges (no OPTIMIZE FINAL: a live table
 * is not fully merged). The service runs under the process title th-query-bench-standalone.
 *
 * --data-dir DIR reuses DIR when it holds a seeded data set (no reseeding; --runs is then ignored),
 * otherwise seeds into it; a named directory is never deleted. Without it, a temp directory is used
 * and removed at the end unless --keep.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { repoRoot, startAppProcess, type AppProcess } from '@th/testing';
import { median, percentile, round } from '../lib/stats';
import { projectWeights, RARE_TAG, type SampleId } from './dataset';
import { readManifest, writeManifest, type Manifest } from './manifest';

interface Args {
  runs: number;
  repeat: number;
  projects: number;
  getIters: number;
  listIters: number;
  statsIters: number;
  chunkRows: number;
  seed: number;
  days: number;
  settleSeconds: number;
  /** Cap on the time one query type may take in one round; fewer iterations are then reported. */
  maxSeconds: number;
  dataDir: string;
  keep: boolean;
}

const TARGETS = { get_by_id_p50_ms: 20, list_p99_ms: 300 };

function parseArgs(): Args {
  const a = process.argv.slice(2);
  const get = (k: string, d: string) => {
    const i = a.indexOf(`--${k}`);
    return i >= 0 ? a[i + 1] : d;
  };
  const num = (k: string, d: number, min = 1) => {
    const v = Number(get(k, String(d)));
    if (!Number.isFinite(v) || v < min) throw new Error(`--${k} must be a number >= ${min}`);
    return Math.floor(v);
  };
  return {
    runs: num('runs', 5_000_000),
    repeat: num('repeat', 3),
    projects: num('projects', 20, 2),
    getIters: num('get-iters', 200),
    listIters: num('list-iters', 100),
    statsIters: num('stats-iters', 20),
    chunkRows: num('chunk', 100_000),
    seed: num('seed', 1),
    days: num('days', 30),
    settleSeconds: num('settle', 60, 0),
    maxSeconds: num('max-seconds', 60),
    dataDir: get('data-dir', ''),
    keep: a.includes('--keep'),
  };
}

const log = (msg: string) => process.stderr.write(`[query-bench] ${msg}\n`);

function serviceEnv(dir: string, apiKey: string): Record<string, string> {
  return { DATA_DIR: join(dir, 'data'), BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false' };
}

async function startService(dir: string, apiKey: string): Promise<AppProcess> {
  // A distinct process title, so that stopping some other standalone by name (pkill -f) spares this one.
  const nodeArgs = process.env.TH_CHILD_NODE_ARGS ?? '';
  if (!nodeArgs.includes('--title')) process.env.TH_CHILD_NODE_ARGS = `${nodeArgs} --title=th-query-bench-standalone`.trim();
  return startAppProcess('standalone', serviceEnv(dir, apiKey), { timeoutMs: 300_000 });
}

/** Step 1: projects through the API, tenant id from a project; the service is stopped again. */
async function setup(dir: string, args: Args): Promise<Manifest> {
  const apiKey = `th_bench_${randomBytes(12).toString('hex')}`;
  const svc = await startService(dir, apiKey);
  const weights = projectWeights(args.projects);
  const projects: Manifest['projects'] = [];
  let tenantId = '';
  try {
    for (let i = 0; i < args.projects; i++) {
      const name = `bench-query-${String(i).padStart(2, '0')}`;
      const res = await fetch(`${svc.url}/api/v1/sessions`, {
        method: 'POST',
        headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ name }),
      });
      const body = (await res.json()) as { id: string; tenant_id: string };
      if (res.status !== 200) throw new Error(`POST /sessions answered ${res.status}: ${JSON.stringify(body)}`);
      projects.push({ id: body.id, name, weight: weights[i] });
      tenantId = body.tenant_id;
    }
  } finally {
    await svc.stop();
  }
  const end = Math.floor(Date.now() / 3_600_000) * 3_600_000;
  const m: Manifest = {
    format: 1,
    apiKey,
    tenantId,
    projects,
    runs: args.runs,
    seed: args.seed,
    chunkRows: args.chunkRows,
    settleSeconds: args.settleSeconds,
    windowStartMs: end - args.days * 86_400_000,
    windowEndMs: end,
  };
  writeManifest(dir, m);
  return m;
}

/** Step 2: the seeder in its own process (chDB binds one directory per process). */
async function seed(dir: string, runs: number): Promise<void> {
  const child = spawn(process.execPath, [join(repoRoot(), 'scripts', 'run.js'), 'bench/query/seed.js', dir], {
    cwd: repoRoot(),
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const limitMs = 600_000 + runs; // generous: 10 min + 1 ms per run
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const code = await new Promise<number | string>((res) => child.once('exit', (c, s) => res(c ?? s ?? 'unknown')));
  clearTimeout(timer);
  process.removeListener('exit', killOnExit);
  if (code !== 0) throw new Error(`seeder exited (${code})`);
}

interface Req {
  path: string;
  /** Pre-serialized JSON body: POST; none: GET. */
  body?: string;
}

interface Spec {
  name: string;
  kind: 'base' | 'get' | 'list' | 'stats';
  iters: number;
  req(i: number): Req;
  /** Checks a response (first iterations only); returns a problem or null. */
  check?(body: unknown, req: Req): string | null;
}

interface RunOut {
  id: string;
  trace_id: string;
  is_root: boolean;
  run_type: string;
  start_time: string;
  error: string | null;
  tags: string[];
  latency: number | null;
}
interface ListOut {
  runs: RunOut[];
  cursors: { next: string | null };
}

class Client {
  constructor(
    private readonly url: string,
    private readonly apiKey: string,
  ) {}

  /** Latency: from the request to the last byte of the response. */
  async call(req: Req): Promise<{ ms: number; body: unknown }> {
    const t0 = performance.now();
    const res = await fetch(`${this.url}${req.path}`, {
      method: req.body === undefined ? 'GET' : 'POST',
      headers: req.body === undefined ? { 'x-api-key': this.apiKey } : { 'x-api-key': this.apiKey, 'content-type': 'application/json' },
      body: req.body,
    });
    const buf = Buffer.from(await res.arrayBuffer());
    const ms = performance.now() - t0;
    if (res.status !== 200) throw new Error(`${req.path} ${req.body ?? ''} answered ${res.status}: ${buf.toString('utf8').slice(0, 500)}`);
    return { ms, body: JSON.parse(buf.toString('utf8')) as unknown };
  }
}

const DAY_MS = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const post = (path: string, body: unknown): Req => ({ path, body: JSON.stringify(body) });
const pickFrom = <T>(a: readonly T[]): T => a[Math.floor(Math.random() * a.length)];

function listCheck(limit: number, pred: (r: RunOut) => boolean, minRuns = 1) {
  return (body: unknown): string | null => {
    const b = body as ListOut;
    if (!Array.isArray(b.runs)) return 'no runs array';
    if (b.runs.length < Math.min(minRuns, limit) || b.runs.length > limit) return `${b.runs.length} runs`;
    const bad = b.runs.find((r) => !pred(r));
    return bad ? `unexpected run ${JSON.stringify({ id: bad.id, is_root: bad.is_root, run_type: bad.run_type, error: bad.error, tags: bad.tags, latency: bad.latency, start_time: bad.start_time })}` : null;
  };
}

/** Query types of one round; page-2 cursors are fetched here (not measured). */
async function roundSpecs(client: Client, m: Manifest, args: Args, big: number, small: number): Promise<Spec[]> {
  const s = m.seeded!;
  const roots = s.sample_roots;
  const children = s.sample_children;
  const specs: Spec[] = [
    // floors, to read the others against: HTTP + framework (public), then + API key auth + PostgreSQL
    { name: 'base_ok', kind: 'base', iters: Math.min(50, args.getIters), req: () => ({ path: '/ok' }) },
    { name: 'base_get_project', kind: 'base', iters: Math.min(50, args.getIters), req: () => ({ path: `/api/v1/sessions/${m.projects[big].id}` }) },
    {
      name: 'get_by_id',
      kind: 'get',
      iters: args.getIters,
      req: (i) => ({ path: `/api/v1/runs/${pickFrom(i % 2 === 0 ? roots : children).id}` }),
      check: (body, req) => ((body as RunOut).id === req.path.split('/').pop() ? null : `wrong run ${(body as RunOut).id}`),
    },
  ];
  for (const [label, p] of [
    ['big', big],
    ['small', small],
  ] as const) {
    const session = [m.projects[p].id];
    const base = { session, is_root: true, limit: 100 };
    const rootsHere = s.roots_per_project[p];
    const page1 = (await client.call(post('/api/v1/runs/query', base))).body as ListOut;
    const errPage1 = (await client.call(post('/api/v1/runs/query', { ...base, filter: 'eq(error, true)' }))).body as ListOut;
    const traces = roots.filter((r: SampleId) => r.project === p);
    const windowSpan = m.windowEndMs - m.windowStartMs - DAY_MS;
    specs.push(
      {
        name: `list_${label}_roots`,
        kind: 'list',
        iters: args.listIters,
        req: () => post('/api/v1/runs/query', base),
        check: listCheck(100, (r) => r.is_root, rootsHere),
      },
      {
        name: `list_${label}_chain_slow`,
        kind: 'list',
        iters: args.listIters,
        req: () => post('/api/v1/runs/query', { ...base, filter: 'and(eq(run_type, "chain"), gt(latency, 1))' }),
        check: listCheck(100, (r) => r.is_root && r.run_type === 'chain' && (r.latency ?? 0) > 1),
      },
      {
        name: `list_${label}_errors`,
        kind: 'list',
        iters: args.listIters,
        req: () => post('/api/v1/runs/query', { ...base, filter: 'eq(error, true)' }),
        check: listCheck(100, (r) => r.is_root && r.error !== null),
      },
      {
        name: `list_${label}_tag`,
        kind: 'list',
        iters: args.listIters,
        req: () => post('/api/v1/runs/query', { ...base, filter: `has(tags, "${RARE_TAG}")` }),
        check: listCheck(100, (r) => r.is_root && r.tags.includes(RARE_TAG)),
      },
      {
        // a random day of the window, anywhere in it
        name: `list_${label}_window_24h`,
        kind: 'list',
        iters: args.listIters,
        req: () => {
          const from = m.windowStartMs + Math.floor(Math.random() * windowSpan);
          return post('/api/v1/runs/query', { ...base, start_time: iso(from), end_time: iso(from + DAY_MS) });
        },
        check: (body, req) => {
          const q = JSON.parse(req.body!) as { start_time: string; end_time: string };
          const [from, to] = [Date.parse(q.start_time), Date.parse(q.end_time)];
          // a small project may have no trace on some day
          return listCheck(100, (r) => r.is_root && Date.parse(r.start_time) >= from && Date.parse(r.start_time) < to, 0)(body);
        },
      },
      {
        name: `list_${label}_page2`,
        kind: 'list',
        iters: page1.cursors.next ? args.listIters : 0,
        req: () => post('/api/v1/runs/query', { ...base, cursor: page1.cursors.next }),
        check: listCheck(100, (r) => r.is_root && !page1.runs.some((x) => x.id === r.id) && r.start_time <= page1.runs[page1.runs.length - 1].start_time),
      },
      {
        name: `list_${label}_errors_page2`,
        kind: 'list',
        iters: errPage1.cursors.next ? args.listIters : 0,
        req: () => post('/api/v1/runs/query', { ...base, filter: 'eq(error, true)', cursor: errPage1.cursors.next }),
        check: listCheck(100, (r) => r.is_root && r.error !== null && !errPage1.runs.some((x) => x.id === r.id)),
      },
      {
        // the trace view: every run of one trace
        name: `list_${label}_trace`,
        kind: 'list',
        iters: traces.length ? args.listIters : 0,
        req: () => post('/api/v1/runs/query', { session, trace: pickFrom(traces).trace_id, limit: 100 }),
        check: (body, req) => {
          const trace = (JSON.parse(req.body!) as { trace: string }).trace;
          return listCheck(100, (r) => r.trace_id === trace)(body);
        },
      },
      {
        name: `stats_${label}`,
        kind: 'stats',
        iters: args.statsIters,
        req: () => post('/api/v1/runs/stats', { session }),
        check: (body) => {
          const n = (body as { run_count: number }).run_count;
          return n === s.per_project[p] ? null : `run_count ${n}, seeded ${s.per_project[p]}`;
        },
      },
    );
  }
  return specs;
}

async function measure(client: Client, spec: Spec, maxSeconds: number, problems: string[]): Promise<number[]> {
  const times: number[] = [];
  const deadline = performance.now() + maxSeconds * 1000;
  for (let i = 0; i < spec.iters && performance.now() < deadline; i++) {
    const req = spec.req(i);
    const { ms, body } = await client.call(req);
    times.push(ms);
    if (i < 3 && spec.check) {
      const problem = spec.check(body, req);
      if (problem) problems.push(`${spec.name}: ${problem}`);
    }
  }
  return times;
}

async function once(client: Client, m: Manifest, args: Args, big: number, small: number, problems: string[]): Promise<Record<string, number>> {
  const specs = await roundSpecs(client, m, args, big, small);
  const out: Record<string, number> = {};
  let worstList = 0;
  for (const spec of specs) {
    if (spec.iters === 0) continue;
    const times = await measure(client, spec, args.maxSeconds, problems);
    out[`${spec.name}_p50_ms`] = round(percentile(times, 50));
    out[`${spec.name}_p99_ms`] = round(percentile(times, 99));
    if (times.length < spec.iters) out[`${spec.name}_n`] = times.length; // capped by --max-seconds
    if (spec.kind === 'list') worstList = Math.max(worstList, percentile(times, 99));
  }
  out.list_p99_worst_ms = round(worstList);
  return out;
}

async function warmUp(client: Client, m: Manifest, args: Args, big: number, small: number, problems: string[]): Promise<void> {
  const specs = await roundSpecs(client, m, args, big, small);
  for (const spec of specs) {
    const n = spec.kind === 'get' || spec.kind === 'base' ? 20 : 2;
    for (let i = 0; i < Math.min(n, spec.iters); i++) {
      const req = spec.req(i);
      const { body } = await client.call(req);
      const problem = spec.check?.(body, req);
      if (problem) problems.push(`warm-up ${spec.name}: ${problem}`);
    }
  }
}

function printTable(med: Record<string, number>): void {
  const names = [...new Set(Object.keys(med).filter((k) => k.endsWith('_p50_ms')).map((k) => k.slice(0, -'_p50_ms'.length)))];
  const pad = (s: string, n: number) => s.padEnd(n);
  const lines = [`${pad('query', 28)}${pad('p50 ms', 10)}${pad('p99 ms', 10)}target`];
  for (const n of names) {
    const p50 = med[`${n}_p50_ms`];
    const p99 = med[`${n}_p99_ms`];
    let target = '';
    if (n === 'get_by_id') target = `p50 <= ${TARGETS.get_by_id_p50_ms} ms ${p50 <= TARGETS.get_by_id_p50_ms ? 'ok' : 'MISSED'}`;
    else if (n.startsWith('list_')) target = `p99 <= ${TARGETS.list_p99_ms} ms ${p99 <= TARGETS.list_p99_ms ? 'ok' : 'MISSED'}`;
    lines.push(`${pad(n, 28)}${pad(String(p50), 10)}${pad(String(p99), 10)}${target}`);
  }
  process.stderr.write(`${lines.join('\n')}\n`);
}

async function main(): Promise<void> {
  const args = parseArgs();
  const named = args.dataDir !== '';
  const dir = named ? resolve(args.dataDir) : mkdtempSync(join(tmpdir(), 'th-qbench-'));
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755); // embedded PostgreSQL's initdb runs as the postgres user
  let svc: AppProcess | null = null;
  const cleanup = async () => {
    if (svc) await svc.stop();
    svc = null;
    if (!named && !args.keep) rmSync(dir, { recursive: true, force: true });
    else log(`data kept in ${dir} (reuse with --data-dir ${dir})`);
  };
  const onSignal = () => {
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const results: Record<string, number>[] = [];
  const problems: string[] = [];
  let m: Manifest | null = null;
  try {
    m = readManifest(dir) ?? (log(`setup in ${dir}`), await setup(dir, args));
    let seededNow = false;
    if (!m.seeded) {
      log(`seeding ${m.runs} runs`);
      await seed(dir, m.runs);
      m = readManifest(dir)!;
      seededNow = true;
    } else if (m.runs !== args.runs) {
      log(`reusing ${dir}: ${m.seeded.runs} runs (--runs ${args.runs} ignored)`);
    }
    const s = m.seeded!;
    const big = 0;
    // a small project: the middle of the Zipf tail
    const small = Math.min(m.projects.length - 1, Math.max(1, Math.round(m.projects.length / 2)));
    const seedLine = {
      phase: 'seed',
      reused: !seededNow,
      runs: s.runs,
      traces: s.traces,
      error_runs: s.error_runs,
      seconds: s.seconds,
      runs_per_s: s.runs_per_s,
      build_s: s.build_s,
      insert_wait_s: s.insert_wait_s,
      json_mb: s.json_mb,
      json_bytes_per_run: s.json_bytes_per_run,
      inserts: s.inserts,
      settle_s: s.settle_s,
      merges_running_at_end: s.merges_running_at_end,
      active_parts: s.parts.reduce((n, p) => n + p.parts, 0),
      mb_on_disk: s.parts.reduce((n, p) => n + p.mb_on_disk, 0),
      partitions: s.parts.map((p) => `${p.partition}:${p.parts}p/${p.rows}r`).join(' '),
      big_project: { runs: s.per_project[big], roots: s.roots_per_project[big] },
      small_project: { runs: s.per_project[small], roots: s.roots_per_project[small] },
    };
    process.stdout.write(`${JSON.stringify(seedLine)}\n`);

    const t0 = performance.now();
    svc = await startService(dir, m.apiKey);
    log(`service ready in ${round((performance.now() - t0) / 1000)} s; warming up`);
    const client = new Client(svc.url, m.apiKey);
    await warmUp(client, m, args, big, small, problems);
    for (let i = 0; i < args.repeat; i++) {
      const r = await once(client, m, args, big, small, problems);
      process.stdout.write(`${JSON.stringify({ round: i, ...r })}\n`);
      results.push(r);
    }
  } catch (err) {
    const child = (svc as AppProcess | null)?.child;
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      log(`the service exited during the benchmark (code ${child.exitCode}, signal ${child.signalCode}); was it stopped from outside?`);
    }
    if (svc) process.stderr.write(`service log (tail):\n${(svc as AppProcess).log().slice(-4000)}\n`);
    throw err;
  } finally {
    await cleanup();
  }

  const keys = [...new Set(results.flatMap((r) => Object.keys(r)))];
  const med = Object.fromEntries(keys.map((k) => [k, median(results.filter((r) => k in r).map((r) => r[k]))]));
  const meets = {
    get_by_id_p50: med.get_by_id_p50_ms <= TARGETS.get_by_id_p50_ms,
    list_p99: med.list_p99_worst_ms <= TARGETS.list_p99_ms,
  };
  printTable(med);
  if (problems.length) log(`check failures:\n  ${[...new Set(problems)].join('\n  ')}`);
  process.stdout.write(
    `${JSON.stringify({
      runs: m!.seeded!.runs,
      repeat: args.repeat,
      projects: m!.projects.length,
      iters: { get: args.getIters, list: args.listIters, stats: args.statsIters },
      median: med,
      targets: TARGETS,
      meets_targets: meets,
      check_failures: [...new Set(problems)].length,
    })}\n`,
  );
}

main().catch((err: unknown) => {
  const cause = err instanceof Error && err.cause ? `\ncause: ${String((err.cause as Error).stack ?? err.cause)}` : '';
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}${cause}\n`);
  process.exit(1);
});
