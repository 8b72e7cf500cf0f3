import { createClient } from '@clickhouse/client';
import type { Cluster } from '@th/testing';
import { api, eventually, makeRun, readRuns, useCluster } from './cluster-client';

/** One request as the client saw it: when it was sent, when it ended (undefined while in flight), and whether it got a 202. */
interface Attempt {
  start: number;
  end?: number;
  ok: boolean;
}

interface LoadResult {
  acked: string[];
  failedAttempts: number;
  attempts: Attempt[];
}

/**
 * Sends `batches` requests of `size` runs each (post and patch together) from `workers` concurrent
 * clients. Like the SDK, a failed request (network error, 5xx, timeout) is retried with backoff;
 * a run counts as acknowledged only when its request got a 2xx. Bounded in count and in time.
 */
async function load(
  call: ReturnType<typeof api>,
  project: string,
  opts: { batches: number; size: number; workers: number; deadlineMs: number; onBatch?: (done: number) => void; attempts?: Attempt[] },
): Promise<LoadResult> {
  const acked: string[] = [];
  const attempts = opts.attempts ?? [];
  let failedAttempts = 0;
  let next = 0;
  let done = 0;
  const deadline = Date.now() + opts.deadlineMs;
  const worker = async () => {
    for (;;) {
      const b = next++;
      if (b >= opts.batches || Date.now() > deadline) return;
      const runs = Array.from({ length: opts.size }, (_, i) => makeRun(project, b * opts.size + i));
      const body = { post: runs.map((r) => r.post), patch: runs.map((r) => r.patch) };
      for (let attempt = 0; Date.now() < deadline; attempt++) {
        const seen: Attempt = { start: Date.now(), ok: false };
        attempts.push(seen);
        try {
          const res = await call('/runs/batch', { method: 'POST', json: body, signal: AbortSignal.timeout(15_000) });
          await res.arrayBuffer();
          seen.end = Date.now();
          if (res.status === 202) {
            seen.ok = true;
            acked.push(...runs.map((r) => r.id));
            break;
          }
          failedAttempts++;
        } catch {
          seen.end ??= Date.now();
          failedAttempts++;
        }
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
      }
      opts.onBatch?.(++done);
    }
  };
  await Promise.all(Array.from({ length: opts.workers }, worker));
  return { acked, failedAttempts, attempts };
}

async function expectExactlyOnce(cluster: Cluster, call: ReturnType<typeof api>, acked: string[]): Promise<void> {
  const found = await eventually(
    () => readRuns(call, acked),
    (m) => acked.every((id) => m.get(id)?.[0]?.status === 'success'),
    180_000,
    500,
  );
  const missing = acked.filter((id) => !found.has(id));
  const incomplete = acked.filter((id) => found.get(id)?.[0]?.status !== 'success');
  const duplicated = acked.filter((id) => (found.get(id)?.length ?? 0) > 1);
  expect({ missing: missing.length, incomplete: incomplete.length, duplicated: duplicated.length }).toEqual({ missing: 0, incomplete: 0, duplicated: 0 });
  // and in storage itself, every row as written (no FINAL, which would collapse a duplicate; the caller has stopped
  // merges, which would too): one row per run, so no batch was written twice.
  const ch = createClient({ url: cluster.clickhouse.url });
  const rs = await ch.query({
    query: 'SELECT count() AS rows, uniqExact(id) AS ids FROM runs WHERE id IN {ids:Array(UUID)} AND is_deleted = 0',
    query_params: { ids: acked },
    format: 'JSONEachRow',
  });
  const [row] = (await rs.json()) as { rows: string | number; ids: string | number }[];
  await ch.close();
  expect(Number(row.rows)).toBe(acked.length);
  expect(Number(row.ids)).toBe(acked.length);
}

/** Stops ClickHouse's background merges of `runs` while `fn` runs: a merge would also fold a duplicate row away. */
async function withMergesStopped<T>(cluster: Cluster, fn: () => Promise<T>): Promise<T> {
  const ch = createClient({ url: cluster.clickhouse.url });
  await ch.command({ query: 'SYSTEM STOP MERGES runs' });
  try {
    return await fn();
  } finally {
    await ch.command({ query: 'SYSTEM START MERGES runs' });
    await ch.close();
  }
}

describe('faults: no acknowledged run is lost or duplicated', () => {
  let cluster: Cluster;
  let call: ReturnType<typeof api>;
  // The writer killed in the second test keeps its partitions until its session times out (30 s by default),
  // and the restarted writer's join waits for that: 10 s is enough of a session on a loaded machine.
  useCluster((c, a) => ((cluster = c), (call = a)), { ingestEnv: { KAFKA_SESSION_TIMEOUT_MS: '10000' } });

  it('survives a Kafka broker restart during ingest', async () => {
    let restarted: Promise<void> | undefined;
    const attempts: Attempt[] = [];
    // The broker is stopped, kept down until requests have been sent to it in that state, then started again.
    const down = { from: 0, to: 0 };
    const restart = async () => {
      await cluster.kafka.stop();
      down.from = Date.now();
      const until = Date.now() + 30_000;
      while (Date.now() < until && attempts.filter((a) => a.start > down.from).length < 4) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 1_000));
      down.to = Date.now();
      await cluster.kafka.restart();
    };
    await withMergesStopped(cluster, async () => {
      const result = await load(call, 'fault-kafka', {
        batches: 120,
        size: 20,
        workers: 4,
        deadlineMs: 240_000,
        attempts,
        onBatch: (n) => {
          if (n === 30) restarted = restart();
        },
      });
      await restarted;
      expect(restarted).toBeDefined();
      // The restart was felt: requests sent while the broker was down failed, or were answered only once it was back.
      const sentWhileDown = attempts.filter((a) => a.start >= down.from && a.start < down.to);
      expect(sentWhileDown.length).toBeGreaterThan(0);
      expect(sentWhileDown.filter((a) => a.ok && a.end! < down.to)).toEqual([]);
      expect(result.acked.length).toBeGreaterThan(1000);
      await expectExactlyOnce(cluster, call, result.acked);
    });
  }, 600_000);

  it('survives kill -9 of the ingest writer mid-batch', async () => {
    let revived: Promise<unknown> | undefined;
    await withMergesStopped(cluster, async () => {
      const result = await load(call, 'fault-writer', {
        batches: 120,
        size: 20,
        workers: 4,
        deadlineMs: 240_000,
        onBatch: (n) => {
          if (n === 40) revived = cluster.ingest.kill().then(() => cluster.restart('ingest'));
        },
      });
      await revived;
      expect(revived).toBeDefined();
      expect(result.failedAttempts).toBeGreaterThan(0); // requests did hit the dead process and were retried
      expect(result.acked.length).toBeGreaterThan(1000);
      await expectExactlyOnce(cluster, call, result.acked);
    });
  }, 600_000);
});
