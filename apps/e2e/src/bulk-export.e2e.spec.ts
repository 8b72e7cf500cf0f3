import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { ClickHouse } from '@th/clickhouse';
import { startCluster, startS3Server, type Cluster, type S3Server } from '@th/testing';
import { api, readRuns, seg, type Json } from './cluster-client';

const BUCKET = 'th-cluster-exports';
const PROJECT = `export-cluster-${randomUUID().slice(0, 8)}`;
/** Runs in the window, spread over two days; every 3rd is patched (a newer version), every 2nd is tagged "even". */
const N = 4_000;
const ROWS_PER_FILE = 40;
const T0 = Date.UTC(2026, 10, 20);
const DAY_MS = 86_400_000;

/** Bounded wait: polls `fn` until it returns a value, at most `timeoutMs`. */
async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 100_000; i++) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`Timed out waiting for ${what}`);
}

/**
 * The cluster form of bulk export: gateway, ingest, query and export-worker as separate OS processes over
 * Kafka, ClickHouse (HTTP, chDB behind it), PostgreSQL and an S3 store (s3proxy). The worker is SIGKILLed
 * mid-export and a new worker process finishes the export: every run is in the bucket exactly once.
 */
describe('bulk export, cluster form', () => {
  let cluster: Cluster;
  let s3: S3Server;
  let call: ReturnType<typeof api>;
  let reader: ClickHouse;
  let readerDir: string;
  let projectId: string;
  let destinationId: string;
  const runs: { id: string; i: number }[] = [];

  const json = async (res: Response): Promise<Json> => (await res.json()) as Json;
  const getExport = async (id: string): Promise<Json> => json(await call(`/api/v1/bulk-exports/${id}`));
  const finished = (id: string, timeoutMs: number) =>
    until(
      `export ${id} to finish`,
      async () => {
        const e = await getExport(id);
        return ['COMPLETED', 'FAILED', 'CANCELLED', 'TIMEDOUT'].includes(e.status as string) ? e : null;
      },
      timeoutMs,
      200,
    );
  const parquetKeys = (exportId: string) =>
    s3
      .listKeys(BUCKET, `cluster/export_id=${exportId}/`)
      .filter((k) => k.endsWith('.parquet'))
      .sort();
  /** Read back with ClickHouse's own Parquet reader (chDB file()), not with the writer's library. */
  const readParquet = async (keys: string[]): Promise<{ id: string; name: string; outputs: string }[]> => {
    const out: { id: string; name: string; outputs: string }[] = [];
    for (const k of keys) {
      out.push(
        ...(await reader.query<{ id: string; name: string; outputs: string }>(`SELECT id, name, outputs FROM file({path:String}, Parquet) SETTINGS use_hive_partitioning = 0`, {
          path: s3.objectPath(BUCKET, k),
        })),
      );
    }
    return out;
  };
  const oneTime = (over: Json = {}) => ({
    bulk_export_destination_id: destinationId,
    session_id: projectId,
    start_time: new Date(T0).toISOString(),
    end_time: new Date(T0 + 2 * DAY_MS).toISOString(),
    export_fields: ['name', 'outputs'],
    ...over,
  });

  beforeAll(async () => {
    s3 = await startS3Server();
    s3.createBucket(BUCKET);
    readerDir = mkdtempSync(join(tmpdir(), 'th-export-reader-'));
    reader = ClickHouse.connect({ kind: 'embedded', path: readerDir });
    // The worker's broker: the suite kills services, never the broker, and keeps to topics and groups of its own.
    cluster = await startCluster({
      sharedKafka: true,
      exportWorkerEnv: {
        EXPORT_POLL_MS: '300',
        EXPORT_LEASE_MS: '3000',
        EXPORT_ROWS_PER_FILE: String(ROWS_PER_FILE),
        EXPORT_RETRY_DELAY_MS: '200',
        // The test S3 server is on 127.0.0.1: the outbound policy refuses it unless the operator lists it.
        OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      },
    });
    call = api(cluster.gateway.url, cluster.apiKey);

    // Ingest through the gateway: posts first, then patches (newer versions) of every 3rd run in later requests.
    const made = Array.from({ length: N }, (_, i) => {
      const id = randomUUID();
      const start = new Date(T0 + Math.floor((i * 2 * DAY_MS) / N) + 1).toISOString().replace('Z', '001Z');
      const order = seg(start, id);
      runs.push({ id, i });
      return {
        post: { id, name: `run-${i}`, run_type: 'chain', start_time: start, end_time: start, trace_id: id, dotted_order: order, session_name: PROJECT, outputs: { v: 1 }, tags: i % 2 === 0 ? ['even'] : ['odd'] },
        patch: i % 3 === 0 ? { id, trace_id: id, dotted_order: order, session_name: PROJECT, end_time: start, outputs: { v: 2 } } : null,
      };
    });
    for (let i = 0; i < made.length; i += 500) {
      const res = await call('/runs/batch', { method: 'POST', json: { post: made.slice(i, i + 500).map((m) => m.post) } });
      expect(res.status).toBe(202);
    }
    const patches = made.flatMap((m) => (m.patch ? [m.patch] : []));
    for (let i = 0; i < patches.length; i += 500) {
      const res = await call('/runs/batch', { method: 'POST', json: { patch: patches.slice(i, i + 500) } });
      expect(res.status).toBe(202);
    }
    const ids = runs.map((r) => r.id);
    await until(
      'every run and patch to reach ClickHouse',
      async () => {
        const found = await readRuns(call, ids);
        return runs.every((r) => found.get(r.id)?.length === 1 && (found.get(r.id)?.[0].outputs as Json | undefined)?.v === (r.i % 3 === 0 ? 2 : 1));
      },
      180_000,
      1_000,
    );
    const projects = (await (await call(`/sessions?name=${PROJECT}`)).json()) as Json[];
    projectId = projects[0].id as string;

    const dest = await call('/api/v1/bulk-exports/destinations', {
      method: 'POST',
      json: {
        destination_type: 's3',
        display_name: 'cluster bucket',
        config: { bucket_name: BUCKET, prefix: 'cluster', region: 'us-east-1', endpoint_url: s3.endpoint },
        credentials: { access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
      },
    });
    expect(dest.status).toBe(200);
    destinationId = (await json(dest)).id as string;
  }, 420_000);

  afterAll(async () => {
    await cluster?.stop();
    await s3?.stop();
    await reader?.close();
    if (readerDir) rmSync(readerDir, { recursive: true, force: true });
  }, 120_000);

  it('a worker SIGKILLed mid-export is replaced by a new process, and the bucket holds every run exactly once, newest version', async () => {
    const res = await call('/api/v1/bulk-exports', { method: 'POST', json: oneTime() });
    expect(res.status).toBe(200);
    const created = await json(res);
    const id = created.id as string;

    // Kill the worker (no shutdown hook runs) once a few files are committed, long before the last.
    await until('the first files of the export', async () => ((await getExport(id)).files_written as number) >= 3, 120_000, 20);
    await cluster.exportWorker?.kill();
    expect(cluster.exportWorker?.child.signalCode).toBe('SIGKILL');
    // The gateway has no export-worker to route to now; the job's state is read from the worker's PostgreSQL schema.
    const pg = new Client({ connectionString: cluster.env.DATABASE_URL });
    await pg.connect();
    const atKill = (await pg.query<{ status: string; files_written: number }>(`SELECT status, files_written FROM "exports"."jobs" WHERE id = $1`, [id])).rows[0];
    await pg.end();
    expect(atKill.status).toBe('RUNNING');
    const expectedFiles = Math.ceil(N / 2 / ROWS_PER_FILE) * 2; // N/2 runs a day, a file ends at a day's end
    expect(atKill.files_written).toBeGreaterThanOrEqual(3);
    expect(atKill.files_written).toBeLessThan(expectedFiles);
    expect((await call(`/api/v1/bulk-exports/${id}`)).status).toBe(502);

    // A new worker process takes the export once the dead one's lease expires, and continues after its last committed file.
    // (It does not wait for Kafka to drop the dead member from its consumer group: the exports topic only wakes workers.)
    await cluster.restart('export-worker');
    const done = await finished(id, 240_000);
    expect(done).toMatchObject({ status: 'COMPLETED', rows_written: N, files_written: expectedFiles, error: null });

    const keys = parquetKeys(id);
    expect(keys).toHaveLength(expectedFiles);
    const seqs = keys.map((k) => Number(/part-(\d+)\.parquet$/.exec(k)?.[1])).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: expectedFiles }, (_, i) => i + 1));
    const rows = await readParquet(keys);
    expect(rows).toHaveLength(N);
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.size).toBe(N);
    for (const r of runs) {
      const got = byId.get(r.id);
      expect([r.id, got?.name, got ? JSON.parse(got.outputs) : null]).toEqual([r.id, `run-${r.i}`, { v: r.i % 3 === 0 ? 2 : 1 }]);
    }
  }, 420_000);

  it('refuses a destination on the cloud metadata address or a private network with 422 on body.config.endpoint_url, through the gateway', async () => {
    for (const endpoint_url of ['http://169.254.169.254/', 'http://10.0.0.1:9000', 'http://[::1]:9000']) {
      const res = await call('/api/v1/bulk-exports/destinations', {
        method: 'POST',
        json: { destination_type: 's3', display_name: 'x', config: { bucket_name: BUCKET, region: 'us-east-1', endpoint_url }, credentials: { access_key_id: 'a', secret_access_key: 'b' } },
      });
      expect({ endpoint_url, status: res.status }).toEqual({ endpoint_url, status: 422 });
      expect(((await json(res)).detail as { loc: string[] }[]).map((d) => d.loc)).toEqual([['body', 'config', 'endpoint_url']]);
    }
  });

  it('evaluates the export filter in the worker (no query service hop), and refuses an invalid one with 422 storing nothing', async () => {
    const before = (await (await call('/api/v1/bulk-exports')).json()) as Json[];
    const bad = await call('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ filter: 'eq(nope, 1)' }) });
    expect(bad.status).toBe(422);
    const detail = ((await bad.json()) as { detail: { loc: unknown[]; msg: string }[] }).detail;
    expect(detail.map((d) => d.loc.join('.'))).toEqual(['body.filter']);
    const after = (await (await call('/api/v1/bulk-exports')).json()) as Json[];
    expect(after.length).toBe(before.length);

    // Stopping the query service proves the worker needs no query hop: the filter is compiled into its ClickHouse query.
    await cluster.query.stop();
    const res = await call('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ filter: 'and(has(tags, "even"), eq(name, "run-42"))' }) });
    expect(res.status).toBe(200);
    const one = await finished((await json(res)).id as string, 120_000);
    expect(one).toMatchObject({ status: 'COMPLETED', rows_written: 1, files_written: 1 });
    const even = await call('/api/v1/bulk-exports', { method: 'POST', json: oneTime({ filter: 'has(tags, "even")' }) });
    const evenDone = await finished((await json(even)).id as string, 120_000);
    expect(evenDone).toMatchObject({ status: 'COMPLETED', rows_written: N / 2 });
    const rows = await readParquet(parquetKeys(evenDone.id as string));
    expect(rows.map((r) => r.id).sort()).toEqual(
      runs
        .filter((r) => r.i % 2 === 0)
        .map((r) => r.id)
        .sort(),
    );
  }, 300_000);
});
