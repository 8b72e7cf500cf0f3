import { randomUUID } from 'node:crypto';
import { suiteClickHouse, uuidv7 } from '@th/testing';
import { NewRunFilter, uuidv7Millis } from './new-run-filter';


describe('new-run filter', () => {
  const engine = suiteClickHouse('new-run-filter');
  const tenant = randomUUID();
  const key = (id: string) => `${tenant}:${id}`;
  const T = Date.UTC(2026, 10, 20, 10);

  const store = async (...ids: string[]) => {
    const rows = ids.map((id) => ({ tenant_id: tenant, id, session_id: randomUUID(), start_time: '2026-11-20 10:00:00.000000', trace_id: id, dotted_order: '', version: 1, is_deleted: 0 }));
    await engine().insertJsonEachRow('runs_by_id', Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n')));
  };

  it('reads the time of a UUIDv7 and nothing from other ids', () => {
    expect(uuidv7Millis(uuidv7(T))).toBe(T);
    expect(uuidv7Millis(randomUUID())).toBeNull(); // version 4
    expect(uuidv7Millis('not-a-uuid')).toBeNull();
  });

  it('only a UUIDv7 newer than every stored one and not written since is certain to be new', async () => {
    const filter = new NewRunFilter(1000);
    const storedOld = uuidv7(T);
    const storedV4 = randomUUID();
    await store(storedOld, uuidv7(T + 5_000), storedV4);
    const older = uuidv7(T + 1_000); // never stored, but older than the newest stored id
    const newer = uuidv7(T + 10_000);
    // before its floor is read, every run may exist
    expect(filter.mayExist(key(newer), newer)).toBe(true);
    await filter.start(engine());
    expect(filter.mayExist(key(storedOld), storedOld)).toBe(true);
    expect(filter.mayExist(key(storedV4), storedV4)).toBe(true);
    expect(filter.mayExist(key(older), older)).toBe(true);
    expect(filter.mayExist(key(newer), newer)).toBe(false);
    expect(filter.mayExist(key(randomUUID()), randomUUID())).toBe(true);
    // once this writer writes it, it may exist
    filter.note(key(newer), newer);
    expect(filter.mayExist(key(newer), newer)).toBe(true);
    // another workspace's run with the same id is another run
    const elsewhere = `${randomUUID()}:${newer}`;
    expect(filter.mayExist(elsewhere, newer)).toBe(false);
    // reset (another writer may have written since): everything may exist again
    filter.reset();
    expect(filter.mayExist(key(uuidv7(T + 20_000)), uuidv7(T + 20_000))).toBe(true);
  });

  it('runs written while the floor is being read are remembered, even when the read lands below them', async () => {
    const filter = new NewRunFilter(1000);
    const during = uuidv7(T + 60_000);
    const reading = filter.start(engine());
    filter.note(key(during), during); // written while the floor is read (the read may not see it)
    await reading;
    expect(filter.mayExist(key(during), during)).toBe(true);
    const later = uuidv7(T + 70_000);
    expect(filter.mayExist(key(later), later)).toBe(false);
  });

  it('past its bound the floor rises over the older half of what it remembers, which is then looked up again', async () => {
    const filter = new NewRunFilter(10);
    await filter.start(engine());
    const base = T + 100_000;
    const written = Array.from({ length: 11 }, (_, i) => uuidv7(base + i * 1_000));
    for (const id of written) filter.note(key(id), id);
    expect(filter.notedCount).toBeLessThanOrEqual(6);
    // every id it wrote still may exist, remembered or under the new floor
    for (const id of written) expect(filter.mayExist(key(id), id)).toBe(true);
    // a never-written id under the new floor is looked up too; above the newest written, it is new
    const under = uuidv7(base + 500);
    expect(filter.mayExist(key(under), under)).toBe(true);
    const above = uuidv7(base + 20_000);
    expect(filter.mayExist(key(above), above)).toBe(false);
  });

  it('notes dropped before the floor was read still count once it is read', async () => {
    const filter = new NewRunFilter(4);
    const base = T + 200_000;
    const reading = filter.start(engine());
    const written = Array.from({ length: 5 }, (_, i) => uuidv7(base + i * 1_000));
    for (const id of written) filter.note(key(id), id);
    await reading;
    for (const id of written) expect(filter.mayExist(key(id), id)).toBe(true);
  });
});
