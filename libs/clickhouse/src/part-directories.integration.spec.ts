import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClickHouse } from './clickhouse.client';
import { migrateClickHouse } from './migrator';
import { spreadPartDirectories } from './part-directories';

const dir = join(tmpdir(), `th-part-dirs-${process.pid}`);
const engine = join(dir, 'engine');

/** Table directories of the engine (`store/<xyz>/<uuid>`). */
function tableDirs(): string[] {
  const store = join(engine, 'store');
  return readdirSync(store).flatMap((shard) => readdirSync(join(store, shard)).map((t) => join(store, shard, t)));
}

/** Whether `lsattr` shows the T attribute on a directory. */
function hasTopDir(path: string): boolean {
  const flags = execFileSync('lsattr', ['-d', path]).toString().split(' ')[0];
  return flags.includes('T');
}

/** Whether this file system takes the attribute at all (ext2/3/4 do). */
function supportsTopDir(): boolean {
  const probe = join(dir, 'probe');
  mkdirSync(probe, { recursive: true });
  try {
    execFileSync('chattr', ['+T', probe], { stdio: 'ignore' });
    return hasTopDir(probe);
  } catch {
    return false;
  }
}

describe('spreadPartDirectories (chDB)', () => {
  let ch: ClickHouse;
  let supported: boolean;

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    supported = supportsTopDir();
    ch = ClickHouse.connect({ kind: 'embedded', path: engine });
    await migrateClickHouse(ch);
  });

  afterAll(async () => {
    await ch.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('marks every table directory when the engine is migrated, or reports why it could not', () => {
    const tables = tableDirs();
    expect(tables.length).toBeGreaterThan(5);
    if (supported) {
      expect(tables.filter((t) => !hasTopDir(t))).toEqual([]);
    } else {
      const r = spreadPartDirectories(engine);
      expect(r.marked).toBe(0);
      expect(r.error).toBeTruthy();
    }
  });

  it('marks a table created later at the next migration (every start), and its parts are written and read as before', async () => {
    await ch.command('CREATE TABLE part_dirs_later (k UInt32, v String) ENGINE = MergeTree ORDER BY k');
    const [{ path }] = await ch.query<{ path: string }>("SELECT data_paths[1] AS path FROM system.tables WHERE database = currentDatabase() AND name = 'part_dirs_later'");
    expect(hasTopDir(path)).toBe(false);
    await migrateClickHouse(ch);
    expect(hasTopDir(path)).toBe(supported);
    expect(tableDirs().filter((t) => hasTopDir(t)).length).toBe(supported ? tableDirs().length : 0);

    for (let i = 0; i < 3; i++) await ch.command(`INSERT INTO part_dirs_later SELECT number, toString(number) FROM numbers(${i * 100}, 100)`);
    const rows = await ch.query<{ n: number; s: string }>('SELECT count() AS n, toString(sum(k)) AS s FROM part_dirs_later');
    expect(rows).toEqual([{ n: 300, s: String((299 * 300) / 2) }]);
  });

  it('gives the count it marked, and 0 for a directory without an engine store', () => {
    const r = spreadPartDirectories(engine);
    if (supported) expect(r).toEqual({ marked: tableDirs().length });
    expect(spreadPartDirectories(join(dir, 'no-engine-here'))).toEqual({ marked: 0 });
  });

  it('reports a missing chattr instead of failing', () => {
    expect(spreadPartDirectories(engine, join(dir, 'no-such-bin', 'chattr'))).toEqual({ marked: 0, error: 'chattr not found' });
  });
});
