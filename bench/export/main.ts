/**
 * Export benchmark: bulk export of N runs (default 1,000,000) from ClickHouse to an S3-compatible
 * bucket as Parquet by the export worker's own runner (key-only planning queries, one a day, then one
 * `SELECT ... FORMAT Parquet` out of `runs FINAL` per file, streamed with multipart uploads to s3proxy
 * on 127.0.0.1), against the ceiling: ClickHouse writing the same rows (same columns, same FINAL read,
 * same order) as Parquet itself with its default settings, to one local file, in the same run.
 *
 *   npm run build && node scripts/run.js bench/export/main.js [--runs 1000000] [--repeat 3] [--form standalone|cluster]
 *       [--rows-per-file 250000] [--row-group 100000] [--fields all|light] [--compression GZIP|SNAPPY|UNCOMPRESSED|BROTLI]
 *
 * `--form standalone` (default): the engine runs in this process (chDB, as in standalone), so peak RSS
 * includes it. `--form cluster`: the engine is ClickHouse's HTTP interface in its own process
 * (tools/ch-server, as in the cluster), the runner reads each file as a streamed HTTP response, and the
 * ceiling is that server writing the same rows to a local file; peak RSS is then the runner's alone.
 * `heap_peak_mb` is the JS heap alone. One JSON line per round, then the medians.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouse, migrateClickHouse } from '@th/clickhouse';
import { EXPORT_FIELDS, type ExportField, type Identity } from '@th/contracts';
import { openServiceDataSource } from '@th/database';
import { CredentialsCipher, EXPORT_DEFAULTS, EXPORTS_MIGRATIONS, EXPORTS_SCHEMA, ExportRunner, ExportsRepository, type ParquetCompression } from '@th/export-worker';
import { OutboundPolicy } from '@th/platform';
import { createTestDatabase, startClickHouseServerProcess, startS3Server } from '@th/testing';
import { median, round } from '../lib/stats';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

const RUNS = Number(arg('runs', '1000000'));
const REPEAT = Number(arg('repeat', '3'));
const FORM = arg('form', 'standalone');
if (FORM !== 'standalone' && FORM !== 'cluster') throw new Error(`--form must be standalone or cluster, not ${FORM}`);
const ROWS_PER_FILE = Number(arg('rows-per-file', '250000'));
const ROW_GROUP = Number(arg('row-group', String(EXPORT_DEFAULTS.rowGroupRows)));
const COMPRESSION = arg('compression', EXPORT_DEFAULTS.compression) as ParquetCompression;
const FIELDS: ExportField[] = arg('fields', 'all') === 'light' ? ['id', 'trace_id', 'name', 'run_type', 'start_time', 'end_time', 'status', 'total_tokens'] : [...EXPORT_FIELDS];
const BUCKET = 'bench-exports';
const DAY_US = 86_400_000_000n;
const T0_US = 1_763_164_800_000_000n; // 2025-11-15T00:00:00Z; the runs span 3 days

/** Samples RSS and heap while `fn` runs; returns the peaks over the baseline taken just before. */
async function withPeakMemory<T>(fn: () => Promise<T>): Promise<{ result: T; rssPeakMb: number; rssBaseMb: number; heapPeakMb: number }> {
  const mb = (b: number) => b / 1024 / 1024;
  const base = process.memoryUsage();
  let rss = base.rss;
  let heap = base.heapUsed;
  const timer = setInterval(() => {
    const m = process.memoryUsage();
    rss = Math.max(rss, m.rss);
    heap = Math.max(heap, m.heapUsed);
  }, 20);
  try {
    const result = await fn();
    return { result, rssPeakMb: round(mb(rss)), rssBaseMb: round(mb(base.rss)), heapPeakMb: round(mb(heap)) };
  } finally {
    clearInterval(timer);
  }
}

async function main(): Promise<void> {
  const s3 = await startS3Server();
  s3.createBucket(BUCKET);
  const pg = await createTestDatabase('th_bench_export');
  const ds = await openServiceDataSource({ url: pg.url, schema: EXPORTS_SCHEMA, entities: [], migrations: EXPORTS_MIGRATIONS });
  const repo = new ExportsRepository(ds);
  const chDir = mkdtempSync(join(tmpdir(), 'th-bench-export-ch-'));
  const outDir = mkdtempSync(join(tmpdir(), 'th-bench-export-out-'));
  const chServer = FORM === 'cluster' ? await startClickHouseServerProcess(join(chDir, 'engine')) : null;
  const ch = chServer
    ? ClickHouse.connect({ kind: 'http', url: chServer.url, user: 'default', password: '', database: 'default' })
    : ClickHouse.connect({ kind: 'embedded', path: chDir });
  const cipher = new CredentialsCipher('bench-export-key-0123456789');
  const tenant = randomUUID();
  const session = randomUUID();
  const identity: Identity = { organization_id: randomUUID(), tenant_id: tenant, user_id: null, credential_id: null, credential_type: 'api_key', plan: 'enterprise', permissions: [] };
  try {
    await migrateClickHouse(ch);
    const seedStart = Date.now();
    // Runs shaped like real traces: ~1 KB of inputs/outputs/extra JSON, tags, tokens on llm runs; 10% have a second version.
    const cols = `toUUID({tenant:String}) AS tenant_id, toUUID({session:String}) AS session_id,
      reinterpretAsUUID(reverse(unhex(lpad(hex(number + 1), 32, '0')))) AS id,
      reinterpretAsUUID(reverse(unhex(lpad(hex(intDiv(number, 5) + 1), 32, '0')))) AS trace_id,
      if(number % 5 = 0, NULL, trace_id) AS parent_run_id, if(number % 5 = 0, [], [trace_id]) AS parent_run_ids,
      concat(['ChatOpenAI', 'retriever', 'agent', 'tool:search', 'parser'][number % 5 + 1], '-', toString(number % 97)) AS name,
      ['chain', 'llm', 'retriever', 'tool', 'prompt'][number % 5 + 1] AS run_type,
      fromUnixTimestamp64Micro(toInt64({t0:String}) + toInt64(number) * intDiv(toInt64({span:String}), {n:UInt64}), 'UTC') AS start_time,
      start_time + toIntervalMillisecond(50 + number % 2000) AS end_time,
      if(number % 17 = 0, 'error', 'success') AS status, number % 5 = 0 AS is_root,
      concat(formatDateTime(start_time, '%Y%m%dT%H%i%S'), 'Z', toString(trace_id)) AS dotted_order,
      concat('{"messages":[{"role":"user","content":"', repeat('question text ', 20), toString(number), '"}],"temperature":0.2}') AS inputs,
      concat('{"generations":[{"text":"', repeat('answer text ', 25), '"}],"llm_output":{"model":"gpt-x"}}') AS outputs,
      if(number % 17 = 0, 'ValueError: something failed', NULL) AS error,
      '{"metadata":{"user":"u1","ls_provider":"openai","ls_model_name":"gpt-x"},"runtime":{"sdk":"langsmith-js"}}' AS extra,
      '[]' AS events, ['bench', concat('t', toString(number % 7))] AS tags,
      if(run_type = 'llm', 150 + number % 100, 0) AS total_tokens, if(run_type = 'llm', 100, 0) AS prompt_tokens,
      if(run_type = 'llm', 50 + number % 100, 0) AS completion_tokens,
      if(run_type = 'llm', 0.0021, NULL) AS total_cost, if(run_type = 'llm', 0.001, NULL) AS prompt_cost, if(run_type = 'llm', 0.0011, NULL) AS completion_cost`;
    const insert = `INSERT INTO runs (tenant_id, session_id, id, trace_id, parent_run_id, parent_run_ids, name, run_type, start_time, end_time, status, is_root,
        dotted_order, inputs, outputs, error, extra, events, tags, total_tokens, prompt_tokens, completion_tokens, total_cost, prompt_cost, completion_cost, version, is_deleted)`;
    const params = { tenant, session, t0: T0_US.toString(), span: (3n * DAY_US).toString(), n: RUNS };
    await ch.command(`${insert} SELECT ${cols}, 1, 0 FROM numbers({n:UInt64})`, params);
    await ch.command(`${insert} SELECT ${cols}, 2, 0 FROM numbers({n:UInt64}) WHERE number % 10 = 3`, params);
    process.stderr.write(`seeded ${RUNS} runs (+10% second versions) in ${((Date.now() - seedStart) / 1000).toFixed(1)} s\n`);
    const dest = await repo.insertDestination({
      id: randomUUID(),
      tenant_id: tenant,
      destination_type: 'objstore',
      display_name: 'bench',
      bucket_name: BUCKET,
      prefix: 'bench',
      region: 'us-east-1',
      endpoint_url: s3.endpoint,
      credentials_enc: cipher.encrypt({ access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey }),
      credentials_keys: ['access_key_id', 'secret_access_key'],
    });
    const runner = new ExportRunner(ch, repo, cipher, {
      rowsPerFile: ROWS_PER_FILE,
      rowGroupRows: ROW_GROUP,
      rowGroupBytes: EXPORT_DEFAULTS.rowGroupBytes,
      leaseMs: 600_000, compression: COMPRESSION, outbound: new OutboundPolicy('127.0.0.1') });
    const endUs = T0_US + 3n * DAY_US;

    const ceiling = async (round_: number) => {
      const file = join(outDir, `ceiling-${round_}.parquet`);
      const t = Date.now();
      // The same values as the worker writes: UUIDs as text, timestamps as Parquet timestamps, JSON as text, lists as lists.
      const uuids = new Set<string>(['id', 'tenant_id', 'session_id', 'trace_id', 'parent_run_id', 'reference_example_id']);
      const select = FIELDS.map((f) => (f === 'parent_run_ids' ? `arrayMap(x -> toString(x), ${f}) AS c_${f}` : uuids.has(f) ? `toString(${f}) AS c_${f}` : `${f} AS c_${f}`)).join(', ');
      await ch.command(
        `INSERT INTO FUNCTION file({file:String}, Parquet) SELECT ${select} FROM (
           SELECT * FROM runs FINAL WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID}
             AND start_time >= fromUnixTimestamp64Micro({start:Int64}, 'UTC') AND start_time < fromUnixTimestamp64Micro({end:Int64}, 'UTC'))
         WHERE is_deleted = 0 ORDER BY start_time, id`,
        { file, tenant, session, start: T0_US.toString(), end: endUs.toString() },
      );
      const seconds = (Date.now() - t) / 1000;
      const bytes = statSync(file).size;
      rmSync(file);
      return { seconds, bytes };
    };

    const worker = async () => {
      const job = await repo.insertJob({
        tenant_id: tenant,
        organization_id: identity.organization_id,
        destination_id: dest.id,
        session_id: session,
        start_time: '2025-11-15T00:00:00.000000Z',
        end_time: '2025-11-18T00:00:00.000000Z',
        start_us: T0_US.toString(),
        end_us: endUs.toString(),
        interval_hours: null,
        filter: null,
        export_fields: FIELDS,
        format_version: 'v2_beta',
        identity,
      });
      if (!job) throw new Error('job not stored');
      const claimed = await repo.claim(job.id, 'bench', 600_000);
      if (!claimed) throw new Error('job not claimed');
      const t = Date.now();
      const mem = await withPeakMemory(() => runner.run(claimed, 'bench', new AbortController().signal));
      const seconds = (Date.now() - t) / 1000;
      await repo.finish(job.id, 'bench', 'COMPLETED', null);
      const done = await repo.findJob({ tenant_id: tenant }, job.id);
      const files = await repo.files(job.id);
      return { seconds, rows: Number(done?.rows_written), files: files.length, bytes: files.reduce((n, f) => n + Number(f.bytes), 0), ...mem };
    };

    const rounds: Record<string, number>[] = [];
    for (let r = 0; r < REPEAT; r++) {
      // Alternate the order so neither side always runs on a warmer cache.
      const first = r % 2 === 0 ? 'ceiling' : 'worker';
      const c = first === 'ceiling' ? await ceiling(r) : undefined;
      const w = await worker();
      const c2 = c ?? (await ceiling(r));
      const line = {
        round: r + 1,
        rows: w.rows,
        fields: FIELDS.length,
        worker_seconds: round(w.seconds, 2),
        worker_rows_per_s: Math.round(w.rows / w.seconds),
        worker_files: w.files,
        worker_mb: round(w.bytes / 1024 / 1024),
        rss_base_mb: w.rssBaseMb,
        rss_peak_mb: w.rssPeakMb,
        heap_peak_mb: w.heapPeakMb,
        ceiling_seconds: round(c2.seconds, 2),
        ceiling_rows_per_s: Math.round(w.rows / c2.seconds),
        ceiling_mb: round(c2.bytes / 1024 / 1024),
        ratio: round(c2.seconds / w.seconds, 3),
      };
      rounds.push(line);
      process.stdout.write(JSON.stringify(line) + '\n');
    }
    const med = (k: string) => median(rounds.map((x) => x[k]));
    process.stdout.write(
      JSON.stringify({
        summary: 'median',
        form: FORM,
        fields: arg('fields', 'all'),
        runs: RUNS,
        rows: med('rows'),
        worker_rows_per_s: med('worker_rows_per_s'),
        ceiling_rows_per_s: med('ceiling_rows_per_s'),
        worker_to_ceiling: round(med('worker_rows_per_s') / med('ceiling_rows_per_s'), 3),
        // The median of each round's own ratio (worker and ceiling measured back to back): steadier than the
        // ratio of the medians when the machine's speed swings between rounds.
        round_ratio_median: med('ratio'),
        rss_peak_mb: med('rss_peak_mb'),
        heap_peak_mb: med('heap_peak_mb'),
        rows_per_file: ROWS_PER_FILE,
        row_group: ROW_GROUP,
        compression: COMPRESSION,
      }) + '\n',
    );
  } finally {
    await ch.close();
    await chServer?.stop();
    await ds.destroy();
    await pg.drop();
    await s3.stop();
    rmSync(chDir, { recursive: true, force: true });
    rmSync(outDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
