import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ParquetReader, ParquetWriter } from '@dsnp/parquetjs';
import type { DataSource } from 'typeorm';
import { ClickHouse, migrateClickHouse } from '@th/clickhouse';
import { RUN_FIELDS, type ExportField, type Identity } from '@th/contracts';
import { OutboundPolicy } from '@th/platform';
import { openServiceDataSource } from '@th/database';
import { createTestDatabase, startClickHouseServerProcess, startS3Server, type ClickHouseServerProcess, type S3Server } from '@th/testing';
import { EXPORTS_SCHEMA } from '../export-worker.options';
import { ExportsRepository, type JobRow } from '../exports.repository';
import { Exports1732260000000 } from '../migrations/1732260000000-exports';
import { CredentialsCipher } from '../storage/credentials-cipher';
import { exportFieldsOf, parquetSchemaFor } from '../writer/run-parquet';
import { ExportInterrupted, ExportRunner, type ExportRunnerOptions } from './export-runner';

const BUCKET = 'resume-bucket';
const DAY_US = 86_400_000_000n;
const T0_US = 1_763_164_800_000_000n; // 2025-11-15T00:00:00Z

/**
 * The worker role against the real parts: PostgreSQL (jobs and leases), ClickHouse (runs), s3proxy (the
 * bucket), with the engine in process (standalone: chDB writes each file beside its directory) and over
 * HTTP (cluster: the ClickHouse HTTP interface in its own process, tools/ch-server, which needs `npm run
 * build`; the file is the response body). Crashes are simulated at the two points that matter: between
 * files, and after a file is uploaded but before it is committed.
 */
describe.each([['in process'], ['over HTTP']] as const)('export runner, ClickHouse %s: resumption, leases and exactly-once output', (form) => {
  let s3: S3Server;
  let chServer: ClickHouseServerProcess | null = null;
  let pgDb: { url: string; drop(): Promise<void> };
  let ds: DataSource;
  let ch: ClickHouse;
  let chDir: string;
  let repo: ExportsRepository;
  const cipher = new CredentialsCipher('test-export-key-0123456789');
  const tenant = randomUUID();
  const session = randomUUID();
  const identity: Identity = {
    organization_id: randomUUID(),
    tenant_id: tenant,
    user_id: null,
    credential_id: null,
    credential_type: 'api_key',
    plan: 'enterprise',
    permissions: [],
  };
  let destinationId: string;
  const N = 1200;

  beforeAll(async () => {
    s3 = await startS3Server();
    s3.createBucket(BUCKET);
    pgDb = await createTestDatabase();
    ds = await openServiceDataSource({ url: pgDb.url, schema: EXPORTS_SCHEMA, entities: [], migrations: [Exports1732260000000] });
    repo = new ExportsRepository(ds);
    chDir = mkdtempSync(join(tmpdir(), 'th-export-ch-'));
    if (form === 'over HTTP') {
      chServer = await startClickHouseServerProcess(join(chDir, 'engine'));
      ch = ClickHouse.connect({ kind: 'http', url: chServer.url, user: 'default', password: '', database: 'default' });
    } else {
      ch = ClickHouse.connect({ kind: 'embedded', path: chDir });
    }
    await migrateClickHouse(ch);
    // N runs over two days, each written as version 1; every 3rd run has a newer version 2 with other outputs;
    // every 10th run's newest version is a tombstone (deleted there): those must not be exported.
    const base = `toUUID({tenant:String}) AS tenant_id, toUUID({session:String}) AS session_id,
        reinterpretAsUUID(reverse(unhex(lpad(hex(number + 1), 32, '0')))) AS id, id AS trace_id,
        concat('run-', toString(number)) AS name, 'chain' AS run_type,
        fromUnixTimestamp64Micro(toInt64({t0:String}) + toInt64(number) * intDiv(toInt64({day:String}) * 2, {n:UInt32}), 'UTC') AS start_time,
        'success' AS status, true AS is_root, '' AS dotted_order, concat('{"i":', toString(number), '}') AS inputs, ['t'] AS tags`;
    await ch.command(
      `INSERT INTO runs (tenant_id, session_id, id, trace_id, name, run_type, start_time, status, is_root, dotted_order, inputs, tags, outputs, version, is_deleted)
       SELECT ${base}, '{"v":1}', 1, 0 FROM numbers({n:UInt32})`,
      { tenant, session, t0: T0_US.toString(), day: DAY_US.toString(), n: N },
    );
    await ch.command(
      `INSERT INTO runs (tenant_id, session_id, id, trace_id, name, run_type, start_time, status, is_root, dotted_order, inputs, tags, outputs, version, is_deleted)
       SELECT ${base}, '{"v":2}', 2, if(number % 10 = 0, 1, 0) FROM numbers({n:UInt32}) WHERE number % 3 = 0 OR number % 10 = 0`,
      { tenant, session, t0: T0_US.toString(), day: DAY_US.toString(), n: N },
    );
    const dest = await repo.insertDestination({
      id: randomUUID(),
      tenant_id: tenant,
      destination_type: 'objstore',
      display_name: 'resume',
      bucket_name: BUCKET,
      prefix: 'p',
      region: 'us-east-1',
      endpoint_url: s3.endpoint,
      credentials_enc: cipher.encrypt({ access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey }),
      credentials_keys: ['access_key_id', 'secret_access_key'],
    });
    destinationId = dest.id;
  });

  afterAll(async () => {
    await ch?.close();
    await chServer?.stop();
    await ds?.destroy();
    await pgDb?.drop();
    await s3?.stop();
    if (chDir) rmSync(chDir, { recursive: true, force: true });
  });

  const newJob = async (filter: string | null = null, fields: ExportField[] | null = ['name', 'start_time', 'outputs'], sessionId = session): Promise<JobRow> => {
    const job = await repo.insertJob({
      tenant_id: tenant,
      organization_id: identity.organization_id,
      destination_id: destinationId,
      session_id: sessionId,
      start_time: '2025-11-15T00:00:00.000000Z',
      end_time: '2025-11-17T00:00:00.000000Z',
      start_us: T0_US.toString(),
      end_us: (T0_US + 2n * DAY_US).toString(),
      interval_hours: null,
      filter,
      export_fields: fields,
      format_version: 'v2_beta',
      identity,
    });
    if (!job) throw new Error('job not stored');
    return job;
  };
  // The test S3 server listens on 127.0.0.1, which the outbound policy allows only when listed.
  const opts: ExportRunnerOptions = { rowsPerFile: 250, rowGroupRows: 64, rowGroupBytes: 1024 * 1024, leaseMs: 1_000, compression: 'SNAPPY', outbound: new OutboundPolicy('127.0.0.1') };
  const runner = (r: ExportsRepository = repo) => new ExportRunner(ch, r, cipher, opts);

  /** What the bucket holds for an export, read with ClickHouse's Parquet reader. */
  const exported = async (exportId: string) => {
    const keys = s3.listKeys(BUCKET, `p/export_id=${exportId}/`).filter((k) => k.endsWith('.parquet'));
    const rows: { id: string; outputs: string; name: string }[] = [];
    for (const k of keys) {
      rows.push(
        ...(await ch.query<{ id: string; outputs: string; name: string }>(`SELECT id, outputs, name FROM file({p:String}, Parquet) SETTINGS use_hive_partitioning = 0`, {
          p: s3.objectPath(BUCKET, k),
        })),
      );
    }
    return { keys, rows };
  };
  const expectExactlyTheNewestRows = (rows: { id: string; outputs: string; name: string }[]) => {
    const names = rows.map((r) => Number(r.name.slice(4))).sort((a, b) => a - b);
    const expected = Array.from({ length: N }, (_, i) => i).filter((i) => i % 10 !== 0);
    expect(names).toEqual(expected);
    for (const r of rows) {
      const i = Number(r.name.slice(4));
      expect([i, r.outputs]).toEqual([i, i % 3 === 0 ? '{"v":2}' : '{"v":1}']);
    }
  };

  it('exports the newest version of each live run exactly once, split by day and file size', async () => {
    const job = await newJob();
    const claimed = await repo.claim(job.id, 'w1', 60_000);
    expect(claimed?.status).toBe('RUNNING');
    await runner().run(claimed as JobRow, 'w1', new AbortController().signal);
    expect(await repo.finish(job.id, 'w1', 'COMPLETED', null)).toBe(true);
    const { keys, rows } = await exported(job.id);
    expectExactlyTheNewestRows(rows);
    const after = await repo.findJob({ tenant_id: tenant }, job.id);
    expect(Number(after?.rows_written)).toBe(rows.length);
    expect(after?.files_written).toBe(keys.length);
    // 1080 rows, 540 a day, at most 250 a file: 3 files per day.
    expect(keys.map((k) => k.replace(/^.*\/runs\//, ''))).toEqual([
      'year=2025/month=11/day=15/part-000001.parquet',
      'year=2025/month=11/day=15/part-000002.parquet',
      'year=2025/month=11/day=15/part-000003.parquet',
      'year=2025/month=11/day=16/part-000004.parquet',
      'year=2025/month=11/day=16/part-000005.parquet',
      'year=2025/month=11/day=16/part-000006.parquet',
    ]);
  });

  it('a worker that dies between files is replaced after its lease expires, and the output has no gap and no duplicate', async () => {
    const job = await newJob();
    const first = await repo.claim(job.id, 'dying', opts.leaseMs);
    const stop = new AbortController();
    // The first worker "dies" right after its second file is committed: it never finishes, releases or heartbeats again.
    class DyingRepository extends ExportsRepository {
      override async commitFile(...args: Parameters<ExportsRepository['commitFile']>): Promise<boolean> {
        const ok = await super.commitFile(...args);
        if (args[2].seq === 2) stop.abort();
        return ok;
      }
    }
    await expect(runner(new DyingRepository(ds)).run(first as JobRow, 'dying', stop.signal)).rejects.toBeInstanceOf(ExportInterrupted);
    const mid = await repo.findJob({ tenant_id: tenant }, job.id);
    expect(mid?.status).toBe('RUNNING');
    expect(mid?.files_written).toBe(2);
    // While the lease is live nobody else may take the job.
    expect(await repo.claim(job.id, 'second', opts.leaseMs)).toBeNull();
    await new Promise((r) => setTimeout(r, opts.leaseMs + 200));
    const resumed = await repo.claim(job.id, 'second', 60_000);
    expect(resumed?.attempts).toBe(2);
    expect(resumed?.cursor_id).not.toBeNull();
    await runner().run(resumed as JobRow, 'second', new AbortController().signal);
    expect(await repo.finish(job.id, 'second', 'COMPLETED', null)).toBe(true);
    // The dead worker can no longer write progress.
    expect(await repo.heartbeat(job.id, 'dying', 1000)).toBe(false);
    const { keys, rows } = await exported(job.id);
    expectExactlyTheNewestRows(rows);
    expect(keys).toHaveLength(6);
    const files = await repo.files(job.id);
    expect(files.map((f) => f.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(files.reduce((n, f) => n + f.rows, 0)).toBe(rows.length);
  });

  it('a file uploaded but not committed before a crash is rewritten under the same name, not duplicated', async () => {
    const job = await newJob();
    // The crash point: the 3rd file is in the bucket, then the process dies before PostgreSQL records it.
    class CrashingRepository extends ExportsRepository {
      override async commitFile(...args: Parameters<ExportsRepository['commitFile']>): Promise<boolean> {
        if (args[2].seq === 3) throw new Error('simulated crash after upload');
        return super.commitFile(...args);
      }
    }
    const claimed = await repo.claim(job.id, 'crashing', 1);
    await expect(runner(new CrashingRepository(ds)).run(claimed as JobRow, 'crashing', new AbortController().signal)).rejects.toThrow('simulated crash');
    const mid = await repo.findJob({ tenant_id: tenant }, job.id);
    expect(mid?.files_written).toBe(2);
    expect(s3.listKeys(BUCKET, `p/export_id=${job.id}/`).filter((k) => k.endsWith('.parquet'))).toHaveLength(3);
    await new Promise((r) => setTimeout(r, opts.leaseMs + 200));
    const resumed = await repo.claim(job.id, 'next', 60_000);
    expect(resumed).not.toBeNull();
    await runner().run(resumed as JobRow, 'next', new AbortController().signal);
    await repo.finish(job.id, 'next', 'COMPLETED', null);
    const { keys, rows } = await exported(job.id);
    expect(keys).toHaveLength(6);
    expectExactlyTheNewestRows(rows);
  });

  it('compiles the export filter into its chunk query and applies it to the newest version only', async () => {
    // Every 3rd run has outputs {"v":2} in its newest version and {"v":1} in its older one: the older must not match.
    const job = await newJob('like(outputs, "%\\"v\\":1%")');
    const claimed = await repo.claim(job.id, 'w-filter', 60_000);
    await runner().run(claimed as JobRow, 'w-filter', new AbortController().signal);
    expect(await repo.finish(job.id, 'w-filter', 'COMPLETED', null)).toBe(true);
    const { rows } = await exported(job.id);
    const names = rows.map((r) => Number(r.name.slice(4))).sort((a, b) => a - b);
    expect(names).toEqual(Array.from({ length: N }, (_, i) => i).filter((i) => i % 10 !== 0 && i % 3 !== 0));
    expect(new Set(rows.map((r) => r.outputs))).toEqual(new Set(['{"v":1}']));
    expect(Number((await repo.findJob({ tenant_id: tenant }, job.id))?.rows_written)).toBe(rows.length);
  });

  it('writes the published Parquet schema, and every field of every run as the parquetjs writer did (read back with parquetjs)', async () => {
    // A project of its own whose runs set every exported column, half of them with NULLs and empty values.
    const full = randomUUID();
    const M = 40;
    await ch.command(
      `INSERT INTO runs (tenant_id, session_id, id, trace_id, parent_run_id, parent_run_ids, reference_example_id, name, run_type, start_time, end_time, status,
         is_root, dotted_order, trace_tier, inputs, outputs, error, extra, events, tags, feedback_stats, total_tokens, prompt_tokens, completion_tokens,
         total_cost, prompt_cost, completion_cost, first_token_time, version, is_deleted)
       SELECT toUUID({tenant:String}), toUUID({session:String}), generateUUIDv4(number), generateUUIDv4(number + 1000),
         if(number % 2 = 0, NULL, generateUUIDv4(number + 2000)), if(number % 2 = 0, [], [generateUUIDv4(number + 3000), generateUUIDv4(number + 4000)]),
         if(number % 2 = 0, NULL, generateUUIDv4(number + 5000)), concat('név-', toString(number)), ['llm', 'chain'][number % 2 + 1],
         fromUnixTimestamp64Micro(toInt64({t0:String}) + toInt64(number) * 3600000123, 'UTC'),
         if(number % 2 = 0, NULL, fromUnixTimestamp64Micro(toInt64({t0:String}) + toInt64(number) * 3600000123 + 987654, 'UTC')),
         ['success', 'error'][number % 2 + 1], number % 3 = 0, concat('do-', toString(number)), if(number % 2 = 0, '', 'longlived'),
         if(number % 2 = 0, '', concat('{"q":"ünï ', toString(number), '"}')), '{"a":[1,2]}', if(number % 2 = 0, NULL, 'ValueError: x'),
         '{"metadata":{"k":"v"}}', if(number % 2 = 0, '', '[{"name":"start"}]'), if(number % 2 = 0, [], ['a', concat('t', toString(number))]),
         '', 9007199254740993 + number, number, 2 * number, if(number % 2 = 0, NULL, 0.25 * number), if(number % 2 = 0, NULL, 0.125), if(number % 2 = 0, NULL, 1e-9),
         if(number % 2 = 0, NULL, fromUnixTimestamp64Micro(toInt64({t0:String}) + toInt64(number) * 3600000123 + 5, 'UTC')), 1, 0
       FROM numbers({m:UInt32})`,
      { tenant, session: full, t0: T0_US.toString(), m: M },
    );
    const job = await newJob(null, null, full);
    const claimed = await repo.claim(job.id, 'w-types', 60_000);
    await runner().run(claimed as JobRow, 'w-types', new AbortController().signal);
    const keys = s3.listKeys(BUCKET, `p/export_id=${job.id}/`).filter((k) => k.endsWith('.parquet'));
    expect(keys.length).toBeGreaterThan(0);

    // Today's files: the stored newest versions, converted as the parquetjs writer did, written by parquetjs with the published schema.
    const fields = exportFieldsOf(null);
    const schema = parquetSchemaFor(fields);
    const asText = (f: ExportField) => (RUN_FIELDS[f].column.type.includes('UUID') || RUN_FIELDS[f].column.type.startsWith('LowCardinality') ? `toString(${f})` : f);
    const oldSql = (f: ExportField): string => {
      switch (RUN_FIELDS[f].export) {
        case 'timestamp':
          return `if(${f} IS NULL, NULL, toString(toUnixTimestamp64Micro(assumeNotNull(${f}))))`;
        case 'count':
          return `toString(${f})`;
        case 'json':
        case 'emptyText':
          return `if(${f} = '', NULL, ${asText(f)})`;
        case 'list':
          return RUN_FIELDS[f].column.type === 'Array(UUID)' ? `arrayMap(x -> toString(x), ${f})` : f;
        default:
          return asText(f);
      }
    };
    const stored = await ch.query<Record<string, unknown>>(
      `SELECT ${fields.map((f) => `${oldSql(f)} AS f_${f}`).join(', ')} FROM runs FINAL WHERE tenant_id = {tenant:UUID} AND session_id = {session:UUID} ORDER BY start_time, id`,
      { tenant, session: full },
    );
    expect(stored).toHaveLength(M);
    const todays = join(chDir, '..', `todays-${job.id}.parquet`);
    const writer = await ParquetWriter.openFile(schema, todays, { pageIndex: false });
    for (const r of stored) {
      const row: Record<string, unknown> = {};
      for (const f of fields) {
        const v = r[`f_${f}`];
        const kind = RUN_FIELDS[f].export;
        row[f] = v === null ? null : kind === 'timestamp' || kind === 'count' ? BigInt(v as string) : kind === 'list' ? { list: (v as string[]).map((element) => ({ element })) } : v;
      }
      await writer.appendRow(row);
    }
    await writer.close();
    const readAll = async (path: string) => {
      const reader = await ParquetReader.openFile(path);
      const rows: Record<string, unknown>[] = [];
      const cursor = reader.getCursor();
      for (let r = await cursor.next(); r; r = await cursor.next()) rows.push(r as Record<string, unknown>);
      const shape = (fs: Record<string, unknown>): unknown =>
        Object.entries(fs).map(([name, d]) => {
          const def = d as { primitiveType?: string; originalType?: string; repetitionType: string; fields?: Record<string, unknown> };
          return [name, def.primitiveType ?? null, def.originalType ?? null, def.repetitionType, def.fields ? shape(def.fields) : null];
        });
      const out = { shape: shape(reader.schema.fields), rows };
      await reader.close();
      return out;
    };
    try {
      const today = await readAll(todays);
      const engine = { shape: null as unknown, rows: [] as Record<string, unknown>[] };
      for (const k of keys) {
        const file = await readAll(s3.objectPath(BUCKET, k));
        engine.shape = file.shape;
        engine.rows.push(...file.rows);
      }
      expect(engine.shape).toEqual(today.shape);
      expect(engine.rows).toHaveLength(M);
      for (let i = 0; i < M; i++) for (const f of fields) expect([i, f, engine.rows[i][f]]).toEqual([i, f, today.rows[i][f]]);
      // The engine's timestamps keep their microseconds (parquetjs reads them as milliseconds).
      const [micros] = await ch.query<{ st: string; et: string | null }>(
        `SELECT toString(toUnixTimestamp64Micro(start_time)) AS st, toString(toUnixTimestamp64Micro(end_time)) AS et FROM file({p:String}, Parquet) ORDER BY start_time LIMIT 1 OFFSET 1 SETTINGS use_hive_partitioning = 0`,
        { p: s3.objectPath(BUCKET, keys[0]) },
      );
      expect(micros).toEqual({ st: (T0_US + 3_600_000_123n).toString(), et: (T0_US + 3_600_000_123n + 987_654n).toString() });
    } finally {
      rmSync(todays, { force: true });
    }
  });

  it('plans day by day: skips days without live runs, ends at the window, and exports nothing when nothing matches', async () => {
    // A project of its own over five days: day 0 has 600 live runs (3 files at 250), day 1 only runs whose newest
    // version is a tombstone, day 2 none, day 3 ten live runs before noon and ten after, where the window ends.
    const multi = randomUUID();
    const insert = async (day: number, count: number, version: number, deleted: number, offsetUs = 0n) =>
      ch.command(
        `INSERT INTO runs (tenant_id, session_id, id, trace_id, name, run_type, start_time, status, is_root, dotted_order, inputs, tags, outputs, version, is_deleted)
         SELECT toUUID({tenant:String}), toUUID({session:String}), generateUUIDv4(number), generateUUIDv4(number), concat('d', toString({day:UInt8}), '-', toString(number)),
           'chain', fromUnixTimestamp64Micro(toInt64({t:String}) + toInt64(number) * 1000000, 'UTC'), 'success', true, '', '{}', [], '{}', {version:UInt8}, {deleted:UInt8}
         FROM numbers({n:UInt32})`,
        { tenant, session: multi, day, t: (T0_US + BigInt(day) * DAY_US + offsetUs).toString(), version, deleted, n: count },
      );
    await insert(0, 600, 1, 0);
    const tombstoned = randomUUID();
    await ch.command(
      `INSERT INTO runs (tenant_id, session_id, id, trace_id, name, run_type, start_time, status, is_root, dotted_order, inputs, tags, outputs, version, is_deleted)
       SELECT toUUID({tenant:String}), toUUID({session:String}), reinterpretAsUUID(reverse(unhex(lpad(hex(number + 1), 32, '0')))), toUUID({trace:String}), 'gone',
         'chain', fromUnixTimestamp64Micro(toInt64({t:String}) + toInt64(number) * 1000000, 'UTC'), 'success', true, '', '{}', [], '{}', v, v - 1
       FROM numbers({n:UInt32}) ARRAY JOIN [1, 2] AS v`,
      { tenant, session: multi, trace: tombstoned, t: (T0_US + DAY_US).toString(), n: 40 },
    );
    await insert(3, 10, 1, 0);
    await insert(3, 10, 1, 0, 13n * 3_600_000_000n);
    const window = async (filter: string | null) => {
      const job = await repo.insertJob({
        tenant_id: tenant,
        organization_id: identity.organization_id,
        destination_id: destinationId,
        session_id: multi,
        start_time: '2025-11-15T00:00:00.000000Z',
        end_time: '2025-11-18T12:00:00.000000Z',
        start_us: T0_US.toString(),
        end_us: (T0_US + 3n * DAY_US + 12n * 3_600_000_000n).toString(),
        interval_hours: null,
        filter,
        export_fields: ['name', 'start_time', 'outputs'],
        format_version: 'v2_beta',
        identity,
      });
      const claimed = await repo.claim((job as JobRow).id, 'w-days', 60_000);
      await runner().run(claimed as JobRow, 'w-days', new AbortController().signal);
      expect(await repo.finish((job as JobRow).id, 'w-days', 'COMPLETED', null)).toBe(true);
      return { job: await repo.findJob({ tenant_id: tenant }, (job as JobRow).id), files: await repo.files((job as JobRow).id), ...(await exported((job as JobRow).id)) };
    };
    const all = await window(null);
    expect(all.keys.map((k) => k.replace(/^.*\/runs\//, ''))).toEqual([
      'year=2025/month=11/day=15/part-000001.parquet',
      'year=2025/month=11/day=15/part-000002.parquet',
      'year=2025/month=11/day=15/part-000003.parquet',
      'year=2025/month=11/day=18/part-000004.parquet',
    ]);
    expect(all.files.map((f) => f.rows)).toEqual([250, 250, 100, 10]);
    expect(all.rows.map((r) => r.name).sort()).toEqual([...Array.from({ length: 600 }, (_, i) => `d0-${i}`), ...Array.from({ length: 10 }, (_, i) => `d3-${i}`)].sort());
    expect(Number(all.job?.rows_written)).toBe(610);
    const none = await window('eq(name, "nothing has this name")');
    expect(none.keys).toEqual([]);
    expect(none.files).toEqual([]);
    expect(Number(none.job?.rows_written)).toBe(0);
  });

  it('gives a job to exactly one of several competing workers', async () => {
    const job = await newJob();
    const owners = Array.from({ length: 8 }, (_, i) => `w${i}`);
    const claims = await Promise.all(owners.map((o) => repo.claim(job.id, o, 60_000)));
    expect(claims.filter((c) => c !== null)).toHaveLength(1);
  });

  it('stops a cancelled export at its next check and keeps it CANCELLED', async () => {
    const job = await newJob();
    const claimed = await repo.claim(job.id, 'w-cancel', 60_000);
    expect(await repo.cancel({ tenant_id: tenant }, job.id)).not.toBeNull();
    await expect(runner().run(claimed as JobRow, 'w-cancel', new AbortController().signal)).rejects.toBeInstanceOf(ExportInterrupted);
    expect(await repo.finish(job.id, 'w-cancel', 'COMPLETED', null)).toBe(false);
    expect((await repo.findJob({ tenant_id: tenant }, job.id))?.status).toBe('CANCELLED');
  });

  it('times out exports running past the runtime limit', async () => {
    const job = await newJob();
    await repo.claim(job.id, 'slow', 60_000);
    await ds.query(`UPDATE "exports"."jobs" SET started_at = now() - interval '73 hours' WHERE id = $1`, [job.id]);
    expect(await repo.timeOut(72 * 3_600_000)).toBeGreaterThanOrEqual(1);
    expect((await repo.findJob({ tenant_id: tenant }, job.id))?.status).toBe('TIMEDOUT');
    expect(await repo.heartbeat(job.id, 'slow', 1000)).toBe(false);
  });
});
