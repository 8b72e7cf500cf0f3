/**
 * Seeder of the query benchmark, run by bench/query/main.js as its own process while the service
 * is stopped: chDB binds one data directory per process, and a separate process guarantees the
 * engine (and its background merges) is gone before the service opens the directory again.
 *
 *   node scripts/run.js bench/query/seed.js <bench dir>     (reads and updates <bench dir>/manifest.json)
 */
import { join } from 'node:path';
import { ClickHouse } from '@th/clickhouse';
import { RUN_ROW_COLUMNS, RUN_ROW_INSERT_SETTINGS } from '@th/ingest';
import { Dataset } from './dataset';
import { readManifest, writeManifest, type SeedResult } from './manifest';

const log = (msg: string) => process.stderr.write(`[seed] ${msg}\n`);

async function main(): Promise<void> {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: seed.js <bench dir>');
  const m = readManifest(dir);
  if (!m) throw new Error(`no manifest in ${dir}`);
  const ch = ClickHouse.connect({ kind: 'embedded', path: join(dir, 'data', 'clickhouse') });
  try {
    const before = await ch.query<{ n: number | string }>('SELECT count() AS n FROM runs');
    if (Number(before[0]?.n ?? 0) !== 0) throw new Error(`runs table already holds ${String(before[0]?.n)} rows; use a fresh --data-dir`);

    const ds = new Dataset({
      tenantId: m.tenantId,
      projectIds: m.projects.map((p) => p.id),
      weights: m.projects.map((p) => p.weight),
      runs: m.runs,
      seed: m.seed,
      windowStartMs: m.windowStartMs,
      windowEndMs: m.windowEndMs,
    });
    const t0 = performance.now();
    let buildMs = 0;
    let waitMs = 0;
    let bytes = 0;
    let inserts = 0;
    let pending: Promise<void> | null = null;
    let lastLog = 0;
    // Build chunk k+1 in JS while the engine parses and writes chunk k on its own threads.
    for (;;) {
      const b0 = performance.now();
      const chunk = ds.nextChunk(m.chunkRows);
      buildMs += performance.now() - b0;
      const w0 = performance.now();
      if (pending) await pending;
      waitMs += performance.now() - w0;
      if (!chunk) break;
      bytes += chunk.body.length;
      inserts++;
      const c = chunk;
      pending = ch.insertJsonCompactEachRow('runs', RUN_ROW_COLUMNS, c.body, RUN_ROW_INSERT_SETTINGS);
      if (ds.stats.runs - lastLog >= 500_000 || ds.done) {
        lastLog = ds.stats.runs;
        const s = (performance.now() - t0) / 1000;
        log(`${ds.stats.runs}/${m.runs} runs, ${Math.round(bytes / 1e6)} MB, ${s.toFixed(1)} s, ${Math.round(ds.stats.runs / s)} runs/s`);
      }
    }
    const seconds = (performance.now() - t0) / 1000;

    const after = await ch.query<{ n: number | string }>('SELECT count() AS n FROM runs');
    const stored = Number(after[0]?.n ?? 0);
    if (stored !== ds.stats.runs) throw new Error(`inserted ${ds.stats.runs} runs, table holds ${stored}`);

    // Let background merges settle a little (no OPTIMIZE FINAL: a live table is not fully merged).
    const s0 = performance.now();
    const settleMs = m.settleSeconds * 1000;
    let merging = 0;
    for (;;) {
      const r = await ch.query<{ n: number | string }>("SELECT count() AS n FROM system.merges WHERE table = 'runs'");
      merging = Number(r[0]?.n ?? 0);
      if (merging === 0 || performance.now() - s0 > settleMs) break;
      await new Promise((res) => setTimeout(res, 1000));
    }
    const parts = await ch.query<{ partition: string; parts: number | string; rows: number | string; bytes: number | string; raw: number | string }>(
      `SELECT partition, count() AS parts, sum(rows) AS rows, sum(bytes_on_disk) AS bytes, sum(data_uncompressed_bytes) AS raw
       FROM system.parts WHERE table = 'runs' AND active AND database = currentDatabase() GROUP BY partition ORDER BY partition`,
    );

    const result: SeedResult = {
      runs: ds.stats.runs,
      traces: ds.stats.traces,
      error_runs: ds.stats.errors,
      error_roots: ds.stats.rootErrors,
      seconds: Math.round(seconds * 10) / 10,
      runs_per_s: Math.round(ds.stats.runs / seconds),
      build_s: Math.round(buildMs / 100) / 10,
      insert_wait_s: Math.round(waitMs / 100) / 10,
      json_mb: Math.round(bytes / 1e6),
      json_bytes_per_run: Math.round(bytes / ds.stats.runs),
      inserts,
      settle_s: Math.round((performance.now() - s0) / 100) / 10,
      merges_running_at_end: merging,
      parts: parts.map((p) => ({ partition: p.partition, parts: Number(p.parts), rows: Number(p.rows), mb_on_disk: Math.round(Number(p.bytes) / 1e6), mb_uncompressed: Math.round(Number(p.raw) / 1e6) })),
      per_project: ds.stats.perProject,
      roots_per_project: ds.stats.rootsPerProject,
      sample_roots: ds.sampleRoots,
      sample_children: ds.sampleChildren,
    };
    writeManifest(dir, { ...m, seeded: result });
    log(`done: ${ds.stats.runs} runs in ${result.seconds} s (${result.runs_per_s} runs/s), ${parts.reduce((s, p) => s + Number(p.parts), 0)} active parts`);
  } finally {
    await ch.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
