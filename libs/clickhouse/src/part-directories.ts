import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface PartDirectoriesResult {
  /** Table directories now carrying the attribute. */
  marked: number;
  /** Why nothing was marked (no chattr, or a file system without the attribute); the engine works the same either way. */
  error?: string;
}

/**
 * Gives every table directory of an in-process engine (`<path>/store/<xyz>/<uuid>`) ext4's "top of
 * hierarchy" attribute (`chattr +T`), so the allocator places each new part directory, and the files
 * written in it, in a block group of its own choosing rather than next to the table directory.
 *
 * Why: on an ext4 without a journal, allocating an inode skips every inode of the group freed in the
 * last minutes, checking each one in the buffer cache. Parts are created and deleted by the thousand
 * (about 27 files per insert, and every merge frees parts), and deleting a data directory frees as
 * many again, so files created next to them cost 0.5-1.2 ms each on the test machine (44-79 µs with
 * the attribute, the same 3,000 files after the same churn), and the kernel took a fifth of the
 * service's CPU under bench/ingest. Elsewhere (a journaled ext4, xfs) the attribute changes nothing
 * that matters, and on a file system without it the call fails and is reported, nothing more.
 */
export function spreadPartDirectories(enginePath: string, chattr = 'chattr'): PartDirectoriesResult {
  const store = join(enginePath, 'store');
  if (!existsSync(store)) return { marked: 0 };
  const tables: string[] = [];
  for (const shard of readdirSync(store, { withFileTypes: true })) {
    if (!shard.isDirectory()) continue;
    for (const table of readdirSync(join(store, shard.name), { withFileTypes: true })) {
      if (table.isDirectory()) tables.push(join(store, shard.name, table.name));
    }
  }
  if (tables.length === 0) return { marked: 0 };
  try {
    execFileSync(chattr, ['+T', ...tables], { stdio: ['ignore', 'ignore', 'pipe'] });
    return { marked: tables.length };
  } catch (err) {
    const e = err as { code?: string; stderr?: Buffer; message: string };
    return { marked: 0, error: e.code === 'ENOENT' ? 'chattr not found' : (e.stderr?.toString().trim() || e.message) };
  }
}
