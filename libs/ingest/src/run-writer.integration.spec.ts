import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { BusMessage } from '@th/bus';
import { ClickHouse, migrateClickHouse, RowBinaryBuffer } from '@th/clickhouse';
import { uuidv7 } from '@th/testing';
import { TOPICS, type RunEvent, type TopicPayload } from '@th/contracts';
import { PriceMapRepository } from './price-map/price-map.repository';
import { RunWriterService } from './run-writer.service';
import { RunCache } from './run-cache';
import type { NewRunFilter } from './new-run-filter';


/** The run writer on the real engine (chDB): what it acknowledges is in ClickHouse, retries included. */
describe('run writer on ClickHouse (chDB)', () => {
  const dir = join(tmpdir(), `th-writer-${process.pid}`);
  let ch: ClickHouse;
  let writer: RunWriterService;
  const tenant = randomUUID();
  const session = randomUUID();
  const options = { writer: false, writerMaxBatch: 1000, writerCacheEntries: 10_000, writerParallelBacklog: 2000, maxBodyBytes: 1 << 20, batchSizeLimit: 100 };

  beforeAll(async () => {
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
    await migrateClickHouse(ch);
    writer = new RunWriterService(ch, options, new PriceMapRepository(ch));
  });
  afterAll(async () => {
    await ch?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const message = (value: RunEvent, offset: number): BusMessage<TopicPayload<'runs'>> => ({
    topic: TOPICS.runs,
    key: value.id,
    value,
    partition: 0,
    offset: String(offset),
    headers: {},
  });

  const post = (id: string): RunEvent => {
    const start = new Date('2026-11-20T10:00:00.000Z');
    const stamp = start.toISOString().replace(/[-:]/g, '').replace('.', '').replace('Z', '000Z');
    return {
      kind: 'run',
      op: 'post',
      tenant_id: tenant,
      id,
      received_at: new Date().toISOString(),
      fields: { session_id: session, trace_id: id, dotted_order: `${stamp}${id}`, name: 'root', run_type: 'chain', start_time: start.toISOString(), inputs: { q: 1 } },
    };
  };

  /** The engine, but the first lookup whose ids include `id` answers only after release() (it reads at once). */
  const holdingLookupOf = (id: string) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let held = false;
    const slow = Object.create(ch) as ClickHouse;
    slow.query = async <T>(sql: string, params?: Record<string, unknown>, settings?: Record<string, string | number>): Promise<T[]> => {
      const answer = ch.query<T>(sql, params, settings); // read now: the state this lookup sees
      if (!held && (params?.ids as string[] | undefined)?.includes(id)) {
        held = true;
        await gate;
      }
      return answer;
    };
    const isHeld = async () => {
      while (!held) await new Promise((r) => setImmediate(r));
    };
    return { ch: slow, isHeld, release: () => release() };
  };

  const stored = (id: string) =>
    ch.query<{ id: string; status: string }>('SELECT id, status FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}', { t: tenant, id });

  it('a batch whose insert failed is written in full when it is delivered again (nothing acknowledged is skipped as unchanged)', async () => {
    const id = randomUUID();
    const patch: RunEvent = { ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 2 } } };
    const batch = [message(post(id), 1), message(patch, 2)];
    // the runs table is away: the locator insert succeeds, the runs insert fails, the batch is not acknowledged
    await ch.command('RENAME TABLE runs TO runs_away');
    try {
      await expect(writer.handle(batch)).rejects.toThrow();
    } finally {
      await ch.command('RENAME TABLE runs_away TO runs');
    }
    expect(await stored(id)).toEqual([]);
    // the bus delivers the same batch again
    await writer.handle(batch);
    expect(await stored(id)).toEqual([{ id, status: 'success' }]);
  });

  it('a finished run leaves the memory once written; a late event merges with what ClickHouse holds', async () => {
    const id = randomUUID();
    const end: RunEvent = { ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 1 } } };
    await writer.handle([message(post(id), 10), message(end, 11)]);
    const memory = (writer as unknown as { cache: RunCache }).cache;
    expect(memory.get(RunCache.key(tenant, id))).toBeUndefined();
    // a run still in progress stays in memory
    const open = randomUUID();
    await writer.handle([message(post(open), 13)]);
    expect(memory.get(RunCache.key(tenant, open))?.fields.inputs).toEqual({ q: 1 });
    // a later correction of the outputs, in a batch of its own
    const late: RunEvent = { ...post(id), op: 'patch', fields: { outputs: { a: 2 }, extra: { metadata: { late: true } } } };
    await writer.handle([message(late, 12)]);
    const rows = await ch.query<{ status: string; inputs: string; outputs: string; extra: string }>(
      'SELECT status, inputs, outputs, extra FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}',
      { t: tenant, id },
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].status).toBe('success');
    expect(JSON.parse(rows[0].inputs)).toEqual({ q: 1 });
    expect(JSON.parse(rows[0].outputs)).toEqual({ a: 2 });
    expect(JSON.parse(rows[0].extra)).toEqual({ metadata: { late: true } });
  });

  it('a version replaced by a newer one, or released, lets go of its values once its row has landed; later events still merge whole', async () => {
    const id = randomUUID();
    const key = RunCache.key(tenant, id);
    const memory = (writer as unknown as { cache: RunCache }).cache;
    // Only the writer references the POST's values after this call (the test keeps a weak reference).
    const inputsRef = await (async () => {
      const first = post(id);
      const ref = new WeakRef(first.fields.inputs as object);
      await writer.handle([message(first, 60)]);
      return ref;
    })();
    const v1 = memory.get(key)!;
    expect(v1.fields.inputs).toEqual({ q: 1 });
    // a PATCH that does not finish the run: the newer version replaces v1, which drops its values
    await writer.handle([message({ ...post(id), op: 'patch', fields: { extra: { metadata: { step: 1 } } } }, 61)]);
    const v2 = memory.get(key)!;
    expect(v2).not.toBe(v1);
    expect(v1.fields).toEqual({});
    expect(v2.fields.inputs).toEqual({ q: 1 });
    expect(v2.fields.extra).toEqual({ metadata: { step: 1 } });
    // the PATCH that finishes it: released from memory, and that version drops its values too
    await writer.handle([message({ ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 3 } } }, 62)]);
    expect(memory.get(key)).toBeUndefined();
    expect(v2.fields).toEqual({});
    // Old versions still referenced from somewhere (as V8 does, until its next full collection, for
    // objects that died in the old generation) no longer keep the request's values alive.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    await new Promise((r) => setImmediate(r));
    gc();
    expect(inputsRef.deref()).toBeUndefined();
    expect([v1, v2]).toHaveLength(2);
    // a late event reads the run back from ClickHouse and merges with everything stored
    await writer.handle([message({ ...post(id), op: 'patch', fields: { error: 'late failure' } }, 63)]);
    const rows = await ch.query<{ status: string; inputs: string; outputs: string; extra: string; error: string }>(
      'SELECT status, inputs, outputs, extra, error FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}',
      { t: tenant, id },
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ status: 'error', error: 'late failure' });
    expect(JSON.parse(rows[0].inputs)).toEqual({ q: 1 });
    expect(JSON.parse(rows[0].outputs)).toEqual({ a: 3 });
    expect(JSON.parse(rows[0].extra)).toEqual({ metadata: { step: 1 } });
  });

  it('a batch whose lookup is slow still merges into a finished run another batch wrote and forgot meanwhile', async () => {
    // Batch A (the POST) looks its run up; the lookup is held back until batch B (the PATCH that finishes
    // the run) has merged, written and released its runs. A must then merge into B's state, not into the
    // empty state its lookup read, or its newer row would lose the PATCH.
    const id = randomUUID();
    const hold = holdingLookupOf(id);
    const racing = new RunWriterService(hold.ch, options, new PriceMapRepository(ch));
    const end: RunEvent = { ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 1 } } };
    const a = racing.handle([message(post(id), 20)]);
    await hold.isHeld();
    await racing.handle([message(end, 21)]);
    hold.release();
    await a;
    const rows = await ch.query<{ status: string; inputs: string; outputs: string }>(
      'SELECT status, inputs, outputs FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}',
      { t: tenant, id },
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].status).toBe('success');
    expect(JSON.parse(rows[0].inputs)).toEqual({ q: 1 });
    expect(JSON.parse(rows[0].outputs)).toEqual({ a: 1 });
  });

  it('while a batch reads a run back, other finished runs still leave the memory once written; the run it reads stays until its merge', async () => {
    // Batch A looks up Z and is held there. Meanwhile batch B finishes X (which A does not read) and
    // batch C finishes Z: X leaves the memory at once, Z stays (A must merge into C's state) until A has merged.
    const [x, z] = [randomUUID(), randomUUID()];
    const hold = holdingLookupOf(z);
    const racing = new RunWriterService(hold.ch, options, new PriceMapRepository(ch));
    const memory = (racing as unknown as { cache: RunCache }).cache;
    const end = (id: string): RunEvent => ({ ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 4 } } });
    const a = racing.handle([message(post(z), 40)]);
    await hold.isHeld();
    await racing.handle([message(post(x), 41), message(end(x), 42)]);
    expect(memory.get(RunCache.key(tenant, x))).toBeUndefined();
    await racing.handle([message(end(z), 43)]);
    expect(memory.get(RunCache.key(tenant, z))?.fields.end_time).toBe('2026-11-20T10:00:01.000Z');
    hold.release();
    await a;
    expect(await stored(z)).toEqual([{ id: z, status: 'success' }]);
    expect(await stored(x)).toEqual([{ id: x, status: 'success' }]);
    // Z was written again by A's merge (still finished): it leaves the memory too
    expect(memory.get(RunCache.key(tenant, z))).toBeUndefined();
  });

  it('a run pushed out of the bounded cache during a batch\'s lookups is read back before that batch merges it', async () => {
    // A cache of two runs. X is cached (in progress); batch B (X's finishing PATCH and a new run Y) finds X
    // in the cache and looks up only Y, which is held back; meanwhile batch A caches two other runs and
    // pushes X out. B must merge X's PATCH into X's stored row, not into an empty run.
    const [x, y, p, q] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const hold = holdingLookupOf(y);
    const small = new RunWriterService(hold.ch, { ...options, writerCacheEntries: 2 }, new PriceMapRepository(ch));
    await small.handle([message(post(x), 30)]);
    const end: RunEvent = { ...post(x), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 3 } } };
    const b = small.handle([message(end, 31), message(post(y), 32)]);
    await hold.isHeld();
    await small.handle([message(post(p), 33), message(post(q), 34)]);
    hold.release();
    await b;
    const rows = await ch.query<{ status: string; name: string; inputs: string; outputs: string }>(
      'SELECT status, name, inputs, outputs FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}',
      { t: tenant, id: x },
    );
    expect(rows).toEqual([{ status: 'success', name: 'root', inputs: '{"q":1}', outputs: '{"a":3}' }]);
  });

  it('a run that leaves the memory while a batch reads back another one inside the merge lock is read back too', async () => {
    // Batch A carries late events for X and Z (both in memory when A starts) and a new run W, whose
    // lookup is held. Meanwhile C finishes Z (written and forgotten: A reads Z back inside the merge
    // lock, and that read is held in turn) and B finishes X, whose insert lands only while A reads Z
    // back: X leaves the memory then. A must merge X's late event into B's row, not into nothing.
    const [x, z, w] = [randomUUID(), randomUUID(), randomUUID()];
    const gate = () => {
      let resolve!: () => void;
      const promise = new Promise<void>((r) => (resolve = r));
      return { promise, resolve };
    };
    const gates = { w: gate(), z: gate(), insert: gate() };
    const held = { w: false, z: false, insert: false };
    let armed = false; // the holds apply from batch A on
    const wrapped = Object.create(ch) as ClickHouse;
    wrapped.query = async <T>(sql: string, params?: Record<string, unknown>, settings?: Record<string, string | number>): Promise<T[]> => {
      const answer = ch.query<T>(sql, params, settings);
      const ids = (params?.ids as string[] | undefined) ?? [];
      for (const [k, id] of [['w', w], ['z', z]] as const) {
        if (armed && !held[k] && ids.includes(id)) {
          held[k] = true;
          await gates[k].promise;
        }
      }
      return answer;
    };
    const xBytes = new RowBinaryBuffer(16);
    xBytes.uuid(x);
    wrapped.insertRowBinary = async (table, columns, body, settings) => {
      if (armed && !held.insert && body.includes(xBytes.body()) && body.includes('"a":9')) {
        held.insert = true;
        await gates.insert.promise;
      }
      return ch.insertRowBinary(table, columns, body, settings);
    };
    const until = async (k: keyof typeof held) => {
      for (let i = 0; i < 3000 && !held[k]; i++) await new Promise((r) => setTimeout(r, 1));
      if (!held[k]) throw new Error(`never held: ${k}`);
    };
    const racing = new RunWriterService(wrapped, options, new PriceMapRepository(ch));
    await racing.handle([message(post(x), 50), message(post(z), 51)]);
    armed = true;
    const late = (id: string): RunEvent => ({ ...post(id), op: 'patch', fields: { extra: { metadata: { late: true } } } });
    const end = (id: string): RunEvent => ({ ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 9 } } });
    const a = racing.handle([message(late(x), 52), message(late(z), 53), message(post(w), 54)]);
    await until('w');
    await racing.handle([message(end(z), 55)]);
    const b = racing.handle([message(end(x), 56)]);
    await until('insert');
    gates.w.resolve();
    await until('z');
    gates.insert.resolve();
    await b;
    gates.z.resolve();
    await a;
    const rows = await ch.query<{ status: string; inputs: string; outputs: string; extra: string }>(
      'SELECT status, inputs, outputs, extra FROM runs FINAL WHERE tenant_id = {t:UUID} AND id IN {ids:Array(UUID)} ORDER BY id = {x:UUID}',
      { t: tenant, ids: [x, z], x },
    );
    expect(rows.map((r) => ({ ...r, extra: JSON.parse(r.extra) as unknown }))).toEqual([
      { status: 'success', inputs: '{"q":1}', outputs: '{"a":9}', extra: { metadata: { late: true } } },
      { status: 'success', inputs: '{"q":1}', outputs: '{"a":9}', extra: { metadata: { late: true } } },
    ]);
  });

  it('a batch with more new runs than one lookup query can name is written whole, and again when redelivered', async () => {
    // 6,000 ids: more than one embedded lookup can carry (parameters are inlined, max_query_size is 256 KiB).
    const ids = Array.from({ length: 6_000 }, () => randomUUID());
    const batch = ids.map((id, i) => message(post(id), 100 + i));
    // No background merge may fold the two deliveries' versions together before they are counted.
    await ch.command('SYSTEM STOP MERGES runs');
    try {
      await new RunWriterService(ch, { ...options, writerCacheEntries: 0 }, new PriceMapRepository(ch)).handle(batch);
    // delivered again to a writer that remembers nothing: every id is looked up and found
    await new RunWriterService(ch, { ...options, writerCacheEntries: 0 }, new PriceMapRepository(ch)).handle(batch);
    const [{ n, versions }] = await ch.query<{ n: string; versions: string }>(
      'SELECT uniqExact(id) AS n, count() AS versions FROM runs WHERE tenant_id = {t:UUID} AND id IN {ids:Array(UUID)}',
      { t: tenant, ids },
    );
    expect(Number(n)).toBe(6_000);
      expect(Number(versions)).toBe(12_000); // both deliveries wrote every run (merged with the stored state the second time)
    } finally {
      await ch.command('SYSTEM START MERGES runs');
    }
    const [{ final }] = await ch.query<{ final: string }>('SELECT count() AS final FROM runs FINAL WHERE tenant_id = {t:UUID} AND id IN {ids:Array(UUID)}', { t: tenant, ids });
    expect(Number(final)).toBe(6_000);
  });

  it('a run that moves to another project leaves a delete marker at its old key, in the same insert as its new row', async () => {
    // The PATCH comes first and names another project; the POST's project wins when it arrives, so the run moves.
    const id = randomUUID();
    const other = randomUUID();
    const early: RunEvent = { ...post(id), op: 'patch', fields: { session_id: other, end_time: '2026-11-20T10:00:01.000Z', outputs: { a: 4 } } };
    await writer.handle([message(early, 200)]);
    // a writer that remembers nothing reads the run back from ClickHouse, then moves it
    await new RunWriterService(ch, { ...options, writerCacheEntries: 0 }, new PriceMapRepository(ch)).handle([message(post(id), 201)]);
    const live = await ch.query<{ session_id: string; status: string; inputs: string; outputs: string }>(
      'SELECT session_id, status, inputs, outputs FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}',
      { t: tenant, id },
    );
    expect(live).toEqual([{ session_id: session, status: 'success', inputs: '{"q":1}', outputs: '{"a":4}' }]);
    const marker = await ch.query<{ session_id: string; is_deleted: number; expires_at: string; name: string; version: number }>(
      'SELECT session_id, is_deleted, expires_at, name, version FROM runs WHERE tenant_id = {t:UUID} AND id = {id:UUID} AND is_deleted = 1',
      { t: tenant, id },
    );
    expect(marker).toHaveLength(1);
    expect(marker[0]).toMatchObject({ session_id: other, is_deleted: 1, name: '' });
    expect(marker[0].expires_at.startsWith('2106-01-01')).toBe(true);
    // one insert carried the new row and the marker: they share the version
    const [{ versions }] = await ch.query<{ versions: string }>(
      'SELECT uniqExact(version) AS versions FROM runs WHERE tenant_id = {t:UUID} AND id = {id:UUID} AND (is_deleted = 1 OR session_id = {s:UUID})',
      { t: tenant, id, s: session },
    );
    expect(Number(versions)).toBe(1);
    // runs_by_id got the same rows from that insert, through its view: the new key live, the old one deleted
    const located = await ch.query<{ session_id: string; is_deleted: number; trace_id: string; same: number }>(
      `SELECT session_id, is_deleted, trace_id, version = {v:UInt64} AS same FROM runs_by_id
       WHERE tenant_id = {t:UUID} AND id = {id:UUID} AND version = (SELECT max(version) FROM runs_by_id WHERE tenant_id = {t:UUID} AND id = {id:UUID})
       ORDER BY is_deleted`,
      { t: tenant, id, v: marker[0].version },
    );
    expect(located).toEqual([
      { session_id: session, is_deleted: 0, trace_id: id, same: 1 },
      { session_id: other, is_deleted: 1, trace_id: id, same: 1 },
    ]);
  });

  it('a sole writer reads back stored runs but does not look up runs newer than all it found stored', async () => {
    const t = Date.UTC(2026, 10, 21, 9);
    // a run another writer stored before this one started
    const before = uuidv7(t);
    await writer.handle([message(post(before), 300)]);
    const lookedUp: string[] = [];
    const watched = Object.create(ch) as ClickHouse;
    watched.query = async <T>(sql: string, params?: Record<string, unknown>, settings?: Record<string, string | number>): Promise<T[]> => {
      lookedUp.push(...((params?.ids as string[] | undefined) ?? []));
      return ch.query<T>(sql, params, settings);
    };
    const sole = new RunWriterService(watched, { ...options, soleWriter: true }, new PriceMapRepository(ch));
    await (sole as unknown as { newRuns: NewRunFilter }).newRuns.start(ch);
    const end = (id: string, a: number): RunEvent => ({ ...post(id), op: 'patch', fields: { end_time: '2026-11-20T10:00:01.000Z', outputs: { a } } });
    // the stored run is looked up, and its PATCH merges into its POST
    await sole.handle([message(end(before, 5), 301)]);
    expect(lookedUp).toContain(before);
    // a newer run is new: no lookup
    const fresh = uuidv7(t + 60_000);
    await sole.handle([message(post(fresh), 302), message(end(fresh, 6), 303)]);
    expect(lookedUp).not.toContain(fresh);
    // finished, it left the memory; a late event for it is looked up and merges with its stored row
    const late: RunEvent = { ...post(fresh), op: 'patch', fields: { extra: { metadata: { late: true } } } };
    await sole.handle([message(late, 304)]);
    expect(lookedUp).toContain(fresh);
    const row = async (id: string) =>
      (
        await ch.query<{ status: string; inputs: string; outputs: string; extra: string }>(
          'SELECT status, inputs, outputs, extra FROM runs FINAL WHERE tenant_id = {t:UUID} AND id = {id:UUID}',
          { t: tenant, id },
        )
      ).map((r) => ({ ...r, inputs: JSON.parse(r.inputs) as unknown, outputs: JSON.parse(r.outputs) as unknown }));
    expect(await row(before)).toMatchObject([{ status: 'success', inputs: { q: 1 }, outputs: { a: 5 } }]);
    const [last] = await row(fresh);
    expect(last).toMatchObject({ status: 'success', inputs: { q: 1 }, outputs: { a: 6 } });
    expect(JSON.parse(last.extra)).toEqual({ metadata: { late: true } });
  });
});
