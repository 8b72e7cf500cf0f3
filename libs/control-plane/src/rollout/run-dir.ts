import { chmodSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The prefix of a control plane's folder of sandbox sockets under the temporary directory. */
export const RUN_DIR_PREFIX = 'th-run-';
const OWNER_FILE = 'owner';

interface Owner {
  pid: number;
  /** The process's start time (/proc/<pid>/stat, field 22), so a reused pid is not taken for the owner. */
  start: string | null;
}

function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command (field 2) is in parentheses and may hold spaces: count fields after its closing one.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

function alive(owner: Owner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    // EPERM: a process of another user holds the pid, so it is alive (and the folder was not made by it).
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (owner.start === null) return true;
  const now = startTimeOf(owner.pid);
  return now === null || now === owner.start;
}

/** A new folder for this process's sandbox sockets, recording its owner so that a later start can tell it is stale. */
export function createRunDir(parent = tmpdir()): string {
  const dir = mkdtempSync(join(parent, RUN_DIR_PREFIX));
  chmodSync(dir, 0o711); // traversable: the sandboxes' bwrap binds their relays from there
  const owner: Owner = { pid: process.pid, start: startTimeOf(process.pid) };
  writeFileSync(join(dir, OWNER_FILE), JSON.stringify(owner), { mode: 0o600 });
  return dir;
}

/**
 * Removes the folders createRunDir left behind when their process died without closing (a crash, a kill -9): only
 * folders of this user whose recorded owner is gone. Folders without an owner record, or of another user, stay.
 * Returns the folders removed.
 */
export function removeStaleRunDirs(parent = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(parent).filter((n) => n.startsWith(RUN_DIR_PREFIX));
  } catch {
    return removed;
  }
  const uid = process.getuid?.();
  for (const name of names) {
    const dir = join(parent, name);
    try {
      const st = lstatSync(dir);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) continue;
      const owner = JSON.parse(readFileSync(join(dir, OWNER_FILE), 'utf8')) as Partial<Owner>;
      if (!Number.isInteger(owner.pid) || (owner.pid as number) <= 0) continue;
      if (alive({ pid: owner.pid as number, start: typeof owner.start === 'string' ? owner.start : null })) continue;
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      // No owner record (or unreadable): not known to be stale.
    }
  }
  return removed;
}
