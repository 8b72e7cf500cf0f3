import { randomBytes, randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouse } from './clickhouse.client';
import { CLICKHOUSE_MIGRATIONS_DIR, migrateClickHouse } from './migrator';
import { byIdCondition, byIdsCondition, idOrder, RUNS_BY_ID } from './runs-by-id';

/** A UUIDv7 whose timestamp is `ms`, as the SDKs generate run ids. */
function uuidv7(ms: number): string {
  const b = randomBytes(16);
  b.writeUIntBE(ms, 0, 6);
  b[6] = (b[6] & 0x0f) | 0x70;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

describe('idOrder', () => {
  it('is the first 64 bits of the id in the order of its text', () => {
    expect(idOrder('01a1946a-f928-7c04-a9b3-17a998bd9b90')).toBe(0x01a1946af9287c04n);
    expect(idOrder('FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF')).toBe(0xffffffffffff4fffn);
    const ids = Array.from({ length: 50 }, (_, i) => uuidv7(Date.UTC(2026, 0, 1) + i * 1000));
    expect([...ids].sort((a, b) => (idOrder(a) < idOrder(b) ? -1 : 1))).toEqual([...ids].sort());
  });

  it('gives 0 for text that is not a UUID (the id condition then finds nothing)', () => {
    expect(idOrder('not-a-uuid')).toBe(0n);
    expect(idOrder('')).toBe(0n);
  });

  it('states both key columns for one id and for several', () => {
    const a = '01a1946a-f928-7c04-a9b3-17a998bd9b90';
    expect(byIdCondition('id', a)).toEqual({ sql: 'id_order = {id_order:UInt64} AND id = {id:UUID}', params: { id: a, id_order: idOrder(a) } });
    expect(byIdsCondition('ids', [a, a])).toEqual({
      sql: 'id_order IN {ids_order:Array(UInt64)} AND id IN {ids:Array(UUID)}',
      params: { ids: [a, a], ids_order: [idOrder(a)] },
    });
  });
});

/** On the engine: the migration from run_locator, the engine's id_order, and what a lookup reads. */
describe('runs_by_id on ClickHouse (chDB)', () => {
  const dir = join(tmpdir(), `th-runs-by-id-${process.pid}`);
  const before = join(tmpdir(), `th-runs-by-id-migrations-${process.pid}`);
  const tenant = randomUUID();
  let ch: ClickHouse;
  const row = (id: string, version = 1) => ({
    tenant_id: tenant,
    id,
    session_id: tenant,
    start_time: '2026-11-01 00:00:00.000000',
    trace_id: id,
    dotted_order: 'x',
    version,
    is_deleted: 0,
  });
  const jsonLines = (rows: object[]) => Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n'));

  beforeAll(() => {
    ch = ClickHouse.connect({ kind: 'embedded', path: dir });
    // The migrations as they were before runs_by_id.
    mkdirSync(before, { recursive: true });
    for (const f of readdirSync(CLICKHOUSE_MIGRATIONS_DIR).filter((f) => f.endsWith('.sql') && f < '0012')) copyFileSync(join(CLICKHOUSE_MIGRATIONS_DIR, f), join(before, f));
  });
  afterAll(async () => {
    await ch?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(before, { recursive: true, force: true });
  });

  it('moves the old locator rows over once and empties the old table', async () => {
    await migrateClickHouse(ch, before);
    const old = [uuidv7(Date.UTC(2026, 10, 1)), randomUUID(), randomUUID().toUpperCase()];
    await ch.insertJsonEachRow('run_locator', jsonLines(old.map((id) => row(id, 7))));
    expect(await migrateClickHouse(ch)).toContain('0012_runs_by_id');
    const moved = await ch.query<{ id: string; version: number }>(`SELECT id, version FROM ${RUNS_BY_ID} WHERE tenant_id = {t:UUID} ORDER BY id`, { t: tenant });
    expect(moved.map((r) => r.id).sort()).toEqual(old.map((id) => id.toLowerCase()).sort());
    expect(moved.every((r) => Number(r.version) === 7)).toBe(true);
    expect(await ch.query('SELECT id FROM run_locator')).toEqual([]);
    expect(await migrateClickHouse(ch)).toEqual([]);
  });

  it("computes the same id_order as idOrder, for time-ordered, random and upper-case ids", async () => {
    const ids = [...Array.from({ length: 20 }, (_, i) => uuidv7(Date.UTC(2026, 10, 2) + i)), ...Array.from({ length: 20 }, () => randomUUID()), 'FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF'];
    await ch.insertJsonEachRow(RUNS_BY_ID, jsonLines(ids.map((id) => row(id))));
    const got = await ch.query<{ id: string; o: string }>(`SELECT toString(id) AS id, toString(id_order) AS o FROM ${RUNS_BY_ID} WHERE tenant_id = {t:UUID}`, { t: tenant });
    const byId = new Map(got.map((r) => [r.id, r.o]));
    for (const id of ids) expect(byId.get(id.toLowerCase())).toBe(idOrder(id).toString());
  });

  it('finds runs by one id and by several, and a lookup of new time-ordered ids reads no granule', async () => {
    const base = Date.UTC(2026, 10, 3);
    const stored = Array.from({ length: 30_000 }, (_, i) => uuidv7(base + i));
    await ch.insertJsonEachRow(RUNS_BY_ID, jsonLines(stored.map((id) => row(id))));
    const one = byIdCondition('id', stored[123]);
    expect(await ch.query(`SELECT id FROM ${RUNS_BY_ID} WHERE tenant_id = {t:UUID} AND ${one.sql}`, { t: tenant, ...one.params })).toEqual([{ id: stored[123] }]);
    const some = [stored[5], stored[29_999], randomUUID()];
    const several = byIdsCondition('ids', some);
    const found = await ch.query<{ id: string }>(`SELECT id FROM ${RUNS_BY_ID} WHERE tenant_id = {t:UUID} AND ${several.sql}`, { t: tenant, ...several.params });
    expect(found.map((r) => r.id).sort()).toEqual([stored[5], stored[29_999]].sort());
    // 1,000 ids newer than every stored time-ordered one: the key skips all but the granules at that
    // boundary (the old key, ordered by the id alone, read every granule of the tenant for them).
    const fresh = byIdsCondition('ids', Array.from({ length: 1000 }, (_, i) => uuidv7(base + 60_000 + i)));
    const plan = await ch.query<{ explain: string }>(`EXPLAIN indexes = 1 SELECT id FROM ${RUNS_BY_ID} WHERE tenant_id = {t:UUID} AND ${fresh.sql}`, { t: tenant, ...fresh.params });
    const granules = plan.map((l) => /^\s*Granules: (\d+)\/(\d+)/.exec(l.explain)).filter((m) => m !== null);
    const [, read, of] = granules[granules.length - 1].map(Number);
    expect(of).toBeGreaterThanOrEqual(29);
    expect(read).toBeLessThanOrEqual(2);
  });
});
