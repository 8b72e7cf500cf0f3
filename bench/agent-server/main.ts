/**
 * Agent-server benchmark: an echo graph; N threads (default 200) with one run each, created and joined
 * (POST /threads, POST /threads/{id}/runs, GET .../join), at concurrency 1, 10, 50 and 200. Reports
 * runs per second (N / wall time) and create-to-join latency p50/p99 (run creation request to join
 * response), for our agent server (a process on a fresh PostgreSQL database, checkpoints in Postgres)
 * and, in the same run on the same graph, the peer: the open-source JS server @langchain/langgraph-api
 * 1.5.x (in-memory), installed under bench/agent-server/peer (`cd bench/agent-server/peer && npm install`).
 * Each (server, concurrency) is measured --repeat times (default 3), interleaved; medians are reported.
 *
 *   npm run build && node scripts/run.js bench/agent-server/main.js [--threads 200] [--repeat 3]
 *       [--concurrency 1,10,50,200] [--peer-jobs 200] [--workers 200] [--no-peer] [--durability async|sync|exit]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, freePort, repoRoot, startAppProcess, type AppProcess } from '@th/testing';
import { median, percentile, round } from '../lib/stats';

interface Args {
  threads: number;
  repeat: number;
  concurrency: number[];
  peerJobs: number;
  workers: number;
  peer: boolean;
  durability: string;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { threads: 200, repeat: 3, concurrency: [1, 10, 50, 200], peerJobs: 200, workers: 200, peer: true, durability: 'async' };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[i + 1];
    if (argv[i] === '--threads') (a.threads = Number(v)), i++;
    else if (argv[i] === '--repeat') (a.repeat = Number(v)), i++;
    else if (argv[i] === '--concurrency') (a.concurrency = v.split(',').map(Number)), i++;
    else if (argv[i] === '--peer-jobs') (a.peerJobs = Number(v)), i++;
    else if (argv[i] === '--workers') (a.workers = Number(v)), i++;
    else if (argv[i] === '--no-peer') a.peer = false;
    else if (argv[i] === '--durability') (a.durability = v), i++;
  }
  return a;
}

const input = (i: number) => ({ messages: [{ role: 'user', content: `echo ${i}` }] });

async function json(res: Response, what: string): Promise<unknown> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: HTTP ${res.status} ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

/** One thread, one run, joined; returns the create-to-join latency in ms. */
async function oneRun(url: string, i: number): Promise<number> {
  const post = (path: string, body: unknown) => fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const thread = (await json(await post('/threads', {}), 'create thread')) as { thread_id: string };
  const t0 = performance.now();
  const run = (await json(await post(`/threads/${thread.thread_id}/runs`, { assistant_id: 'echo', input: input(i) }), 'create run')) as { run_id: string };
  const values = (await json(await fetch(`${url}/threads/${thread.thread_id}/runs/${run.run_id}/join`), 'join')) as { messages?: { content: string }[] };
  const ms = performance.now() - t0;
  const last = values.messages?.[values.messages.length - 1];
  if (values.messages?.length !== 2 || last?.content !== `echo ${i}`) throw new Error(`wrong join result for run ${i}: ${JSON.stringify(values).slice(0, 200)}`);
  return ms;
}

async function workload(url: string, n: number, concurrency: number): Promise<{ runs_per_s: number; p50_ms: number; p99_ms: number }> {
  const lat: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      for (let i = next++; i < n; i = next++) lat.push(await oneRun(url, i));
    }),
  );
  const wall = (performance.now() - start) / 1000;
  return { runs_per_s: round(n / wall, 1), p50_ms: round(percentile(lat, 50), 1), p99_ms: round(percentile(lat, 99), 1) };
}

async function startPeer(jobs: number): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const dir = join(repoRoot(), 'bench', 'agent-server', 'peer');
  if (!existsSync(join(dir, 'node_modules', '@langchain', 'langgraph-api'))) throw new Error(`the peer is not installed: cd ${dir} && npm install`);
  rmSync(join(dir, '.langgraph_api'), { recursive: true, force: true }); // the peer persists its in-memory state there: start clean
  const port = await freePort();
  const child = spawn(process.execPath, [join(dir, 'start.mjs'), String(port), String(jobs)], { cwd: dir, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-5000)));
  child.stderr?.on('data', (d: Buffer) => (log = (log + d.toString()).slice(-5000)));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/ok`)).ok) break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`peer did not start:\n${log}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    url,
    child,
    async stop() {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const db = await createTestDatabase('th_agent_bench');
  let ours: AppProcess | null = null;
  let peer: Awaited<ReturnType<typeof startPeer>> | null = null;
  try {
    ours = await startAppProcess('agent-server', {
      DATABASE_URL: db.url,
      GRAPHS_CONFIG: join(repoRoot(), 'bench', 'agent-server', 'graphs', 'langgraph.json'),
      WORKER_CONCURRENCY: String(args.workers),
      DATABASE_POOL_SIZE: '40',
      LOG_LEVEL: 'warn',
      RUN_DURABILITY: args.durability,
    });
    if (args.peer) peer = await startPeer(args.peerJobs);
    const targets: [string, string][] = [['ours', ours.url]];
    if (peer) targets.push(['peer', peer.url]);
    for (const [, url] of targets) await workload(url, 40, 10); // warm-up
    const results: Record<string, Record<number, { runs_per_s: number; p50_ms: number; p99_ms: number }[]>> = {};
    for (let round_ = 1; round_ <= args.repeat; round_++) {
      for (const c of args.concurrency) {
        for (const [name, url] of targets) {
          const r = await workload(url, args.threads, c);
          ((results[name] ??= {})[c] ??= []).push(r);
          process.stdout.write(JSON.stringify({ round: round_, server: name, concurrency: c, threads: args.threads, ...r }) + '\n');
        }
      }
    }
    const summary = args.concurrency.map((c) => {
      const med = (name: string, k: 'runs_per_s' | 'p50_ms' | 'p99_ms') => (results[name]?.[c] ? median(results[name][c].map((r) => r[k])) : NaN);
      const row: Record<string, number> = {
        concurrency: c,
        ours_runs_per_s: med('ours', 'runs_per_s'),
        ours_p50_ms: med('ours', 'p50_ms'),
        ours_p99_ms: med('ours', 'p99_ms'),
      };
      if (peer) {
        row.peer_runs_per_s = med('peer', 'runs_per_s');
        row.peer_p50_ms = med('peer', 'p50_ms');
        row.peer_p99_ms = med('peer', 'p99_ms');
        row.ratio = round(row.ours_runs_per_s / row.peer_runs_per_s, 1);
      }
      return row;
    });
    process.stdout.write(JSON.stringify({ summary: `median of ${args.repeat} runs per concurrency`, rows: summary }, null, 1) + '\n');
  } finally {
    if (peer) await peer.stop();
    if (ours) await ours.stop();
    await db.drop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
