import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dottedSegment as seg } from '@th/ingest';
import { createTestDatabase, freePort, startAppProcess, type AppProcess } from '@th/testing';

// The standalone service as its own OS process with INGEST_ACK=logged: a run write is answered once it
// is in the bus's write-ahead log. Killed with SIGKILL under load, the restarted process hands what the
// log holds to the writer: every acknowledged run is then in ClickHouse, exactly once, complete.

describe('standalone, INGEST_ACK=logged: kill -9 under load loses no acknowledged run', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let proc: AppProcess | null = null;
  const dataDir = mkdtempSync(join(tmpdir(), 'ingest-log-crash-'));
  const key = `th_test_${randomBytes(12).toString('hex')}`;
  const project = `crash-${randomBytes(4).toString('hex')}`;
  let env: Record<string, string>;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    port = await freePort();
    env = { DATABASE_URL: db.url, DATA_DIR: dataDir, BOOTSTRAP_API_KEY: key, PRINT_BANNER: 'false', INGEST_ACK: 'logged' };
  });
  afterAll(async () => {
    await proc?.stop();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const send = (path: string, body: unknown) =>
    fetch(`${(proc as AppProcess).url}${path}`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });

  /** A batch of 20 runs: their POSTs and, in the same request, the PATCHes that finish them. */
  const batch = (ids: string[]) => {
    const t0 = '2026-11-24T10:00:00.000001Z';
    const order = (id: string) => seg(t0, id);
    return {
      post: ids.map((id) => ({ id, name: 'crash', run_type: 'chain', start_time: t0, trace_id: id, dotted_order: order(id), inputs: { q: id }, session_name: project })),
      patch: ids.map((id) => ({ id, trace_id: id, dotted_order: order(id), end_time: '2026-11-24T10:00:01.000001Z', outputs: { a: id } })),
    };
  };

  it('every run acknowledged before the kill is there after the restart, once, with its POST and PATCH merged', async () => {
    proc = await startAppProcess('standalone', env, { port });
    const acked: string[] = [];
    let stop = false;
    let sent = 0;
    // Four clients send until the kill (bounded: at most 400 batches).
    const client = async () => {
      while (!stop && sent < 400) {
        sent++;
        const ids = Array.from({ length: 20 }, () => randomUUID());
        const res = await send('/runs/batch', batch(ids)).catch(() => null);
        if (res?.status === 202) acked.push(...ids);
        else if (res) expect(res.status).toBe(202);
      }
    };
    const clients = Array.from({ length: 4 }, client);
    while (acked.length < 2_000 && sent < 400) await new Promise((r) => setTimeout(r, 10));
    await proc.kill(); // SIGKILL: no shutdown hook runs, the writer is cut off mid-batch
    stop = true;
    await Promise.all(clients);
    expect(acked.length).toBeGreaterThanOrEqual(2_000);

    proc = await startAppProcess('standalone', env, { port });
    // The writer was behind when the process died: what it had not written came back from the log.
    const readBack = /"msg":"logged messages read back, to be handled again",.*?"count":(\d+)/.exec(proc.log());
    expect(Number(readBack?.[1])).toBeGreaterThan(0);
    let found: { id: string; status: string; inputs: unknown; outputs: unknown }[] = [];
    for (let i = 0; i < 600; i++) {
      found = [];
      for (let j = 0; j < acked.length; j += 500) {
        const res = await send('/runs/query', { id: acked.slice(j, j + 500), select: ['id', 'status', 'inputs', 'outputs'], limit: 500 });
        expect(res.status).toBe(200);
        found.push(...((await res.json()) as { runs: typeof found }).runs);
      }
      if (found.length >= acked.length && found.every((r) => r.status === 'success')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(found).toHaveLength(acked.length);
    expect(new Set(found.map((r) => r.id)).size).toBe(acked.length);
    for (const r of found) expect(r).toMatchObject({ status: 'success', inputs: { q: r.id }, outputs: { a: r.id } });
  });
});
