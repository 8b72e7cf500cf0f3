/**
 * Stall benchmark: the event-loop delay one hostile request can cause, seen as the latency of GET /ok.
 * A probe (its own worker thread, so this process's sending does not delay it) sends GET /ok every
 * --probe-ms while the standalone service first idles (the quiet baseline) and then receives, one phase
 * at a time, the worst inputs of issue 27 points 2, 3 and 6:
 *   regex      a price map match_pattern ^(a+)+$ and an LLM run whose model is 29 a's and "!" (the writer
 *              matches it), plus a pattern RE2 cannot run (a backreference);
 *   schema     a dataset whose inputs schema has pattern ^(a+)+$, then POST /examples with 29 a's and "!";
 *   multipart  100,000 empty parts (CRLF, as every client sends; about 6 MB), and a 25 MB body of runs;
 *   json       25 MB of runs as one JSON batch (one JSON.parse of the whole limit);
 *   bodies     25 MB JSON bodies on the other routes: one run (POST /runs), OTLP/JSON spans, examples/bulk,
 *              feedback, upload-experiment;
 *   depth      a run whose inputs nest 5,000 levels, and a body of 1,000,000 nested arrays.
 * Each phase prints one JSON line (status and time of each request, the probe's p50/p99/max in the
 * phase, and the longest /ok during each request and the --settle seconds after its answer, so work done after
 * a 2xx counts towards the request that caused it). With a local service, each /ok also records the CPU time
 * the service's main thread spent while it waited (/proc, 10 ms ticks): on a loaded machine a slow /ok with
 * little of it was the scheduler's doing, not a block of the service's own;
 * then a markdown table and the verdict against the target: no /ok slower than 100 ms.
 *
 *   npm run build && node scripts/run.js bench/stall/main.js [--phases regex,schema,multipart,json,depth]
 *     [--baseline 3] [--settle 1.5] [--timeout 60] [--probe-ms 15] [--parts 100000] [--url http://... --api-key KEY]
 */
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import * as http from 'node:http';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { startAppProcess } from '@th/testing';
import { median, percentile, round } from '../lib/stats';
import { benchRun } from '../lib/workload';

const PHASES = ['regex', 'schema', 'multipart', 'json', 'bodies', 'depth'] as const;
type Phase = (typeof PHASES)[number];
const TARGET_MS = 100;

interface Args {
  phases: Phase[];
  baseline: number;
  settle: number;
  timeout: number;
  probeMs: number;
  parts: number;
  url: string;
  apiKey: string;
}

function parseArgs(): Args {
  const a = process.argv.slice(2);
  const get = (k: string, d: string) => {
    const i = a.indexOf(`--${k}`);
    return i >= 0 ? a[i + 1] : d;
  };
  const num = (k: string, d: number, min: number, max: number) => {
    const v = Number(get(k, String(d)));
    if (!Number.isFinite(v) || v < min || v > max) throw new Error(`--${k} must be a number in [${min}, ${max}]`);
    return v;
  };
  return {
    phases: get('phases', PHASES.join(',')).split(',').map((p) => {
      if (!(PHASES as readonly string[]).includes(p)) throw new Error(`--phases takes ${PHASES.join(',')}`);
      return p as Phase;
    }),
    baseline: num('baseline', 3, 1, 60),
    settle: num('settle', 1.5, 0, 60),
    timeout: num('timeout', 60, 1, 600),
    probeMs: num('probe-ms', 15, 5, 1000),
    parts: Math.floor(num('parts', 100_000, 1, 1_000_000)),
    url: get('url', ''),
    apiKey: get('api-key', ''),
  };
}

/** The probe's code: GET /ok one at a time, the next --probe-ms after the previous was sent (or at once if it was late). */
const PROBE = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { readFileSync } = require('node:fs');
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
let stop = false;
parentPort.on('message', (m) => { if (m === 'stop') stop = true; });
// The service's main thread's CPU time (ms, utime + stime of /proc/PID/task/PID/stat; 10 ms ticks), or NaN.
const cpuMs = () => {
  if (!workerData.pid) return NaN;
  try {
    const stat = readFileSync('/proc/' + workerData.pid + '/task/' + workerData.pid + '/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(f[11]) + Number(f[12])) * 1000) / workerData.ticks;
  } catch {
    return NaN;
  }
};
const once = () => new Promise((resolve) => {
  const t0 = performance.now();
  const c0 = cpuMs();
  const done = (status) => resolve({ at: Date.now(), ms: performance.now() - t0, cpu: cpuMs() - c0, status });
  const req = http.get(workerData.url + '/ok', { agent, timeout: 600000 }, (res) => {
    res.resume();
    res.on('end', () => done(res.statusCode));
  });
  req.on('error', () => done(0));
});
(async () => {
  while (!stop) {
    const t0 = performance.now();
    parentPort.postMessage(await once());
    const wait = workerData.probeMs - (performance.now() - t0);
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  agent.destroy();
  parentPort.postMessage('done');
})();
`;

interface Sample {
  at: number;
  ms: number;
  /** The service's main-thread CPU time (ms) while this /ok waited: on a loaded machine, the part of `ms` that was the service's own work. */
  cpu: number;
  status: number;
}

interface Answer {
  status: number;
  ms: number;
  bytes: number;
  body: string;
}

/** One request with the body sent whole; resolves with status 0 on a timeout or a socket error. */
function send(base: string, apiKey: string, method: string, path: string, body: Buffer | null, contentType: string, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const u = new URL(path, base);
    const req = http.request(
      { method, hostname: u.hostname, port: u.port, path: u.pathname + u.search, agent: false, timeout: timeoutMs,
        headers: { 'x-api-key': apiKey, ...(body ? { 'content-type': contentType, 'content-length': body.length } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, bytes: body?.length ?? 0, body: text });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t0, bytes: body?.length ?? 0, body: 'timeout or socket error' }));
    req.end(body ?? undefined);
  });
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v));

/** A multipart/form-data body of CRLF parts. */
function multipart(parts: { name: string; data: string | Buffer; type?: string }[], boundary: string): Buffer {
  const out: Buffer[] = [];
  for (const p of parts) {
    out.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`));
    out.push(typeof p.data === 'string' ? Buffer.from(p.data) : p.data);
    out.push(Buffer.from('\r\n'));
  }
  out.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(out);
}

/** Runs (each post part ~1 KB, as the SDK sends them) until the body reaches `bytes`. */
function runsMultipart(bytes: number, boundary: string): { body: Buffer; runs: number } {
  const parts: { name: string; data: string; type: string }[] = [];
  let size = 0;
  let runs = 0;
  const base = Date.now();
  const project = `stall-${randomBytes(3).toString('hex')}`;
  // Each part's framing: the delimiter line, two header lines, the blank line and the CRLF after the data.
  const framing = (name: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\nContent-Type: application/json\r\n\r\n\r\n`.length;
  for (;;) {
    const r = benchRun(project, runs, base);
    const post = JSON.stringify(r.post);
    const patch = JSON.stringify(r.patch);
    const add = post.length + patch.length + framing(`post.${r.id}`) + framing(`patch.${r.id}`);
    if (size + add > bytes) break;
    parts.push({ name: `post.${r.id}`, data: post, type: 'application/json' }, { name: `patch.${r.id}`, data: patch, type: 'application/json' });
    size += add;
    runs++;
  }
  return { body: multipart(parts, boundary), runs };
}

/** `make(i)` items until their JSON reaches `bytes` (the body's framing aside). */
function itemsUpTo(bytes: number, make: (i: number) => unknown): unknown[] {
  const out: unknown[] = [];
  let size = 0;
  while (size < bytes) {
    const item = make(out.length);
    size += JSON.stringify(item).length + 1;
    out.push(item);
  }
  return out;
}

/** About 1 KB of text, different for each i. */
const kb = (i: number) => `${i} ${'lorem ipsum dolor sit amet, consectetur adipiscing elit '.repeat(17)}`;
const BODY_BYTES = 25 * 1024 * 1024 - 64 * 1024;

function runsBatch(bytes: number): { body: Buffer; runs: number } {
  const post: Record<string, unknown>[] = [];
  const patch: Record<string, unknown>[] = [];
  let size = 0;
  const base = Date.now();
  const project = `stall-${randomBytes(3).toString('hex')}`;
  while (size < bytes - 4096) {
    const r = benchRun(project, post.length, base);
    post.push(r.post);
    patch.push(r.patch);
    size += JSON.stringify(r.post).length + JSON.stringify(r.patch).length + 2;
  }
  return { body: json({ post, patch }), runs: post.length };
}

interface Step {
  label: string;
  /** Builds the request (outside the timed window). */
  make(): { method: string; path: string; body: Buffer | null; contentType?: string };
}

/** The requests of each phase, sent one after the other. Dataset ids come from an earlier answer. */
function phaseSteps(phase: Phase, ctx: { datasetId?: string }, args: Args): Step[] {
  const evil = `${'a'.repeat(29)}!`;
  switch (phase) {
    case 'regex':
      return [
        { label: 'price map ^(a+)+$', make: () => ({ method: 'POST', path: '/api/v1/model-price-map', body: json({ name: `evil-${randomUUID()}`, match_pattern: '^(a+)+$', prompt_cost: 1e-6, completion_cost: 1e-6 }) }) },
        { label: 'price map backreference', make: () => ({ method: 'POST', path: '/api/v1/model-price-map', body: json({ name: `evil-${randomUUID()}`, match_pattern: '^(a+)\\1$', prompt_cost: 1e-6, completion_cost: 1e-6 }) }) },
        {
          label: 'llm run, model 29 a + !',
          make: () => {
            const id = randomUUID();
            return { method: 'POST', path: '/api/v1/runs', body: json({ id, name: 'evil', run_type: 'llm', start_time: new Date().toISOString(), inputs: { prompt: 'hi' }, outputs: { text: 'hello' }, extra: { metadata: { ls_model_name: evil } } }) };
          },
        },
      ];
    case 'schema':
      return [
        {
          label: 'dataset pattern ^(a+)+$',
          make: () => ({ method: 'POST', path: '/api/v1/datasets', body: json({ name: `evil-${randomUUID()}`, inputs_schema_definition: { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } }, patternProperties: { '^(b+)+$': { type: 'string' } } } }) }),
        },
        { label: 'example q = 29 a + !', make: () => ({ method: 'POST', path: '/api/v1/examples', body: json({ dataset_id: ctx.datasetId ?? randomUUID(), inputs: { q: evil, [`${'b'.repeat(29)}!`]: 'x' } }) }) },
        {
          label: 'dataset lookbehind pattern',
          make: () => ({ method: 'POST', path: '/api/v1/datasets', body: json({ name: `evil-${randomUUID()}`, inputs_schema_definition: { type: 'object', properties: { q: { type: 'string', pattern: '(?<=a)b' } } } }) }),
        },
      ];
    case 'multipart': {
      const boundary = `stall${randomBytes(8).toString('hex')}`;
      return [
        {
          label: `${args.parts.toLocaleString('en')} empty parts`,
          make: () => ({ method: 'POST', path: '/api/v1/runs/multipart', contentType: `multipart/form-data; boundary=${boundary}`, body: multipart(Array.from({ length: args.parts }, (_, i) => ({ name: `attachment.x.${i}`, data: '' })), boundary) }),
        },
        {
          label: '25 MB of runs (multipart)',
          make: () => ({ method: 'POST', path: '/api/v1/runs/multipart', contentType: `multipart/form-data; boundary=${boundary}`, body: runsMultipart(25 * 1024 * 1024 - 64 * 1024, boundary).body }),
        },
      ];
    }
    case 'json':
      return [{ label: '25 MB of runs (batch JSON)', make: () => ({ method: 'POST', path: '/api/v1/runs/batch', body: runsBatch(25 * 1024 * 1024 - 64 * 1024).body }) }];
    case 'bodies': {
      const fill = BODY_BYTES - 4096;
      const kv = (key: string, value: string) => ({ key, value: { stringValue: value } });
      return [
        {
          label: '25 MB run (POST /runs, 25,000 input keys)',
          make: () => {
            const inputs = Object.fromEntries(itemsUpTo(fill, (i) => [`k${i}`, kb(i)]) as [string, string][]);
            return { method: 'POST', path: '/api/v1/runs', body: json({ id: randomUUID(), name: 'big', run_type: 'chain', start_time: new Date().toISOString(), inputs }) };
          },
        },
        {
          label: '25 MB OTLP/JSON spans',
          make: () => {
            const traceId = randomBytes(16).toString('hex');
            const start = BigInt(Date.now()) * 1_000_000n;
            const spans = itemsUpTo(fill, (i) => ({
              traceId, spanId: randomBytes(8).toString('hex'), name: 'chat', kind: 1, startTimeUnixNano: String(start), endTimeUnixNano: String(start + 1_000_000n),
              attributes: [kv('gen_ai.operation.name', 'chat'), kv('gen_ai.prompt', kb(i))],
            }));
            return { method: 'POST', path: '/api/v1/otel/v1/traces', body: json({ resourceSpans: [{ resource: { attributes: [kv('service.name', 'stall')] }, scopeSpans: [{ scope: { name: 'stall' }, spans }] }] }) };
          },
        },
        {
          label: 'dataset for the bulk examples',
          make: () => ({ method: 'POST', path: '/api/v1/datasets', body: json({ name: `bulk-${randomUUID()}` }) }),
        },
        {
          // About 3 KB an example: 25 MB stays under the route's 10,000 items.
          label: '25 MB examples/bulk',
          make: () => ({ method: 'POST', path: '/api/v1/examples/bulk', body: json(itemsUpTo(fill, (i) => ({ dataset_id: ctx.datasetId ?? randomUUID(), inputs: { q: kb(i), r: kb(i), s: kb(i) }, outputs: { a: i } }))) }),
        },
        {
          label: '25 MB feedback (correction)',
          make: () => ({ method: 'POST', path: '/api/v1/feedback', body: json({ run_id: randomUUID(), key: 'big', correction: Object.fromEntries(itemsUpTo(fill, (i) => [`k${i}`, kb(i)]) as [string, string][]) }) }),
        },
        {
          label: '25 MB upload-experiment',
          make: () => {
            const t = new Date().toISOString();
            const results = itemsUpTo(fill, (i) => ({ row_id: randomUUID(), inputs: { q: kb(i) }, expected_outputs: {}, actual_outputs: { a: i }, start_time: t, end_time: t, run_name: 'r' }));
            return { method: 'POST', path: '/api/v1/datasets/upload-experiment', body: json({ experiment_name: `big-${randomUUID()}`, dataset_name: `big-${randomUUID()}`, experiment_start_time: t, experiment_end_time: t, results }) };
          },
        },
      ];
    }
    case 'depth': {
      const nest = (n: number) => Buffer.from(`{"id":"${randomUUID()}","name":"deep","run_type":"chain","start_time":"${new Date().toISOString()}","inputs":{"x":${'['.repeat(n)}${']'.repeat(n)}}}`);
      return [
        { label: 'run inputs 5,000 levels', make: () => ({ method: 'POST', path: '/api/v1/runs', body: nest(5000) }) },
        { label: 'run inputs 1,000,000 levels', make: () => ({ method: 'POST', path: '/api/v1/runs', body: nest(1_000_000) }) },
        { label: 'body of 1,000,000 open [', make: () => ({ method: 'POST', path: '/api/v1/runs', body: Buffer.from('['.repeat(1_000_000)) }) },
      ];
    }
  }
}

interface PhaseResult {
  phase: string;
  requests: { label: string; status: number; ms: number; bytes: number; ok_max?: number; ok_cpu_max?: number; body?: string }[];
  probes: number;
  p50: number;
  p99: number;
  max: number;
  /** The most main-thread CPU time the service spent during one /ok of the phase. */
  cpu_max: number;
  pass: boolean;
}

/** The kernel's clock ticks per second (USER_HZ), in which /proc reports CPU time. */
function clockTicks(): number {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
}

async function main(): Promise<void> {
  const args = parseArgs();
  const dir = mkdtempSync(join(tmpdir(), 'th-bench-stall-'));
  chmodSync(dir, 0o755); // embedded PostgreSQL's initdb runs as the postgres user
  const apiKey = args.apiKey || `th_bench_${randomBytes(8).toString('hex')}`;
  const svc = args.url
    ? { url: args.url, stop: async () => undefined }
    : await startAppProcess('standalone', { DATA_DIR: join(dir, 'data'), BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false' });
  const pid = 'child' in svc ? svc.child.pid : undefined;
  const samples: Sample[] = [];
  const probe = new Worker(PROBE, { eval: true, workerData: { url: svc.url, probeMs: args.probeMs, pid, ticks: clockTicks() } });
  const probeDone = new Promise<void>((resolve) => probe.on('message', (m: Sample | 'done') => (m === 'done' ? resolve() : samples.push(m))));
  const results: PhaseResult[] = [];
  // The probes answered after `from` whose request was sent before `to`.
  const inWindow = (from: number, to: number): Sample[] => samples.filter((s) => s.at >= from && s.at - s.ms <= to);
  const probeWindow = (from: number, to: number): number[] => inWindow(from, to).map((s) => s.ms);
  const cpuMax = (from: number, to: number): number => {
    const cpu = inWindow(from, to).map((s) => s.cpu).filter(Number.isFinite);
    return cpu.length ? Math.max(...cpu) : NaN;
  };
  const summarize = (phase: string, from: number, to: number, requests: PhaseResult['requests']): PhaseResult => {
    const ms = probeWindow(from, to);
    const max = ms.length ? Math.max(...ms) : NaN;
    const r = { phase, requests, probes: ms.length, p50: round(median(ms)), p99: round(percentile(ms, 99)), max: round(max), cpu_max: round(cpuMax(from, to)), pass: max <= TARGET_MS && ms.length > 0 };
    console.log(JSON.stringify(r));
    return r;
  };
  try {
    const t0 = Date.now();
    await new Promise((r) => setTimeout(r, args.baseline * 1000));
    results.push(summarize('baseline', t0, Date.now(), []));
    const ctx: { datasetId?: string } = {};
    for (const phase of args.phases) {
      const from = Date.now();
      const requests: PhaseResult['requests'] = [];
      // Built one at a time: a later request can use an earlier answer (the dataset's id). The probe runs in
      // its own thread, so building a body here does not delay it.
      for (const { label, make } of phaseSteps(phase, ctx, args)) {
        const req = make();
        const sent = Date.now();
        const a = await send(svc.url, apiKey, req.method, req.path, req.body, req.contentType ?? 'application/json', args.timeout * 1000);
        if ((label.startsWith('dataset pattern') || label.startsWith('dataset for')) && a.status === 200) ctx.datasetId = (JSON.parse(a.body) as { id?: string }).id;
        // Work done after the answer (the writer's) counts towards the request that caused it.
        await new Promise((r) => setTimeout(r, args.settle * 1000));
        const ok = probeWindow(sent, Date.now());
        requests.push({ label, status: a.status, ms: round(a.ms), bytes: a.bytes, ok_max: round(ok.length ? Math.max(...ok) : NaN), ok_cpu_max: round(cpuMax(sent, Date.now())), ...(a.status >= 400 || a.status === 0 ? { body: a.body.slice(0, 160) } : {}) });
      }
      results.push(summarize(phase, from, Date.now(), requests));
    }
  } finally {
    probe.postMessage('stop');
    await Promise.race([probeDone, new Promise((r) => setTimeout(r, 10_000))]);
    await probe.terminate();
    await svc.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log('\n| phase | request | status | answer ms | /ok max during it | most service main-thread CPU ms in one /ok | phase /ok p50 | p99 | max | ≤ 100 ms |\n|---|---|---|---|---|---|---|---|---|---|');
  for (const r of results) {
    const rows: PhaseResult['requests'] = r.requests.length ? r.requests : [{ label: '(quiet)', status: 0, ms: 0, bytes: 0 }];
    rows.forEach((q, i) =>
      console.log(`| ${i === 0 ? r.phase : ''} | ${q.label} | ${q.status || ''} | ${q.ms || ''} | ${q.ok_max ?? ''} | ${q.ok_cpu_max ?? ''} | ${i === 0 ? r.p50 : ''} | ${i === 0 ? r.p99 : ''} | ${i === 0 ? r.max : ''} | ${i === 0 ? (r.pass ? 'pass' : 'FAIL') : ''} |`),
    );
  }
  const failed = results.filter((r) => !r.pass).map((r) => r.phase);
  console.log(`\n${JSON.stringify({ target_ms: TARGET_MS, pass: failed.length === 0, failed })}`);
  process.exitCode = failed.length === 0 ? 0 : 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
