import { randomBytes } from 'node:crypto';
import { existsSync, renameSync, rmSync } from 'node:fs';

/** JVM arguments for a test server's class archive, and what to do once that JVM has exited. */
export interface ClassArchive {
  args: string[];
  /** Call when the JVM has exited: keeps the archive it wrote, if any. */
  settle(): void;
}

/**
 * A test server's classes as a CDS archive at `archive` (one per server version, under .cache): the first JVM
 * started without it writes one at exit, under a name of its own renamed into place when complete; later JVMs map
 * it instead of loading and verifying the jars' classes (about a second of CPU less per start). A killed JVM writes
 * nothing, and a missing or stale archive only makes the JVM load its classes as usual.
 */
export function classArchive(archive: string): ClassArchive {
  if (existsSync(archive)) return { args: [`-XX:SharedArchiveFile=${archive}`], settle: () => undefined };
  const written = `${archive}.${process.pid}-${randomBytes(4).toString('hex')}`;
  return {
    args: [`-XX:ArchiveClassesAtExit=${written}`],
    settle() {
      if (!existsSync(written)) return;
      try {
        if (!existsSync(archive)) renameSync(written, archive);
      } catch {
        // another JVM's archive won the race
      }
      rmSync(written, { force: true });
    },
  };
}

/**
 * Under jest, the quick compiler only: a test server's light traffic gains less from C2's compilations than they
 * cost in CPU. Benchmarks, which load their servers, keep the full compiler.
 */
export function compilerArgs(): string[] {
  return process.env.JEST_WORKER_ID ? ['-XX:TieredStopAtLevel=1'] : [];
}
