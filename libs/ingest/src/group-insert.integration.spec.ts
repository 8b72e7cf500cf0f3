import { randomUUID } from 'node:crypto';
import { RowBinaryBuffer } from '@th/clickhouse';
import { suiteClickHouse, uuidv7 } from '@th/testing';
import { GroupInsert, type GroupInsertOptions } from './group-insert';
import { emptyRun, mergeEvent } from './run-merge';
import { encodeRunRow } from './run-row';

/** The writer's group insert on the engine (chDB): one insert at a time, later rows in the next one. */
describe('group insert on ClickHouse (chDB)', () => {
  const ch = suiteClickHouse('group-insert');
  const tenant = randomUUID();
  const session = randomUUID();
  let ms = Date.UTC(2026, 10, 24);

  /** A run row: its id and its RowBinary bytes. */
  const row = (): { id: string; bytes: Buffer } => {
    const id = uuidv7(++ms);
    const run = emptyRun(tenant, id);
    const start = new Date(ms).toISOString();
    mergeEvent(run, { kind: 'run', op: 'post', tenant_id: tenant, id, received_at: start, fields: { session_id: session, trace_id: id, name: 'r', run_type: 'chain', start_time: start } });
    const w = new RowBinaryBuffer(1024);
    encodeRunRow(w, run, ms * 1000, start);
    return { id, bytes: Buffer.from(w.body()) };
  };
  /** Writes these rows' bytes into the insert. */
  const rows = (...list: { bytes: Buffer }[]) => (w: RowBinaryBuffer) => {
    for (const r of list) for (const b of r.bytes) w.uint8(b);
  };
  /** A row the engine refuses: a String whose length runs past the end of the body. */
  const badRow = (w: RowBinaryBuffer) => w.string('not a run row');
  const stored = async (ids: string[]) =>
    (await ch().query<{ id: string }>('SELECT id FROM runs WHERE tenant_id = {t:UUID} AND id IN {ids:Array(UUID)}', { t: tenant, ids })).map((r) => r.id).sort();

  it('rows written while an insert is under way go together in the next insert; each write resolves once its rows landed', async () => {
    const sink = new GroupInsert(ch());
    const inserts = jest.spyOn(ch(), 'insertRowBinary'); // counts the real inserts, which still run
    try {
      const a = row();
      const first = sink.write(rows(a), []);
      const later = [row(), row(), row()];
      const commits = later.map((r) => sink.write(rows(r), []));
      await first;
      expect(await stored([a.id])).toEqual([a.id]);
      await Promise.all(commits);
      expect(await stored(later.map((r) => r.id))).toEqual(later.map((r) => r.id).sort());
      expect(inserts).toHaveBeenCalledTimes(2); // the first alone, then the three that came meanwhile
    } finally {
      inserts.mockRestore();
    }
  });

  it('a failed insert rejects only the writes whose rows it held; the next ones still land', async () => {
    const sink = new GroupInsert(ch());
    const good = row();
    const failed = sink.write(badRow, []);
    const next = sink.write(rows(good), []);
    await expect(failed).rejects.toThrow();
    await next;
    expect(await stored([good.id])).toEqual([good.id]);
  });

  it('when a shared insert fails, each write is inserted on its own: only the refused rows fail', async () => {
    const sink = new GroupInsert(ch());
    const inserts = jest.spyOn(ch(), 'insertRowBinary');
    try {
      const first = row();
      const firstLanded = sink.write(rows(first), []); // alone, under way while the next two are written
      const bad = sink.write(badRow, []);
      const good = [row(), row()];
      const goodLanded = sink.write(rows(...good), []);
      await firstLanded;
      await expect(bad).rejects.toThrow();
      await goodLanded;
      expect(await stored([first.id, ...good.map((r) => r.id)])).toEqual([first.id, ...good.map((r) => r.id)].sort());
      expect(inserts).toHaveBeenCalledTimes(4); // the first; the shared one that failed; then each write alone
    } finally {
      inserts.mockRestore();
    }
  });

  it('the body buffers of earlier inserts are filled again: every insert holds exactly its own rows, also after a failed one', async () => {
    const sink = new GroupInsert(ch());
    const bodies: Buffer[] = [];
    const inserts = jest.spyOn(ch(), 'insertRowBinary').mockImplementation(async function (this: unknown, ...args) {
      bodies.push(Buffer.from(args[2])); // a copy: the buffer itself is reused
      return jest.requireActual<typeof import('@th/clickhouse')>('@th/clickhouse').ClickHouse.prototype.insertRowBinary.apply(ch(), args);
    });
    try {
      const written: string[] = [];
      const all: { id: string; bytes: Buffer }[] = [];
      for (let round = 0; round < 6; round++) {
        // one write alone, then a group that came meanwhile: two inserts per round, buffers taking turns
        const alone = row();
        const group = [row(), row(), row()];
        const landed = [sink.write(rows(alone), []), sink.write(rows(...group.slice(0, 2)), []), sink.write(rows(group[2]), [])];
        if (round === 3) await expect(sink.write(badRow, [])).rejects.toThrow();
        await Promise.all(landed);
        written.push(alone.id, ...group.map((r) => r.id));
        all.push(alone, ...group);
      }
      expect(await stored(written)).toEqual([...written].sort());
      // Each successful insert's body is exactly the rows written for it, each once: nothing left over from a reused buffer.
      for (const b of bodies.filter((x) => !x.includes('not a run row'))) {
        const held = all.filter((r) => b.includes(r.bytes));
        for (const r of held) expect(b.indexOf(r.bytes)).toBe(b.lastIndexOf(r.bytes));
        expect(held.reduce((n, r) => n + r.bytes.length, 0)).toBe(b.length);
      }
      expect(bodies.length).toBeGreaterThanOrEqual(12);
    } finally {
      inserts.mockRestore();
    }
  });

  it('a write of nothing resolves at once, also while an insert is under way', async () => {
    const sink = new GroupInsert(ch());
    await sink.write(() => undefined, []);
    const busy = sink.write(rows(row()), []);
    await sink.write(() => undefined, []);
    await busy;
  });

  /** Resolves with 'linger' after ms unless `p` settles first (then with 'landed'). */
  const before = (p: Promise<unknown>, ms: number) =>
    Promise.race([p.then(() => 'landed' as const), new Promise<'linger'>((r) => setTimeout(() => r('linger'), ms).unref())]);

  describe('lingering under load', () => {
    /** a alone; b while a's insert runs; c 50 ms after a landed. Returns how many inserts wrote them. */
    const underLoad = async (options: GroupInsertOptions): Promise<number> => {
      const sink = new GroupInsert(ch(), options);
      const inserts = jest.spyOn(ch(), 'insertRowBinary');
      try {
        const [a, b, c] = [row(), row(), row()];
        const first = sink.write(rows(a), []);
        const second = sink.write(rows(b), []);
        await first;
        await new Promise((r) => setTimeout(r, 50));
        const third = sink.write(rows(c), []);
        await Promise.all([second, third]);
        expect(await stored([a.id, b.id, c.id])).toEqual([a.id, b.id, c.id].sort());
        return inserts.mock.calls.length;
      } finally {
        inserts.mockRestore();
      }
    };

    it('rows that come in while the next insert lingers join it', async () => {
      expect(await underLoad({ lingerMs: 1_000, lingerBytes: 1 << 20 })).toBe(2); // a; then b and c together
    });

    it('without a linger the next insert starts as soon as the last one landed', async () => {
      expect(await underLoad({ lingerMs: 0, lingerBytes: 1 << 20 })).toBe(3); // a; b; c
    });

    it('a write while no insert is under way is not held back by the linger', async () => {
      const sink = new GroupInsert(ch(), { lingerMs: 60_000, lingerBytes: 1 << 30 });
      const r = row();
      expect(await before(sink.write(rows(r), []), 30_000)).toBe('landed');
      expect(await stored([r.id])).toEqual([r.id]);
    });

    it('a body that reaches lingerBytes goes without waiting out the linger', async () => {
      const sink = new GroupInsert(ch(), { lingerMs: 60_000, lingerBytes: 1 });
      const [a, b] = [row(), row()];
      const first = sink.write(rows(a), []);
      const second = sink.write(rows(b), []); // already over lingerBytes when a lands
      await first;
      expect(await before(second, 30_000)).toBe('landed');
      const c = row();
      const third = sink.write(rows(c), []); // alone again: at once
      expect(await before(third, 30_000)).toBe('landed');
      expect(await stored([a.id, b.id, c.id])).toEqual([a.id, b.id, c.id].sort());
    });

    it('a write that brings a lingering body to lingerBytes ends the wait', async () => {
      const size = row().bytes.length;
      const sink = new GroupInsert(ch(), { lingerMs: 60_000, lingerBytes: 2 * size });
      const [a, b, c] = [row(), row(), row()];
      const first = sink.write(rows(a), []);
      const second = sink.write(rows(b), []); // one row: under lingerBytes, so it lingers once a lands
      await first;
      expect(await before(second, 200)).toBe('linger');
      const third = sink.write(rows(c), []); // two rows: the body is full
      expect(await before(Promise.all([second, third]), 30_000)).toBe('landed');
      expect(await stored([a.id, b.id, c.id])).toEqual([a.id, b.id, c.id].sort());
    });
  });

  it('attachments land with their generation', async () => {
    const sink = new GroupInsert(ch());
    const r = row();
    await sink.write(rows(r), [JSON.stringify({ tenant_id: tenant, run_id: r.id, name: 'a.txt', mime_type: 'text/plain', data: 'aGk=', version: 1 })]);
    const attached = await ch().query<{ name: string }>('SELECT name FROM run_attachments WHERE tenant_id = {t:UUID} AND run_id = {id:UUID}', { t: tenant, id: r.id });
    expect(attached.map((x) => x.name)).toEqual(['a.txt']);
    expect(await stored([r.id])).toEqual([r.id]);
  });
});
