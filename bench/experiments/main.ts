/**
 * Experiments benchmark: POST /datasets/upload-experiment with N rows (default 10,000), then
 *  - upload_ack_ms: until the upload's 2xx (dataset, N examples, the project, N runs and N feedback written);
 *  - stats_complete_ms: from the request until GET /sessions/{id}?include_stats=true shows run_count = N
 *    and feedback_stats over N scores (polled every 50 ms);
 *  - examples_per_s: GET /examples?dataset=<id> paged as the SDK pages (limit 100, offset paging), all N;
 *    also with limit 1000.
 * In the same round, for comparison:
 *  - the peer: the same experiment built the way the SDK's evaluate() writes it: POST /examples/bulk,
 *    POST /sessions, then runs and feedback as /runs/multipart parts (1,000 runs per request), until its
 *    statistics are complete (peer_complete_ms); ratio = stats_complete_ms / peer_complete_ms;
 *  - the ceiling for listing: the same pages read straight from PostgreSQL with the service's query shape
 *    (ceiling_examples_per_s); ratio = examples_per_s / ceiling_examples_per_s.
 * R rounds (default 3), one JSON line each, then the medians.
 *
 *   npm run build && node scripts/run.js bench/experiments/main.js [--rows 10000] [--repeat 3]
 *
 * The service is the standalone app as its own process, on a fresh database of the machine's
 * PostgreSQL (so the ceiling can read the same tables) and its own chDB directory.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as PgClient } from 'pg';
import { createTestDatabase, multipartBody, startAppProcess, type AppProcess } from '@th/testing';
import { median, round } from '../lib/stats';

interface Args {
  rows: number;
  repeat: number;
  timeoutSeconds: number;
}

function parseArgs(): Args {
  const a = process.argv.slice(2);
  const num = (k: string, d: number) => {
    const i = a.indexOf(`--${k}`);
    const v = i >= 0 ? Number(a[i + 1]) : d;
    if (!Number.isFinite(v) || v < 1) throw new Error(`--${k} must be a number >= 1`);
    return Math.floor(v);
  };
  return { rows: num('rows', 10_000), repeat: num('repeat', 3), timeoutSeconds: num('timeout', 600) };
}

const log = (msg: string) => process.stderr.write(`[experiments-bench] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
type Json = Record<string, unknown>;

const START = Date.parse('2026-11-22T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** One row of about 0.6 KB: a question with some context, an answer, one score. */
function rowAt(i: number): Json {
  const context = `context ${i} `.repeat(20);
  return {
    row_id: randomUUID(),
    inputs: { question: `What is item ${i}?`, context },
    expected_outputs: { answer: `item ${i}` },
    actual_outputs: { answer: i % 3 === 0 ? 'unsure' : `item ${i}` },
    evaluation_scores: [{ key: 'correctness', score: i % 3 === 0 ? 0 : 1 }],
    start_time: iso(START + i * 10),
    end_time: iso(START + i * 10 + 200 + (i % 50) * 10),
    run_name: 'target',
  };
}

class Api {
  constructor(
    private readonly url: string,
    private readonly key: string,
  ) {}
  async call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<unknown> {
    const res = await fetch(`${this.url}${path}`, {
      method,
      headers: { 'x-api-key': this.key, ...(body !== undefined && !Buffer.isBuffer(body) ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 500)}`);
    return text ? JSON.parse(text) : null;
  }
}

/** Polls the experiment until its statistics cover `n` runs and `n` correctness scores. */
async function untilComplete(api: Api, sessionId: string, n: number, deadline: number): Promise<void> {
  for (;;) {
    const e = (await api.call('GET', `/api/v1/sessions/${sessionId}?include_stats=true`)) as Json;
    const fb = (e.feedback_stats as Record<string, { n: number }> | null)?.correctness;
    if (e.run_count === n && fb?.n === n) return;
    if (Date.now() > deadline) throw new Error(`statistics incomplete after the timeout: run_count ${String(e.run_count)}, scores ${fb?.n ?? 0}`);
    await sleep(50);
  }
}

async function listAll(api: Api, datasetId: string, n: number, limit: number): Promise<number> {
  const t0 = performance.now();
  let seen = 0;
  for (let offset = 0; offset < n + limit; offset += limit) {
    const page = (await api.call('GET', `/api/v1/examples?dataset=${datasetId}&offset=${offset}&limit=${limit}`)) as Json[];
    seen += page.length;
    if (page.length < limit) break;
  }
  if (seen !== n) throw new Error(`listed ${seen} examples, expected ${n}`);
  return n / ((performance.now() - t0) / 1000);
}

/** The same pages straight from PostgreSQL: the service's list query without HTTP, auth or JSON shaping. */
async function listCeiling(pg: PgClient, datasetId: string, n: number, limit: number): Promise<number> {
  const t0 = performance.now();
  let seen = 0;
  for (let offset = 0; offset < n + limit; offset += limit) {
    const r = await pg.query(
      `SELECT e.id, e.dataset_id, e.tenant_id, e.inputs, e.outputs, e.metadata, e.splits, e.source_run_id, e.created_at, e.modified_at
       FROM "datasets"."examples" e WHERE e.dataset_id = $1 AND e.valid_to IS NULL ORDER BY e.created_at ASC, e.id ASC OFFSET $2 LIMIT $3`,
      [datasetId, offset, limit],
    );
    seen += r.rows.length;
    if (r.rows.length < limit) break;
  }
  if (seen !== n) throw new Error(`ceiling read ${seen} examples, expected ${n}`);
  return n / ((performance.now() - t0) / 1000);
}

/** The SDK's way to the same experiment: examples in bulk, a project, runs and feedback as multipart parts. */
async function peer(api: Api, rows: Json[], deadline: number): Promise<number> {
  const t0 = performance.now();
  const ds = (await api.call('POST', '/api/v1/datasets', { name: `peer-${randomUUID().slice(0, 8)}` })) as Json;
  for (let i = 0; i < rows.length; i += 1000) {
    await api.call(
      'POST',
      '/api/v1/examples/bulk',
      rows.slice(i, i + 1000).map((r) => ({ id: r.row_id, dataset_id: ds.id, inputs: r.inputs, outputs: r.expected_outputs })),
    );
  }
  const session = (await api.call('POST', '/api/v1/sessions', { name: `peer-exp-${randomUUID().slice(0, 8)}`, reference_dataset_id: ds.id })) as Json;
  for (let i = 0; i < rows.length; i += 1000) {
    const parts = rows.slice(i, i + 1000).flatMap((r) => {
      const id = randomUUID();
      const start = String(r.start_time);
      return [
        {
          name: `post.${id}`,
          data: {
            id, trace_id: id, name: 'target', run_type: 'chain', start_time: start, end_time: r.end_time, session_id: session.id, reference_example_id: r.row_id,
            dotted_order: `${start.replace(/[-:.]/g, '').replace('Z', '')}001Z${id}`, inputs: r.inputs, outputs: r.actual_outputs,
          },
        },
        { name: `feedback.${randomUUID()}`, data: { run_id: id, trace_id: id, session_id: session.id, key: 'correctness', score: (r.evaluation_scores as Json[])[0].score } },
      ];
    });
    const { body, contentType } = multipartBody(parts);
    await api.call('POST', '/api/v1/runs/multipart', body, { 'content-type': contentType });
  }
  await untilComplete(api, String(session.id), rows.length, deadline);
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const args = parseArgs();
  const db = await createTestDatabase('th_bench_experiments');
  const dir = mkdtempSync(join(tmpdir(), 'th-bench-experiments-'));
  const apiKey = `th_bench_${randomBytes(12).toString('hex')}`;
  const nodeArgs = process.env.TH_CHILD_NODE_ARGS ?? '';
  // A distinct process title, so that stopping some other standalone by name spares this one.
  if (!nodeArgs.includes('--title')) process.env.TH_CHILD_NODE_ARGS = `${nodeArgs} --title=th-experiments-bench-standalone`.trim();
  let svc: AppProcess | null = null;
  const pg = new PgClient({ connectionString: db.url });
  await pg.connect();
  const rounds: Json[] = [];
  try {
    svc = await startAppProcess('standalone', { DATA_DIR: join(dir, 'data'), DATABASE_URL: db.url, BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false' }, { timeoutMs: 300_000 });
    const api = new Api(svc.url, apiKey);
    // Warm-up: a small upload (first inserts of a process are slower), not measured.
    await api.call('POST', '/api/v1/datasets/upload-experiment', {
      experiment_name: `warm-${randomUUID().slice(0, 8)}`, experiment_start_time: iso(START), experiment_end_time: iso(START + 86_400_000),
      dataset_name: `warm-${randomUUID().slice(0, 8)}`, results: Array.from({ length: 200 }, (_, i) => rowAt(i)),
    });
    for (let round_ = 1; round_ <= args.repeat; round_++) {
      const rows = Array.from({ length: args.rows }, (_, i) => rowAt(i));
      const body = {
        experiment_name: `bench-${round_}-${randomUUID().slice(0, 8)}`,
        experiment_start_time: iso(START),
        experiment_end_time: iso(START + 86_400_000),
        dataset_name: `bench-ds-${round_}-${randomUUID().slice(0, 8)}`,
        summary_experiment_scores: [{ key: 'accuracy', score: 2 / 3 }],
        results: rows,
      };
      const deadline = Date.now() + args.timeoutSeconds * 1000;
      const t0 = performance.now();
      const out = (await api.call('POST', '/api/v1/datasets/upload-experiment', body)) as { experiment: Json; dataset: Json };
      const ack = performance.now() - t0;
      await untilComplete(api, String(out.experiment.id), args.rows, deadline);
      const complete = performance.now() - t0;
      const perS100 = await listAll(api, String(out.dataset.id), args.rows, 100);
      const ceil100 = await listCeiling(pg, String(out.dataset.id), args.rows, 100);
      const perS1000 = await listAll(api, String(out.dataset.id), args.rows, 1000);
      const ceil1000 = await listCeiling(pg, String(out.dataset.id), args.rows, 1000);
      const peerMs = await peer(api, rows.map((r) => ({ ...r, row_id: randomUUID() })), Date.now() + args.timeoutSeconds * 1000);
      const r = {
        round: round_,
        rows: args.rows,
        upload_ack_ms: round(ack),
        stats_complete_ms: round(complete),
        peer_complete_ms: round(peerMs),
        complete_vs_peer: round(complete / peerMs, 2),
        examples_per_s_page100: round(perS100),
        ceiling_examples_per_s_page100: round(ceil100),
        page100_vs_ceiling: round(perS100 / ceil100, 2),
        examples_per_s_page1000: round(perS1000),
        ceiling_examples_per_s_page1000: round(ceil1000),
        page1000_vs_ceiling: round(perS1000 / ceil1000, 2),
      };
      rounds.push(r);
      process.stdout.write(JSON.stringify(r) + '\n');
    }
    const keys = Object.keys(rounds[0]).filter((k) => k !== 'round' && k !== 'rows');
    const summary: Json = { summary: 'median', rounds: rounds.length, rows: args.rows };
    for (const k of keys) summary[k] = round(median(rounds.map((r) => r[k] as number)), 2);
    process.stdout.write(JSON.stringify(summary) + '\n');
  } finally {
    await pg.end();
    if (svc) await svc.stop();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
