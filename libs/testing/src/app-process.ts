import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { freePort } from '@th/platform';

export { freePort };

/** The repository root, found from this file whether it runs from src (jest) or dist. */
export function repoRoot(): string {
  let dir = __dirname;
  for (let i = 0; i < 8; i++) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg) && (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'tracehouse') return dir;
    dir = dirname(dir);
  }
  throw new Error('repository root not found');
}


export interface AppProcess {
  child: ChildProcess;
  url: string;
  log(): string;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

/**
 * Starts a compiled app as its own OS process (`node scripts/run.js <app>`, after `npm run build`)
 * on 127.0.0.1 and waits until /health/ready answers 200.
 */
export async function startAppProcess(app: string, env: Record<string, string>, opts: { port?: number; timeoutMs?: number; logFile?: string } = {}): Promise<AppProcess> {
  const port = opts.port ?? (await freePort());
  const root = repoRoot();
  // TH_CHILD_NODE_ARGS lets a benchmark profile the services it starts (e.g. --cpu-prof).
  // The flags every service starts with (scripts/node-flags.js, shared with npm start).
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const serviceFlags = require(join(root, 'scripts', 'node-flags.js')) as string[];
  const nodeArgs = [...serviceFlags, ...(process.env.TH_CHILD_NODE_ARGS ?? '').split(' ').filter(Boolean)];
  // With `logFile` the output goes to that file and the process does not hold this one open: a process that
  // outlives the test file that started it (sharedCluster) leaves no pipe or handle behind in the jest worker.
  const out = opts.logFile === undefined ? null : openSync(opts.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, [...nodeArgs, join(root, 'scripts', 'run.js'), app], {
      cwd: root,
      // Rate limits off unless the caller turns them on: the spec's production values (1 stats call per 10 s per key) would throttle tests and benchmarks.
      // WEB_LINK_PORT 0: a test's standalone does not take the SDK's link port (3000) from the machine.
      env: { ...process.env, LOG_LEVEL: 'warn', RATE_LIMIT_ENABLED: 'false', WEB_LINK_PORT: '0', ...env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: out === null ? ['ignore', 'pipe', 'pipe'] : ['ignore', out, out],
    });
  } finally {
    if (out !== null) closeSync(out);
  }
  if (out !== null) child.unref();
  let log = '';
  // TH_CHILD_LOG_DIR keeps each service's whole log in a file (for diagnosing a benchmark run).
  const logFile = process.env.TH_CHILD_LOG_DIR ? join(process.env.TH_CHILD_LOG_DIR, `${app}-${port}.log`) : null;
  const keep = (d: Buffer) => {
    log = (log + d.toString()).slice(-20_000);
    if (logFile) appendFileSync(logFile, d);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const readLog = () => (opts.logFile === undefined ? log : readFileSync(opts.logFile, 'utf8').slice(-20_000));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${app} exited (${child.exitCode ?? child.signalCode}):\n${readLog()}`);
    try {
      const r = await fetch(`${url}/health/ready`);
      if (r.status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${app} not ready in time:\n${readLog()}`);
    }
    await new Promise((r) => setTimeout(r, 150));
  }
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const end = async (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const t = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(t);
    }
    process.removeListener('exit', killOnExit);
  };
  return { child, url, log: readLog, stop: () => end('SIGTERM'), kill: () => end('SIGKILL') };
}
