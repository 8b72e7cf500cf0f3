import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Once this Node process is gone, kills the process whose pid is in `pidFile` and removes `removeDir`.
 * `process.on('exit')` is not enough: it does not run when Node dies on a signal (jest kills its
 * workers), and inside jest's sandbox `process` is a copy whose 'exit' listeners never fire. A leaked
 * broker would keep its ports and heap; a leaked folder fills /tmp.
 */
export function spawnWatchdog(pidFile: string | undefined, removeDir: string | undefined): void {
  const script = [
    `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done`,
    `if [ -n "$1" ] && [ -f "$1" ]; then kill -9 "$(cat "$1")" 2>/dev/null; fi`,
    `if [ -n "$2" ]; then sleep 1; rm -rf "$2"; fi`,
    'exit 0',
  ].join('\n');
  const dog = spawn('bash', ['-c', script, 'th-test-watchdog', pidFile ?? '', removeDir ?? ''], {
    detached: true,
    stdio: 'ignore',
  });
  dog.on('error', () => undefined);
  dog.unref();
}

/**
 * Creates `dir` if needed and removes it once this process (a jest worker, say) has exited: for folders
 * shared by the test files of one worker. A marker in it keeps to one watchdog per folder, as module
 * state does not survive from one test file to the next.
 */
export function removeWhenProcessExits(dir: string): void {
  const marker = join(dir, '.removed-on-exit');
  if (existsSync(marker)) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(marker, String(process.pid));
  spawnWatchdog(undefined, dir);
}
