import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox, stopSandboxed, type SandboxJob } from './sandbox';

// The real bubblewrap (scripts/test.js installs it): what tenant code sees, and how it is stopped.
const UID = 65534;
const asRoot = process.getuid?.() === 0;

/** Host pids of the processes in a PID namespace. */
function inNamespace(ns: string): string[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p) && (() => {
    try {
      return readlinkSync(`/proc/${p}/ns/pid`) === ns;
    } catch {
      return false;
    }
  })());
}

describe('Sandbox (bubblewrap)', () => {
  const root = mkdtempSync(join(tmpdir(), 'sandbox-spec-'));
  const app = join(root, 'rev', 'src');
  const home = join(root, 'rev', 'home');
  const secretDir = join(root, 'secrets');
  const sb = new Sandbox({ mode: 'bwrap', uid: UID, gid: UID, readOnlyPaths: [] });
  beforeAll(() => {
    for (const d of [app, home, secretDir]) mkdirSync(d, { recursive: true });
    writeFileSync(join(secretDir, 'session-secret'), 'TOP-SECRET-VALUE', { mode: 0o644 });
    writeFileSync(join(app, 'mine.txt'), 'mine');
    chmodSync(root, 0o711); // traversable, not listable: how the driver keeps its work folder
    chmodSync(secretDir, 0o700);
    if (asRoot) for (const d of [app, home]) chownSync(d, UID, UID);
    sb.handOver(app);
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  async function run(script: string, env: Record<string, string> = {}, extra: Partial<SandboxJob> = {}): Promise<{ code: number | null; out: string }> {
    const p = sb.spawn({ argv: ['sh', '-c', script], appDir: app, homeDir: home, cwd: app, env: sb.baseEnv({ appDir: app, homeDir: home }, env), output: 'pipe', ...extra });
    let out = '';
    p.child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    p.child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
    const code = await new Promise<number | null>((res) => p.child.on('close', (c) => res(c)));
    return { code, out };
  }

  it('is available on this machine', () => {
    expect(sb.unavailable()).toBeNull();
  });

  it('sees its own folder at /app, a private /tmp and /proc, its environment only, no host files, an unprivileged uid', async () => {
    const { code, out } = await run(
      [
        'echo "uid=$(id -u)"',
        'echo "pwd=$(pwd)"',
        'cat /app/mine.txt; echo',
        'echo x > /app/written && echo app-writable',
        'echo x > /usr/x 2>/dev/null || echo usr-readonly',
        `cat ${join(secretDir, 'session-secret')} 2>/dev/null || echo secret-unreadable`,
        `ls ${root} 2>/dev/null || echo root-invisible`,
        'echo "procs=$(ls /proc | grep -c "^[0-9]")"',
        'tr "\\0" "\\n" </proc/1/environ | sort | tr "\\n" " "; echo',
        'echo "fds=$(ls /proc/self/fd | tr "\\n" " ")"',
        'echo "home=$HOME tmp=$TMPDIR"',
        'echo "top=$(ls / | tr "\\n" " ")"',
      ].join('; '),
      { GREETING: "it's" },
    );
    expect(code).toBe(0);
    expect(out).toContain(`uid=${asRoot ? UID : process.getuid?.()}`);
    expect(out).toContain('pwd=/app');
    expect(out).toContain('mine');
    expect(out).toContain('app-writable');
    expect(out).toContain('usr-readonly');
    expect(out).toContain('secret-unreadable');
    expect(out).toContain('root-invisible');
    expect(out).not.toContain('TOP-SECRET-VALUE');
    // pid 1 (sh), the subshell running ls and grep: nothing of the host's.
    expect(Number(/procs=(\d+)/.exec(out)?.[1])).toBeLessThan(6);
    const env = /^GREETING.*$/m.exec(out)?.[0] ?? '';
    const names = env.split(' ').filter(Boolean).map((kv) => kv.split('=')[0]);
    expect(names.filter((n) => !['GREETING', 'HOME', 'PATH', 'PWD', 'TMPDIR', 'SHLVL', 'OLDPWD'].includes(n))).toEqual([]);
    expect(env).toContain("GREETING=it's");
    expect(env).not.toMatch(/SECRET|KEY|DATABASE/);
    // Only the standard streams and ls's own directory handle: nothing inherited from the service.
    expect(/fds=(.*)/.exec(out)?.[1].trim().split(' ')).toEqual(['0', '1', '2', '3']);
    expect(out).toContain('home=/home/app tmp=/tmp');
    const top = /top=(.*)/.exec(out)?.[1].trim().split(' ') ?? [];
    expect(top).toEqual(expect.arrayContaining(['app', 'usr', 'tmp', 'proc', 'etc', 'home']));
    expect(top.filter((d) => !['app', 'bin', 'dev', 'etc', 'home', 'lib', 'lib32', 'lib64', 'libx32', 'proc', 'sbin', 'tmp', 'usr'].includes(d))).toEqual([]);
  });

  it('a command that drains on SIGTERM ends within the grace; one that ignores it is killed with its whole tree', async () => {
    const drains = sb.spawn({ argv: ['sh', '-c', 'trap "echo drained; exit 0" TERM; echo ready; sleep 60 & wait'], appDir: app, homeDir: home, cwd: app, env: sb.baseEnv({ appDir: app, homeDir: home }, {}), output: 'pipe' });
    let out = '';
    drains.child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    expect(await drains.commandPid).toEqual(expect.any(Number));
    for (let i = 0; i < 100 && !out.includes('ready'); i++) await new Promise((r) => setTimeout(r, 50)); // a signal before the trap is lost
    let t0 = Date.now();
    await stopSandboxed(drains, 10_000);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(out).toContain('drained');

    const stubborn = sb.spawn({ argv: ['sh', '-c', 'trap "" TERM; (trap "" TERM; sleep 60) & sleep 60; wait'], appDir: app, homeDir: home, cwd: app, env: sb.baseEnv({ appDir: app, homeDir: home }, {}), output: 'ignore' });
    const pid = (await stubborn.commandPid) as number;
    const ns = readlinkSync(`/proc/${pid}/ns/pid`);
    await new Promise((r) => setTimeout(r, 200));
    expect(inNamespace(ns).length).toBeGreaterThanOrEqual(3); // sh, its sleep and the subshell's sleep
    t0 = Date.now();
    await stopSandboxed(stubborn, 800);
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(750);
    expect(took).toBeLessThan(4000);
    for (let i = 0; i < 40 && inNamespace(ns).length > 0; i++) await new Promise((r) => setTimeout(r, 50)); // zombies reaped by init
    expect(inNamespace(ns)).toEqual([]);
  });

  it('a control plane killed while its sandboxes start leaves no tenant code running (compiled: npm run build first)', async () => {
    // The compiled Sandbox in a child node process that kills itself 0-19 ms after starting a sandbox.
    const marker = `31.${Date.now() % 100000}`;
    const script = `
      const { Sandbox } = require(${JSON.stringify(join(__dirname, '..', '..', '..', '..', 'dist', 'libs', 'control-plane', 'src', 'rollout', 'sandbox.js'))});
      const sb = new Sandbox({ mode: 'bwrap', uid: ${UID}, gid: ${UID}, readOnlyPaths: [] });
      const job = { appDir: ${JSON.stringify(app)}, homeDir: ${JSON.stringify(home)} };
      sb.spawn({ argv: ['sleep', '${marker}'], ...job, cwd: job.appDir, env: sb.baseEnv(job, {}), output: 'ignore' });
      setTimeout(() => process.kill(process.pid, 'SIGKILL'), Number(process.argv[1]));`;
    for (let delay = 0; delay < 20; delay++) spawnSync(process.execPath, ['-e', script, String(delay)], { stdio: 'ignore', timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 1500));
    const withMarker = (pred: (argv: string[]) => boolean) =>
      readdirSync('/proc').filter((p) => /^\d+$/.test(p) && (() => {
        try {
          const argv = readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0');
          return argv.includes(marker) && pred(argv) && !readFileSync(`/proc/${p}/stat`, 'utf8').includes(') Z ');
        } catch {
          return false;
        }
      })());
    const running = withMarker((argv) => argv[0] === 'sleep');
    // What bwrap's --disable-userns may leave (a bwrap whose child never ran) is reaped by the next control plane.
    sb.reapOrphans(join(root, 'rev'));
    await new Promise((r) => setTimeout(r, 200));
    expect(withMarker((argv) => argv[0].endsWith('bwrap'))).toEqual([]);
    expect(running).toEqual([]);
  });

  it('hands unpacked sources to the sandbox user without following links out of them, and clears set-id bits', () => {
    if (!asRoot) return; // ownership changes need root (the service's own user needs none)
    const src = join(root, 'handover');
    mkdirSync(join(src, 'sub'), { recursive: true });
    writeFileSync(join(src, 'sub', 'tool'), '#!/bin/sh\n', { mode: 0o4755 });
    symlinkSync(secretDir, join(src, 'link-to-host'));
    sb.handOver(src);
    expect(statSync(join(src, 'sub', 'tool'))).toMatchObject({ uid: UID, gid: UID });
    expect(statSync(join(src, 'sub', 'tool')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(src, 'link-to-host')).uid).toBe(UID);
    expect(statSync(join(secretDir, 'session-secret')).uid).toBe(0); // the link's target is not the tenant's
    expect(statSync(secretDir).uid).toBe(0);
  });

  it('unsafe-none runs the command directly, with host paths and only the environment it is given', async () => {
    const unsafe = new Sandbox({ mode: 'unsafe-none', uid: UID, gid: UID, readOnlyPaths: [] });
    expect(unsafe.unavailable()).toBeNull();
    const job = { appDir: app, homeDir: home };
    const p = unsafe.spawn({ argv: ['sh', '-c', 'pwd; echo "home=$HOME"; env | cut -d= -f1 | sort | tr "\\n" " "'], ...job, cwd: app, env: unsafe.baseEnv(job, { A: '1' }), output: 'pipe' });
    let out = '';
    p.child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
    await p.exited;
    await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain(app);
    expect(out).toContain(`home=${home}`);
    expect(out.trim().split('\n').at(-1)?.trim().split(' ').filter((k) => !['PWD', 'SHLVL', 'OLDPWD', '_'].includes(k))).toEqual(['A', 'HOME', 'PATH']);
  });
});

