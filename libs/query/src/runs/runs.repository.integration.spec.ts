import { randomUUID } from 'node:crypto';
import { suiteClickHouse } from '@th/testing';
import { RunsRepository, type Condition } from './runs.repository';

/**
 * RunsRepository.list on the engine (chDB): its candidates are read in the sorting key's order in
 * windows of raw rows, so a window can end inside one run's versions. Each run must still come out
 * once, at its newest version, and a run whose newest write deleted it must not come out at all.
 */
describe('RunsRepository.list (chDB)', () => {
  const ch = suiteClickHouse('runs-list');
  const tenant = randomUUID();
  const session = randomUUID();
  const ids = Array.from({ length: 40 }, () => randomUUID());
  const t0 = Date.UTC(2026, 10, 1);
  const at = (i: number) => new Date(t0 + i * 1000).toISOString().replace('T', ' ').replace('Z', '');
  const row = (i: number, version: number, isDeleted = 0) => ({
    tenant_id: tenant,
    session_id: session,
    id: ids[i],
    trace_id: ids[i],
    name: `r${i}-v${version}`,
    start_time: at(i),
    is_root: true,
    dotted_order: String(i),
    version,
    is_deleted: isDeleted,
  });
  const insert = (rows: object[]) => ch().insertJsonEachRow('runs', Buffer.from(rows.map((r) => JSON.stringify(r)).join('\n')));
  const project: Condition = { sql: 'session_id = {session:UUID}', params: { session } };
  const names = (rows: Record<string, unknown>[]) => rows.map((r) => String(r.name));

  beforeAll(async () => {
    // Unmerged, the versions stay separate rows (a merge would keep only each run's newest).
    await ch().command('SYSTEM STOP MERGES runs');
    await insert(ids.map((_, i) => row(i, 1)));
    // Run 36 (the fourth newest) gets 29 more versions, each its own part: more rows than a first window.
    // Written newest first, so later parts hold older versions.
    for (let v = 30; v >= 2; v--) await insert([row(36, v)]);
    // Run 35's newest write deleted it; run 30's newest version is in a later part than its first.
    await insert([row(35, 2, 1)]);
    await insert([row(30, 2)]);
  });

  it('holds the versions as separate rows', async () => {
    const [n] = await ch().query<{ n: number }>('SELECT count() AS n FROM runs WHERE tenant_id = {t:UUID} AND id = {id:UUID}', { t: tenant, id: ids[36] });
    expect(Number(n.n)).toBe(30);
  });

  it('gives the newest runs once each, at their newest version, when a window ends inside a run', async () => {
    const repo = new RunsRepository(ch());
    const page = await repo.list({ tenant_id: tenant }, [project], ['name', 'start_time'], 'desc', 5);
    expect(names(page)).toEqual(['r39-v1', 'r38-v1', 'r37-v1', 'r36-v30', 'r34-v1']);
  });

  it('pages through every live run in both orders, each once at its newest version', async () => {
    const repo = new RunsRepository(ch());
    const expected = ids.flatMap((_, i) => (i === 35 ? [] : [`r${i}-v${i === 36 ? 30 : i === 30 ? 2 : 1}`]));
    for (const order of ['asc', 'desc'] as const) {
      const seen: string[] = [];
      let cursor: { t: string; id: string } | null = null;
      for (let pageNo = 0; pageNo < 20; pageNo++) {
        const conditions: Condition[] = [project];
        if (cursor)
          conditions.push({
            sql: `(start_time, id) ${order === 'asc' ? '>' : '<'} (parseDateTime64BestEffort({ct:String}, 6, 'UTC'), toUUID({cid:String}))`,
            params: { ct: cursor.t, cid: cursor.id },
          });
        const page = await repo.list({ tenant_id: tenant }, conditions, ['name', 'start_time'], order, 3);
        if (page.length === 0) break;
        seen.push(...names(page));
        const last = page[page.length - 1];
        cursor = { t: String(last.start_time), id: String(last.id) };
      }
      expect(seen).toEqual(order === 'asc' ? expected : [...expected].reverse());
    }
  });

  it('matches a filter against the newest version only', async () => {
    const repo = new RunsRepository(ch());
    const byName = (name: string): Condition => ({ sql: 'name = {n:String}', params: { n: name } });
    expect(await repo.list({ tenant_id: tenant }, [project, byName('r36-v1')], ['name'], 'desc', 10)).toEqual([]);
    expect(await repo.list({ tenant_id: tenant }, [project, byName('r35-v1')], ['name'], 'desc', 10)).toEqual([]);
    expect(names(await repo.list({ tenant_id: tenant }, [project, byName('r36-v30')], ['name'], 'desc', 10))).toEqual(['r36-v30']);
  });
});
