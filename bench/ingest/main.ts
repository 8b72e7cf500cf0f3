/**
 * Ingest benchmark: end-to-end runs per second through the gateway (batches of 100 operations,
 * half POST and half PATCH, ~1 KB runs) until visible to a query, acknowledgement latency, and
 * ingest-to-queryable lag; plus the ceiling: the same rows as one JSONEachRow body inserted
 * straight into the ClickHouse engine, measured in the same run.
 *
 *   npm run build && node scripts/run.js bench/ingest/main.js --mode standalone|cluster [--runs 200000] [--repeat 3]
 *     [--concurrency 8] [--ack stored|logged]   (standalone: when a write is acknowledged, see INGEST_ACK)
 */
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ClickHouse, migrateClickHouse, spreadPartDirectories } from '@th/clickhouse';
import { emptyRun, mergeEvent, RUN_ROW_COLUMNS, RUN_ROW_INSERT_SETTINGS, rowObject, runRow } from '@th/ingest';
import { startAppProcess, startCluster, type AppProcess, type Cluster } from '@th/testing';
import type { RunEvent } from '@th/contracts';
import { median, percentile, round } from '../lib/stats';
import { benchRun, type BenchRun } from '../lib/workload';

interface Args {
  mode: 'standalone' | 'cluster';
  runs: number;
  repeat: number;
  concurrency: number;
  /** Measure a service that is already running (standalone form) instead of starting one. */
  url: string;
  apiKey: string;
  /** Standalone: when a run write is acknowledged (the service's INGEST_ACK). */
  ack: 'stored' | 'logged';
}

function parseArgs(): Args {
  const a = process.argv.slice(2);
  const get = (k: string, d: string) => {
    const i = a.indexOf(`--${k}`);
    return i >= 0 ? a[i + 1] : d;
  };
  const mode = get('mode', 'standalone');
  if (mode !== 'standalone' && mode !== 'cluster') throw new Error('--mode standalone|cluster');
  const ack = get('ack', 'stored');
  if (ack !== 'stored' && ack !== 'logged') throw new Error('--ack stored|logged');
  return {
    mode,
    runs: Number(get('runs', '200000')),
    repeat: Number(get('repeat', '3')),
    concurrency: Number(get('concurrency', '8')),
    url: get('url', ''),
    apiKey: get('api-key', ''),
    ack,
  };
}

interface Target {
  url: string;
  apiKey: string;
  /** ClickHouse for the ceiling: the same engine the service writes to. */
  /** Seconds per insert of the ceiling's body, and the CPU this process spent per insert (µs). */
  ceiling(rows: Buffer, count: number): Promise<{ seconds: number; cpuMicros: number }>;
  /** A folder of this run's for the machine probe's files (removed with the target). */
  scratch: string;
  /** CPU time the service process has used so far, in microseconds (standalone started here only). */
  serviceCpuMicros?(): number;
  /** Minor page faults of the service process so far (standalone). */
  serviceFaults?(): number;
  /** CPU time so far of the service's threads by group, in microseconds (standalone). */
  serviceThreads?(): Record<string, number>;
  stop(): Promise<void>;
}

async function standaloneTarget(args: Args): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'th-bench-'));
  chmodSync(dir, 0o755); // embedded PostgreSQL's initdb runs as the postgres user
  const apiKey = args.apiKey || `th_bench_${randomBytes(8).toString('hex')}`;
  const svc: Pick<AppProcess, 'url' | 'stop'> & { child?: AppProcess['child'] } = args.url
    ? { url: args.url, stop: async () => undefined }
    : await startAppProcess('standalone', { DATA_DIR: join(dir, 'data'), BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false', INGEST_ACK: args.ack });
  // chDB binds one directory per process: the ceiling uses the same engine build in this process, on its own directory.
  const ch = ClickHouse.connect({ kind: 'embedded', path: join(dir, 'ceiling') });
  await migrateClickHouse(ch);
  // A table like runs but without its view into runs_by_id: the ceiling is the run rows alone.
  await ch.command('CREATE TABLE IF NOT EXISTS runs_ceiling AS runs');
  spreadPartDirectories(join(dir, 'ceiling')); // as the service's engine does for its tables
  return {
    url: svc.url,
    apiKey,
    ceiling: (rows) => timedInsert(ch, rows, 'runs_ceiling'),
    scratch: join(dir, 'probe'),
    serviceCpuMicros: svc.child?.pid ? () => processCpuMicros(svc.child!.pid!) : undefined,
    serviceFaults: svc.child?.pid ? () => processFaults(svc.child!.pid!) : undefined,
    serviceThreads: svc.child?.pid ? () => threadGroupMicros(svc.child!.pid!) : undefined,
    async stop() {
      await svc.stop();
      await ch.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function clusterTarget(): Promise<Target> {
  const cluster: Cluster = await startCluster();
  const scratch = mkdtempSync(join(tmpdir(), 'th-bench-probe-'));
  const ch = ClickHouse.connect({ kind: 'http', url: cluster.clickhouse.url, user: 'default', password: '', database: 'default' });
  await ch.command('CREATE TABLE IF NOT EXISTS runs_ceiling AS runs');
  return {
    url: cluster.gateway.url,
    apiKey: cluster.apiKey,
    ceiling: (rows) => timedInsert(ch, rows, 'runs_ceiling'),
    scratch,
    async stop() {
      await ch.close();
      await cluster.stop();
      rmSync(scratch, { recursive: true, force: true });
    },
  };
}

/** Timed inserts of the ceiling's body after one untimed warm-up of the same size. */
const CEILING_TIMED_INSERTS = 3;

async function timedInsert(ch: ClickHouse, rows: Buffer, table: string): Promise<{ seconds: number; cpuMicros: number }> {
  // The rows as the writer writes them, so with the same insert settings (JSON objects read as String).
  // The first insert of a body this size into a fresh engine runs 1.5-3x slower than the next ones
  // (allocator and page cache warm-up), while the service's engine is warm: measuring that one would
  // understate the ceiling. So one untimed warm-up of the whole body, then the median of the next three.
  await ch.insertJsonEachRow(table, rows, RUN_ROW_INSERT_SETTINGS);
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < CEILING_TIMED_INSERTS; i++) {
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    await ch.insertJsonEachRow(table, rows, RUN_ROW_INSERT_SETTINGS);
    const c = process.cpuUsage(c0);
    times.push((performance.now() - t0) / 1000);
    cpu.push(c.user + c.system);
  }
  return { seconds: median(times), cpuMicros: median(cpu) };
}

/**
 * The final merged rows of the workload, with the values the writer would write, as one JSONEachRow
 * body (the ceiling; the writer itself sends the same values as JSONCompactEachRow).
 */
function ceilingRows(runs: BenchRun[], tenant: string, session: string): Buffer {
  // Joined 10,000 lines at a time: a million rows are more text than one JS string may hold.
  const parts: Buffer[] = [];
  let lines: string[] = [];
  const now = new Date().toISOString().replace('Z', '000Z');
  for (const r of runs) {
    const run = emptyRun(tenant, r.id);
    const base = { kind: 'run' as const, tenant_id: tenant, id: r.id, received_at: now };
    mergeEvent(run, { ...base, op: 'post', fields: { ...(r.post as RunEvent['fields']), session_id: session } });
    mergeEvent(run, { ...base, op: 'patch', fields: { ...(r.patch as RunEvent['fields']), end_time: new Date(r.patch.end_time as number).toISOString() } });
    lines.push(JSON.stringify(rowObject(RUN_ROW_COLUMNS, runRow(run, 1, now).line)));
    if (lines.length === 10_000) {
      parts.push(Buffer.from(`${lines.join('\n')}\n`));
      lines = [];
    }
  }
  if (lines.length > 0) parts.push(Buffer.from(lines.join('\n')));
  return Buffer.concat(parts);
}

async function once(target: Target, args: Args, round_: number): Promise<Record<string, number>> {
  const project = `bench-${round_}-${randomBytes(3).toString('hex')}`;
  const headers = { 'x-api-key': target.apiKey, 'content-type': 'application/json' };
  const base = Date.UTC(2026, 10, 1) + round_ * 10_000_000;
  const runs = Array.from({ length: args.runs }, (_, i) => benchRun(project, i, base));
  // batch k: posts of runs [50k, 50k+50) and patches of the previous 50 runs
  const batches: Buffer[] = [];
  for (let k = 0; k * 50 < runs.length + 50; k++) {
    const post = runs.slice(k * 50, k * 50 + 50).map((r) => r.post);
    const patch = k > 0 ? runs.slice((k - 1) * 50, k * 50).map((r) => r.patch) : [];
    if (post.length + patch.length > 0) batches.push(Buffer.from(JSON.stringify({ post, patch })));
  }
  // The ceiling first, while the engines are idle: the same final rows, one body, straight in.
  const created = await fetchOnce(`${target.url}/sessions`, { method: 'POST', headers, body: JSON.stringify({ name: project }) });
  const { tenant_id: tenant, id: sessionId } = (await created.json()) as { tenant_id: string; id: string };
  const { seconds: ceilingSeconds, cpuMicros: ceilingCpu } = await target.ceiling(ceilingRows(runs, tenant, sessionId), runs.length);
  const acks: number[] = [];
  const lags: number[] = [];
  const lagChecks: Promise<void>[] = [];
  let probesInFlight = 0;
  let next = 0;
  // The load generator sends the pre-encoded bodies over keep-alive node:http connections (one per
  // worker): it shares the machine's cores with the service, so it should cost as little as it can.
  const agent = new http.Agent({ keepAlive: true, maxSockets: args.concurrency });
  const { hostname, port } = new URL(target.url);
  const post = (body: Buffer) =>
    new Promise<number>((resolve, reject) => {
      const req = http.request(
        { hostname, port, path: '/runs/batch', method: 'POST', agent, headers: { ...headers, 'content-length': body.length } },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  const probe = machineProbe(join(target.scratch, `probe-${round_}`));
  const cpu0 = process.cpuUsage();
  const serviceCpu0 = target.serviceCpuMicros?.();
  const serviceFaults0 = target.serviceFaults?.();
  const threads0 = target.serviceThreads?.();
  const machine0 = machineTicks();
  const t0 = performance.now();
  const deadline = Date.now() + 30 * 60_000;
  const worker = async () => {
    for (;;) {
      const k = next++;
      if (k >= batches.length || Date.now() > deadline) return;
      const s = performance.now();
      const status = await post(batches[k]);
      if (status !== 202) throw new Error(`batch ${k} answered ${status}`);
      const ackAt = performance.now();
      acks.push(ackAt - s);
      // At most 4 probes at a time, each polling every 25 ms: the probes must not load the store they measure.
      if (k % 25 === 1 && k * 50 <= runs.length && probesInFlight < 4) {
        probesInFlight++;
        const probe = runs[(k - 1) * 50].id; // patched in this batch
        lagChecks.push(
          (async () => {
            for (let i = 0; i < 3000; i++) {
              // A probe's keep-alive connection may be closed by the server while idle between rounds: try again.
              const body = await fetch(`${target.url}/runs/query`, { method: 'POST', headers, body: JSON.stringify({ id: [probe], select: ['status'] }) })
                .then(async (r) => {
                  const b = (await r.json()) as { runs?: { status: string }[] };
                  if (!Array.isArray(b.runs)) process.stderr.write(`probe answered ${r.status}: ${JSON.stringify(b).slice(0, 300)}\n`);
                  return b;
                })
                .catch(() => ({ runs: [] }));
              if (body.runs?.[0]?.status === 'success') {
                lags.push(performance.now() - ackAt);
                return;
              }
              await new Promise((res2) => setTimeout(res2, 25));
            }
          })().finally(() => probesInFlight--),
        );
      }
    }
  };
  await Promise.all(Array.from({ length: args.concurrency }, worker));
  const acked = performance.now();
  const clientCpu = process.cpuUsage(cpu0);
  agent.destroy();
  // visible: every run of this round completed in a query
  let visibleAt = acked;
  for (let i = 0; i < 6000; i++) {
    const r = await fetchOnce(`${target.url}/runs/stats`, { method: 'POST', headers, body: JSON.stringify({ filter: `eq(status, "success")`, query: null, tags: ['bench'], session: await sessionIds(target, project) }) });
    const s = (await r.json()) as { run_count: number };
    if (s.run_count >= args.runs) {
      visibleAt = performance.now();
      break;
    }
    await new Promise((res2) => setTimeout(res2, 100));
  }
  const serviceCpu = serviceCpu0 === undefined ? undefined : target.serviceCpuMicros!() - serviceCpu0;
  const serviceFaults = serviceFaults0 === undefined ? undefined : target.serviceFaults!() - serviceFaults0;
  const threads1 = target.serviceThreads?.();
  const threads: Record<string, number> = {};
  if (threads0 && threads1) for (const g of THREAD_GROUPS) threads[`service_${g}_us_per_run`] = Math.round(((threads1[g] ?? 0) - (threads0[g] ?? 0)) / args.runs);
  const machine1 = machineTicks();
  await Promise.all(lagChecks);
  const seconds = (visibleAt - t0) / 1000;
  const e2e = args.runs / seconds;
  const ceiling = args.runs / ceilingSeconds;
  return {
    runs_per_s: Math.round(e2e),
    ops_per_s: Math.round((2 * args.runs) / seconds),
    ack_p50_ms: round(percentile(acks, 50)),
    ack_p99_ms: round(percentile(acks, 99)),
    lag_p99_ms: round(percentile(lags, 99)),
    lag_samples: lags.length,
    ceiling_runs_per_s: Math.round(ceiling),
    ratio_to_ceiling: round(e2e / ceiling, 3),
    // CPU the engine spent per row on the ceiling's insert (all its threads, in this process; embedded
    // engine only: over HTTP the server's CPU is elsewhere). The floor under any end-to-end run's cost.
    ...(ceilingCpu > 0 && args.mode === 'standalone' ? { ceiling_cpu_us_per_run: round(ceilingCpu / args.runs, 1) } : {}),
    // CPU this load generator (sending, probes) spent per run while loading: taken from the same cores as the service's.
    client_cpu_us_per_run: Math.round((clientCpu.user + clientCpu.system) / args.runs),
    // CPU the service process (all its threads: JS, garbage collector, chDB) spent per run, until the round was visible.
    ...(serviceCpu === undefined ? {} : { service_cpu_us_per_run: Math.round(serviceCpu / args.runs) }),
    // Minor page faults the service took per run (each costs 10-25 µs on this machine's hypervisor, see page_fault_us).
    ...(serviceFaults === undefined ? {} : { service_faults_per_run: round(serviceFaults / args.runs, 2) }),
    // The same CPU by thread (see threadGroupMicros): js, engine (statements), merges, gc_helpers, other.
    ...threads,
    // Share of the machine's CPU time left idle during the round (both cores).
    machine_idle_pct: round((100 * (machine1.idle - machine0.idle)) / Math.max(1, machine1.total - machine0.total), 1),
    ...probe,
  };
}

/**
 * This machine's speed at the start of a round, so figures from different sessions can be compared:
 * its CPU and its file system vary by half from one hour to the next (same code, same workload).
 * cpu: a fixed JS workload (JSON of a ~1 KB run, 20,000 times) in ms. file: µs to create an empty file
 * in a new folder of the round's temporary directory, as the engine creates its part files (without
 * the part placement attribute: what the file system charges where nothing steers it).
 * Also page_fault_us and core<N>_probe_ms (see pageFaultProbe and coreProbes).
 */
function machineProbe(scratch: string): Record<string, number> {
  const t0 = performance.now();
  const n = probeWorkload();
  const cpu = performance.now() - t0;
  mkdirSync(scratch, { recursive: true });
  const files = 300;
  const t1 = performance.now();
  for (let i = 0; i < files; i++) closeSync(openSync(join(scratch, `f${i}`), 'w'));
  const file = ((performance.now() - t1) * 1000) / files;
  if (n === 0) throw new Error('unreachable');
  return { cpu_probe_ms: round(cpu), file_create_us: round(file), page_fault_us: pageFaultProbe(), ...coreProbes() };
}

/**
 * µs to fault in one page of fresh memory (64 MB, every 4 KiB page written once): a hypervisor that
 * takes freed pages back makes each first touch expensive, and the ceiling's large body pays it.
 */
function pageFaultProbe(): number {
  const bytes = 64 * 1024 * 1024;
  const t = performance.now();
  const b = Buffer.allocUnsafeSlow(bytes);
  for (let i = 0; i < bytes; i += 4096) b[i] = 1;
  return round(((performance.now() - t) * 1000) / (bytes / 4096), 2);
}

/** The probe's fixed workload: JSON of a ~1 KB run, 20,000 times. */
function probeWorkload(): number {
  const sample = { id: '0190d2c4-0000-7000-8000-000000000000', inputs: { prompt: 'lorem ipsum dolor sit amet '.repeat(30) }, tags: ['bench'], extra: { metadata: { shard: 3 } } };
  let n = 0;
  for (let i = 0; i < 20_000; i++) n += (JSON.parse(JSON.stringify(sample)) as { tags: string[] }).tags.length;
  return n;
}

/**
 * The same workload pinned to each core in turn (`core<N>_probe_ms`, the best of three after a
 * warm-up), in a child process under `taskset`: this machine's two virtual cores do not run at the
 * same speed, and which one is slower changes within the hour. Nothing is reported without taskset.
 */
function coreProbes(): Record<string, number> {
  const script = `const w = ${probeWorkload.toString()}; w(); let best = Infinity; for (let i = 0; i < 3; i++) { const t = performance.now(); w(); best = Math.min(best, performance.now() - t); } process.stdout.write(String(best));`;
  const out: Record<string, number> = {};
  for (let core = 0; core < cpus().length; core++) {
    const r = spawnSync('taskset', ['-c', String(core), process.execPath, '-e', script], { encoding: 'utf8', timeout: 30_000 });
    const ms = Number(r.stdout);
    if (r.status !== 0 || !Number.isFinite(ms)) return {};
    out[`core${core}_probe_ms`] = round(ms);
  }
  return out;
}

/** The fields of /proc/<pid>/stat after the command name (Linux): field 3 of proc(5) is index 0. */
function procStat(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** user + system CPU time of a process (all threads) in microseconds. */
function processCpuMicros(pid: number): number {
  const fields = procStat(pid);
  // fields[11], fields[12]: utime, stime in clock ticks (USER_HZ, 100 on Linux)
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}

const THREAD_GROUPS = ['js', 'engine', 'merges', 'gc_helpers', 'other'] as const;

/**
 * CPU time of a process's threads by group, in microseconds, from /proc/<pid>/task: js is the main
 * thread; gc_helpers the threads Node names like itself (V8's platform workers: garbage collection
 * and compilation); merges ClickHouse's MergeMutate pool; engine the threads that run chDB's
 * statements (the libuv pool's threads, which the engine renames, and its query pipeline threads);
 * other the rest (background schedules, Node's libuv-named helpers). Threads that ended during the
 * round are not counted.
 */
function threadGroupMicros(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const group =
      Number(tid) === pid ? 'js' : name === 'node' ? 'gc_helpers' : name.startsWith('MergeMutate') ? 'merges' : name === 'Unknown' || name.startsWith('QueryPipeline') || name.startsWith('ThreadPool') ? 'engine' : 'other';
    out[group] = (out[group] ?? 0) + ((Number(f[11]) + Number(f[12])) * 1e6) / 100;
  }
  return out;
}

/** Minor page faults of a process (all threads). */
function processFaults(pid: number): number {
  return Number(procStat(pid)[7]); // minflt
}

/** The machine's CPU time, total and idle (idle + iowait), in clock ticks, from /proc/stat. */
function machineTicks(): { total: number; idle: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { total: cpu.reduce((a, b) => a + b, 0), idle: cpu[3] + cpu[4] };
}

/**
 * fetch, tried a second time if the connection fails: a keep-alive connection left idle (while a large
 * workload is built, say) may have been closed by the server just as it is reused.
 */
async function fetchOnce(url: string, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    return fetch(url, init);
  }
}

const sessionCache = new Map<string, string[]>();
async function sessionIds(target: Target, name: string): Promise<string[]> {
  const hit = sessionCache.get(name);
  if (hit) return hit;
  const r = await fetchOnce(`${target.url}/sessions?name=${encodeURIComponent(name)}`, { headers: { 'x-api-key': target.apiKey } });
  const list = ((await r.json()) as { id: string }[]).map((p) => p.id);
  if (list.length) sessionCache.set(name, list);
  return list;
}

async function main(): Promise<void> {
  const args = parseArgs();
  const target = args.mode === 'standalone' ? await standaloneTarget(args) : await clusterTarget();
  const results: Record<string, number>[] = [];
  try {
    for (let i = 0; i < args.repeat; i++) {
      const r = await once(target, args, i);
      process.stdout.write(`${JSON.stringify({ mode: args.mode, ...(args.mode === 'standalone' ? { ack: args.ack } : {}), round: i, ...r })}\n`);
      results.push(r);
    }
  } finally {
    await target.stop();
  }
  const keys = Object.keys(results[0]);
  const med = Object.fromEntries(keys.map((k) => [k, median(results.map((r) => r[k]))]));
  process.stdout.write(`${JSON.stringify({ mode: args.mode, ...(args.mode === 'standalone' ? { ack: args.ack } : {}), runs: args.runs, repeat: args.repeat, concurrency: args.concurrency, median: med })}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
