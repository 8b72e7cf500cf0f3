import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunDir, removeStaleRunDirs, RUN_DIR_PREFIX } from './run-dir';

describe('socket folders of control planes that stopped without closing', () => {
  let parent: string;
  beforeEach(() => {
    parent = mkdtempSync(join(tmpdir(), 'th-run-dir-spec-'));
  });
  afterEach(() => rmSync(parent, { recursive: true, force: true }));

  const folder = (name: string, owner?: object) => {
    const dir = join(parent, `${RUN_DIR_PREFIX}${name}`);
    mkdirSync(join(dir, 'abc123', 'net'), { recursive: true });
    writeFileSync(join(dir, 'abc123', 'net', 'proxy.sock'), '');
    if (owner) writeFileSync(join(dir, 'owner'), JSON.stringify(owner));
    return dir;
  };

  it('removes only the folders whose recorded owner process is gone', () => {
    // A pid that has just exited (and was reaped).
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const mine = createRunDir(parent);
    const ownerOfMine = JSON.parse(readFileSync(join(mine, 'owner'), 'utf8')) as { pid: number; start: string | null };
    expect(ownerOfMine.pid).toBe(process.pid);
    const crashed = folder('crashed', { pid: dead, start: '1' });
    const reused = folder('reused', { pid: process.pid, start: `${ownerOfMine.start}0` });
    const unknown = folder('unknown');
    const garbled = folder('garbled', { pid: 'x' });
    const other = join(parent, 'not-ours');
    mkdirSync(other);

    const removed = removeStaleRunDirs(parent);

    expect(removed.sort()).toEqual([crashed, reused].sort());
    expect(existsSync(crashed)).toBe(false);
    expect(existsSync(reused)).toBe(false);
    expect(existsSync(mine)).toBe(true);
    expect(existsSync(unknown)).toBe(true);
    expect(existsSync(garbled)).toBe(true);
    expect(existsSync(other)).toBe(true);
    // Nothing left to remove the second time.
    expect(removeStaleRunDirs(parent)).toEqual([]);
  });

  it('keeps a folder whose owner is alive (a process of this user other than this one)', () => {
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.ppid))']);
    // The parent of that child is this process: alive. Without a start time the pid alone decides.
    const kept = folder('alive', { pid: Number(child.stdout.toString()), start: null });
    expect(removeStaleRunDirs(parent)).toEqual([]);
    expect(existsSync(kept)).toBe(true);
  });

  it('finds nothing in a missing temporary directory', () => {
    expect(removeStaleRunDirs(join(parent, 'missing'))).toEqual([]);
  });
});
