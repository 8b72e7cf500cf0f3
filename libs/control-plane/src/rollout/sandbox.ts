import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, lchownSync, lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { Duplex } from 'node:stream';
import { INSIDE_SOCKETS, PROXY_PRELOAD_INSIDE } from './sandbox-network';

/** bwrap: tenant code in namespaces as an unprivileged user; unsafe-none: as the service's own user (an operator's explicit choice). */
export const SANDBOX_MODES = ['bwrap', 'unsafe-none'] as const;
export type SandboxMode = (typeof SANDBOX_MODES)[number];

export interface SandboxOptions {
  mode: SandboxMode;
  /** The unprivileged user and group tenant code runs as when the service runs as root. */
  uid: number;
  gid: number;
  /** Host paths tenant code may read (the agent server's code, node's install), bound read-only where they are. */
  readOnlyPaths: string[];
  /** Resource limits of every sandboxed process (bwrap only); none when absent. */
  limits?: SandboxLimits;
}

/** What one sandboxed process may use, set with setrlimit before the sandbox starts (inherited by its whole tree). */
export interface SandboxLimits {
  /** Writable private memory (heap, anonymous mappings) per process, in bytes: RLIMIT_DATA. */
  memoryBytes: number;
  /** Largest file a process may write, in bytes: RLIMIT_FSIZE (the writer gets SIGXFSZ/EFBIG). */
  fileSizeBytes: number;
  /** Size of the sandbox's private /tmp (memory-backed), in bytes. */
  tmpBytes: number;
  /** Processes and threads of the sandbox user, in all sandboxes together (RLIMIT_NPROC; applied when the service runs as root, with a user of its own). */
  processes: number;
  /** Open descriptors per process: RLIMIT_NOFILE. */
  openFiles: number;
  /** Scheduling niceness of tenant code (0-19): the service's own work goes first when the CPUs are busy. */
  nice: number;
}

/** An executable's absolute path on the fixed PATH, or its bare name when it is not installed. */
function which(name: string): string {
  for (const dir of PATH.split(':')) if (existsSync(join(dir, name))) return join(dir, name);
  return name;
}

/** Where a sandboxed process sees its revision's folders. */
const APP = '/app';
const HOME = '/home/app';
const RELAY_INSIDE = '/run/th/relay.js';
/** Where the sandbox sees the preload's one dependency. */
const UNDICI_INSIDE = '/run/th/node_modules/undici';
const PATH = '/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin';
/** The pieces of /etc that name resolution, TLS, users and the dynamic linker need; nothing else of the host's /etc. */
const ETC = [
  'alternatives', 'ca-certificates', 'ca-certificates.conf', 'gai.conf', 'gitconfig', 'group', 'host.conf', 'hosts', 'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d',
  'localtime', 'mime.types', 'npmrc', 'nsswitch.conf', 'os-release', 'passwd', 'protocols', 'resolv.conf', 'services', 'ssl', 'timezone',
];

export interface SandboxJob {
  argv: string[];
  /** The revision's source folder: writable, seen at /app. */
  appDir: string;
  /** The revision's home folder: writable, seen at /home/app. */
  homeDir: string;
  /** Working directory, a host path inside appDir. */
  cwd: string;
  /** The whole environment of the process (nothing else is inherited); HOME, TMPDIR and PATH are set here. */
  env: Record<string, string>;
  /** Extra host paths readable for this job only (a local git repository being cloned). */
  readOnly?: string[];
  /** stdout and stderr: piped, ignored or an open file descriptor. */
  output: 'pipe' | 'ignore' | number;
  /** bwrap: the relays of the job's network (sandbox-network.ts), reached from loopback ports inside its namespace. */
  network?: { hostDir: string; relayArgs: string[] };
  /** bwrap: a listening socket the command gets as descriptor 5 (the agent server's LISTEN_SOCKET=fd:5). */
  listenFd?: number;
}

/** The descriptor a job's listening socket has in the sandbox. */
export const LISTEN_FD = 5;

/** A file of the repository's scripts folder (plain node), from src (jest) or dist. */
function scriptFile(name: string): string {
  for (let dir = __dirname; dirname(dir) !== dir; dir = dirname(dir)) {
    const p = join(dir, 'scripts', name);
    if (existsSync(p)) return p;
  }
  return name;
}

/** The in-sandbox relay (plain node, no dependencies). */
const relayScript = () => scriptFile('sandbox-relay.js');

/** undici's package folder (the preload's one dependency). */
function undiciDir(): string {
  return dirname(require.resolve('undici/package.json'));
}

export interface SandboxedProcess {
  child: ChildProcess;
  /** The host pid of the command itself (pid 1 of its namespace), to send the drain signal to. */
  commandPid: Promise<number | null>;
  /** Settles when the sandbox (the whole process tree) is gone. */
  exited: Promise<void>;
}

/**
 * Runs tenant code (install and build commands, git, agent servers) under bubblewrap: own mount, PID, IPC and
 * UTS namespaces, a user namespace without further user namespaces, an unprivileged uid (the service drops from
 * root with setpriv first), only its revision's folders writable, the toolchain read-only, a private /tmp and a
 * fresh /proc, and a network namespace of its own with loopback only: what it may reach of the host and the
 * internet (its database, tracing, an outbound proxy) is relayed through unix sockets the control plane serves
 * (sandbox-network.ts). The tree dies with the service (--die-with-parent and setpriv's parent-death signal).
 */
export class Sandbox {
  private probed: string | null | undefined;
  constructor(private readonly opts: SandboxOptions) {}

  get mode(): SandboxMode {
    return this.opts.mode;
  }

  /** Why tenant code cannot run here, or null when it can (always null for unsafe-none). Checked once. */
  unavailable(): string | null {
    if (this.opts.mode === 'unsafe-none') return null;
    if (this.probed !== undefined) return this.probed;
    this.probed = this.probe();
    return this.probed;
  }

  private probe(): string | null {
    if (process.platform !== 'linux') return `bubblewrap needs Linux (this is ${process.platform})`;
    const launcher = this.launcher();
    const missing = [launcher[0], launcher[launcher.length - 1]].filter((c) => !c.startsWith('/'));
    if (missing.length) return `${missing.join(' and ')} not found (install the bubblewrap and util-linux packages)`;
    const r = spawnSync(launcher[0], [...launcher.slice(1), ...this.bwrapArgs([], '/', false), '/bin/true'], { env: { PATH }, encoding: 'utf8', timeout: 10_000 });
    if (r.error) return `bubblewrap could not start (${(r.error as NodeJS.ErrnoException).code ?? r.error.message})`;
    if (r.status !== 0) return `bubblewrap could not create a sandbox: ${(r.stderr || `exit code ${String(r.status)}`).trim().slice(0, 300)}`;
    return null;
  }

  private get asRoot(): boolean {
    return process.getuid?.() === 0;
  }

  /**
   * setpriv arms a parent-death signal on bwrap (and, as root, drops to the unprivileged user first: the whole tree
   * has that uid on the host). A control plane that died before the signal was armed is caught by the shell between
   * them: its parent is no longer the control plane's pid, so bwrap never starts.
   */
  private launcher(): string[] {
    const drop = this.asRoot ? [`--reuid=${this.opts.uid}`, `--regid=${this.opts.gid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all'] : [];
    const l = this.opts.limits;
    // Never above this process's own hard limits (raising them needs a privilege containers often lack).
    const cap = (name: string, wanted: number) => Math.min(wanted, hardLimit(name));
    // prlimit and nice exec setpriv in place: the shell's parent check below still sees this process.
    const limits = l
      ? [
          which('prlimit'),
          `--data=${cap('Max data size', l.memoryBytes)}`,
          `--fsize=${cap('Max file size', l.fileSizeBytes)}`,
          `--nofile=${cap('Max open files', l.openFiles)}`,
          ...(this.asRoot ? [`--nproc=${cap('Max processes', l.processes)}`] : []),
          '--',
          which('nice'),
          '-n',
          String(l.nice),
        ]
      : [];
    return [...limits, which('setpriv'), ...drop, '--pdeathsig=SIGKILL', '/bin/sh', '-c', 'test "$PPID" = "$0" && exec "$@"', String(process.pid), which('bwrap')];
  }

  /**
   * Kills what an earlier control plane left: bwrap's --disable-userns can leave a bwrap waiting forever for a
   * child that never ran when the control plane died during its start (no tenant code, but a process). Ours are
   * recognised by a bound folder under `workDir` and a parent that is not this process.
   */
  reapOrphans(workDir: string): number {
    if (this.opts.mode === 'unsafe-none' || process.platform !== 'linux') return 0;
    let killed = 0;
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        const ppid = Number(/^PPid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
        const ours = argv[0].endsWith('bwrap') && argv.some((a, i) => argv[i - 1] === '--bind' && a.startsWith(workDir + '/'));
        if (ours && ppid !== process.pid) {
          process.kill(Number(pid), 'SIGKILL');
          killed++;
        }
      } catch {
        // gone meanwhile, or not ours to read
      }
    }
    return killed;
  }

  /** The path a host path inside the revision's folders has in the sandbox. */
  inside(job: Pick<SandboxJob, 'appDir' | 'homeDir'>, hostPath: string): string {
    if (this.opts.mode === 'unsafe-none') return hostPath;
    for (const [host, seen] of [[job.appDir, APP], [job.homeDir, HOME]] as const) {
      const rel = relative(host, hostPath);
      if (rel === '' || (!rel.startsWith('..') && !rel.startsWith('/'))) return join(seen, rel);
    }
    throw new Error('path outside the sandbox');
  }

  /** Gives the sandbox's user a folder the driver prepared (unpacked sources): owner changed, set-id bits cleared. */
  handOver(dir: string): void {
    if (this.opts.mode === 'unsafe-none' || !this.asRoot) return;
    // A walk of its own: readdirSync's recursive mode descends into links to folders, which would hand host files over.
    const walk = (p: string): void => {
      const st = lstatSync(p);
      lchownSync(p, this.opts.uid, this.opts.gid);
      if (st.isSymbolicLink()) return;
      if (st.mode & 0o6000) chmodSync(p, st.mode & 0o1777);
      if (st.isDirectory()) for (const name of readdirSync(p)) walk(join(p, name));
    };
    walk(dir);
  }

  /** The environment every sandboxed process starts from. */
  baseEnv(job: Pick<SandboxJob, 'appDir' | 'homeDir'>, passed: Record<string, string>): Record<string, string> {
    const nodeBin = dirname(process.execPath);
    const env = { ...passed, PATH: `${nodeBin}:${PATH}`, HOME: this.inside(job, job.homeDir) };
    return this.opts.mode === 'unsafe-none' ? env : { ...env, TMPDIR: '/tmp' };
  }

  private bwrapArgs(binds: string[], cwd: string, info = true): string[] {
    const args = [
      '--unshare-user', '--disable-userns', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-net', '--unshare-cgroup-try', '--hostname', 'sandbox',
      '--die-with-parent', '--new-session', '--as-pid-1',
      '--ro-bind', '/usr', '/usr',
    ];
    for (const top of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
      const p = `/${top}`;
      if (!existsSync(p)) continue;
      if (lstatSync(p).isSymbolicLink()) args.push('--symlink', relative('/', realpathSync(p)), p);
      else args.push('--ro-bind', p, p);
    }
    for (const f of ETC) args.push('--ro-bind-try', `/etc/${f}`, `/etc/${f}`);
    args.push('--proc', '/proc', '--dev', '/dev');
    if (this.opts.limits) args.push('--size', String(this.opts.limits.tmpBytes));
    args.push('--tmpfs', '/tmp');
    // bwrap runs as the unprivileged user: the bound folders' parents must let it through (o+x).
    args.push(...binds);
    args.push('--chdir', cwd, '--clearenv');
    if (info) args.push('--info-fd', '3');
    args.push('--');
    return args;
  }

  spawn(job: SandboxJob): SandboxedProcess {
    const stdio = ['ignore', job.output, job.output] as ('ignore' | 'pipe' | number)[];
    if (this.opts.mode === 'unsafe-none') {
      const child = spawn(job.argv[0], job.argv.slice(1), { cwd: job.cwd, env: job.env, stdio });
      return { child, commandPid: Promise.resolve(child.pid ?? null), exited: exitOf(child) };
    }
    const launcher = this.launcher();
    const ro = [...this.opts.readOnlyPaths, ...(job.readOnly ?? [])].filter((p) => p !== '/' && p !== '/usr' && !p.startsWith('/usr/') && existsSync(p));
    ro.sort((a, b) => a.length - b.length); // parents before children
    const binds = [...ro.map((p) => ['--ro-bind', realpathSync(p), p]), ['--bind', job.appDir, APP], ['--bind', job.homeDir, HOME]].flat();
    // Read-only: the sandbox can connect to the relays' sockets, not replace them.
    if (job.network) binds.push('--ro-bind', job.network.hostDir, INSIDE_SOCKETS, '--ro-bind', relayScript(), RELAY_INSIDE);
    if (job.network && job.env.NODE_OPTIONS?.includes(PROXY_PRELOAD_INSIDE)) {
      binds.push('--ro-bind', scriptFile('sandbox-proxy-preload.js'), PROXY_PRELOAD_INSIDE, '--ro-bind', realpathSync(undiciDir()), UNDICI_INSIDE);
    }
    const env: Record<string, string> = { ...job.env };
    if (job.network?.relayArgs.length) Object.assign(env, { __TH_RELAY: job.network.relayArgs.join(' '), __TH_NODE: process.execPath });
    if (job.listenFd !== undefined) env.__TH_LISTEN = '1';
    const child = spawn(launcher[0], [...launcher.slice(1), ...this.bwrapArgs(binds, this.inside(job, job.cwd)), '/bin/bash', '-c', LOAD_ENV, 'sandbox', ...job.argv], {
      // Nothing of the job's environment reaches setpriv or bwrap (LD_PRELOAD there would run outside the sandbox).
      env: { PATH },
      // 0-2: standard streams; 3: bwrap's info (the command's pid); 4: the command's environment and start handshake; 5: its listening socket.
      stdio: [...stdio, 'pipe', 'pipe', ...(job.listenFd !== undefined ? [job.listenFd] : [])],
    });
    const control = child.stdio[4] as Duplex | null;
    if (control) {
      control.on('error', () => undefined); // the sandbox failed to start: its exit says why
      control.write(shellExports(env) + '\0');
      control.once('data', () => control.end('go\n'));
    }
    return { child, commandPid: commandPidOf(child), exited: exitOf(child) };
  }
}

/**
 * The sandbox's first command (bash: dash can neither name descriptors above 9 nor read up to a NUL). It closes
 * every descriptor the service may have inherited from its own parent; reads its environment from descriptor 4
 * (not from the command line, which ps shows to every host user); then asks the control plane, through the same
 * descriptor, whether it is still alive. Its answer comes after every parent-death signal of the chain is armed
 * (setpriv's on bwrap, bwrap's on this process), so a control plane that died during the start cannot leave an
 * orphaned sandbox behind: without the answer the command never runs.
 */
const LOAD_ENV = [
  'for f in /proc/self/fd/*; do n=${f##*/}; case $n in 0|1|2|4|5) ;; *) eval "exec $n>&-" 2>/dev/null ;; esac; done',
  "IFS= read -r -d '' __th_env <&4 || exit 111",
  'eval "$__th_env"; unset __th_env',
  '[ -n "$__TH_LISTEN" ] || exec 5>&-',
  'echo ready >&4 && IFS= read -r go <&4 && [ "$go" = go ] || exit 111',
  // The relay listens on the namespace's loopback before the command starts (it answers one line once it does).
  `if [ -n "$__TH_RELAY" ]; then { IFS= read -r up && [ "$up" = ready ]; } < <(exec "$__TH_NODE" ${RELAY_INSIDE} $__TH_RELAY 4<&- 5<&-) || exit 112; fi`,
  'unset __TH_RELAY __TH_NODE __TH_LISTEN',
  'exec "$@" 4<&-',
].join('\n');
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
function shellExports(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([k]) => ENV_NAME.test(k))
    .map(([k, v]) => `export ${k}='${v.replace(/'/g, `'\\''`)}'\n`)
    .join('');
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
const settles = (p: Promise<void>, ms: number) => Promise.race([p.then(() => true), sleep(ms).then(() => false)]);
function signal(pid: number | null | undefined, sig: NodeJS.Signals): void {
  if (!pid) return;
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** Drain, then kill: SIGTERM to the command, SIGKILL to the whole tree once graceMs have passed. */
export async function stopSandboxed(p: SandboxedProcess, graceMs: number): Promise<void> {
  const gone = () => p.child.exitCode !== null || p.child.signalCode !== null;
  if (gone()) return;
  const pid = await Promise.race([p.commandPid, sleep(1000).then(() => null)]);
  if (gone()) return; // the pid may belong to someone else by now
  signal(pid ?? p.child.pid, 'SIGTERM');
  if (graceMs > 0 && (await settles(p.exited, graceMs))) return;
  // The command is pid 1 of its namespace: killing it ends every process in the sandbox.
  if (!gone()) signal(pid, 'SIGKILL');
  signal(p.child.pid, 'SIGKILL');
  await settles(p.exited, 5000);
}

function exitOf(child: ChildProcess): Promise<void> {
  return new Promise((res) => {
    if (child.exitCode !== null || child.signalCode !== null) return res();
    child.once('exit', () => res());
    child.once('error', () => res());
  });
}

/** This process's hard limit of a /proc/self/limits row ("Max open files"...); Infinity when unlimited or unknown. */
function hardLimit(name: string): number {
  try {
    const row = readFileSync('/proc/self/limits', 'utf8').split('\n').find((r) => r.startsWith(name));
    const hard = row?.slice(name.length).trim().split(/\s+/)[1];
    return hard && /^\d+$/.test(hard) ? Number(hard) : Infinity;
  } catch {
    return Infinity;
  }
}

/** bwrap writes {"child-pid": n, ...} on its info descriptor once the sandbox runs. */
function commandPidOf(child: ChildProcess): Promise<number | null> {
  return new Promise((res) => {
    const info = child.stdio[3];
    if (!info) return res(null);
    let text = '';
    info.on('data', (b: Buffer) => {
      text += b.toString();
      try {
        const pid = (JSON.parse(text) as { 'child-pid'?: number })['child-pid'];
        res(typeof pid === 'number' ? pid : null);
      } catch {
        // not complete yet
      }
    });
    info.on('end', () => res(null));
    info.on('error', () => res(null));
    child.once('error', () => res(null));
  });
}
