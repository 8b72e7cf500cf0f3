import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { freePort } from '@th/platform';
import { classArchive, compilerArgs } from './test-jvm';

export interface S3ServerOptions {
  /** Where the buckets live on disk (jclouds filesystem backend). A temp dir by default, removed on stop. */
  dataDir?: string;
  /** Port on 127.0.0.1; a free one by default. */
  port?: number;
  startTimeoutMs?: number;
}

export interface S3Server {
  /** `http://127.0.0.1:<port>`: use with forcePathStyle. */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Bucket folders live directly under this directory; an object is the file `<dataDir>/<bucket>/<key>`. */
  dataDir: string;
  /** Creates a bucket (a folder of the filesystem backend). */
  createBucket(name: string): void;
  /** Object keys under a bucket (recursive), without the folder entries. */
  listKeys(bucket: string, prefix?: string): string[];
  /** The file holding an object. */
  objectPath(bucket: string, key: string): string;
  stop(): Promise<void>;
}

function findRepoRoot(): string {
  let dir = __dirname;
  for (let i = 0; i < 8; i++) {
    if (existsSync(join(dir, 'scripts', 's3', 'fetch.sh'))) return dir;
    dir = dirname(dir);
  }
  throw new Error(`s3-server: cannot find scripts/s3/fetch.sh above ${__dirname}`);
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number): Promise<void> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', rej);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) res();
      else rej(new Error(`${cmd} ${args.join(' ')} exited with ${code}: ${err.slice(-2000)}`));
    });
  });
}

/** Runs scripts/s3/fetch.sh (a no-op when the cache is complete) and returns the s3proxy jar. */
export async function ensureS3ProxyJar(): Promise<string> {
  const root = findRepoRoot();
  await run('bash', [join(root, 'scripts', 's3', 'fetch.sh')], root, 10 * 60_000);
  const libs = join(root, '.cache', 's3proxy', 'libs');
  const jar = readdirSync(libs).find((f) => /^s3proxy-.*-jar-with-dependencies\.jar$/.test(f));
  if (!jar) throw new Error(`s3-server: no s3proxy jar in ${libs}`);
  return join(libs, jar);
}

/** Kills the server once this Node process is gone (jest workers die on signals, which skip exit hooks). */
function spawnWatchdog(pid: number, removeDir: string | undefined): void {
  const script = [`while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done`, `kill -9 ${pid} 2>/dev/null`, `if [ -n "$1" ]; then sleep 1; rm -rf "$1"; fi`, 'exit 0'].join('\n');
  const dog = spawn('bash', ['-c', script, 's3-watchdog', removeDir ?? ''], { detached: true, stdio: 'ignore' });
  dog.on('error', () => undefined);
  dog.unref();
}

function walk(dir: string, base: string, out: string[]): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = base ? `${base}/${entry.name}` : entry.name;
    if (entry.isDirectory()) walk(join(dir, entry.name), rel, out);
    else out.push(rel);
  }
}

/**
 * Starts s3proxy (from Maven Central, see scripts/s3) on 127.0.0.1 with jclouds' filesystem backend
 * and AWS v2/v4 signatures checked against one generated key pair.
 */
export async function startS3Server(opts: S3ServerOptions = {}): Promise<S3Server> {
  const jar = await ensureS3ProxyJar();
  const ownDir = !opts.dataDir;
  const home = ownDir ? mkdtempSync(join(tmpdir(), 'th-s3-')) : resolve(opts.dataDir as string);
  const dataDir = join(home, 'buckets');
  mkdirSync(dataDir, { recursive: true });
  const port = opts.port ?? (await freePort());
  const accessKeyId = `AKTH${randomBytes(8).toString('hex').toUpperCase()}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const props = join(home, 's3proxy.properties');
  writeFileSync(
    props,
    [
      `s3proxy.endpoint=http://127.0.0.1:${port}`,
      's3proxy.authorization=aws-v2-or-v4',
      `s3proxy.identity=${accessKeyId}`,
      `s3proxy.credential=${secretAccessKey}`,
      'jclouds.provider=filesystem',
      `jclouds.filesystem.basedir=${dataDir}`,
      'jclouds.identity=local',
      'jclouds.credential=local',
      '',
    ].join('\n'),
  );
  const logFile = join(home, 's3proxy.log');
  const fd = openSync(logFile, 'a');
  const archive = classArchive(`${jar}.jsa`);
  const child: ChildProcess = spawn('java', ['-Xms64m', '-Xmx384m', ...compilerArgs(), ...archive.args, '-jar', jar, '--properties', props], { stdio: ['ignore', fd, fd] });
  closeSync(fd);
  if (child.pid) spawnWatchdog(child.pid, ownDir ? home : undefined);
  const exited = new Promise<void>((res) =>
    child.once('exit', () => {
      archive.settle();
      res();
    }),
  );
  let gone = false;
  void exited.then(() => (gone = true));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 60_000);
  for (;;) {
    if (gone) throw new Error(`s3proxy exited during start-up:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
    // Any HTTP answer (403 without credentials) means the server is up.
    const ok = await fetch(endpoint, { signal: AbortSignal.timeout(1000) }).then(
      () => true,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`s3proxy did not start within the deadline:\n${readFileSync(logFile, 'utf8').slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    endpoint,
    region: 'us-east-1',
    accessKeyId,
    secretAccessKey,
    dataDir,
    createBucket(name: string) {
      mkdirSync(join(dataDir, name), { recursive: true });
    },
    listKeys(bucket: string, prefix = '') {
      const root = join(dataDir, bucket);
      if (!existsSync(root)) return [];
      const out: string[] = [];
      walk(root, '', out);
      return out.filter((k) => k.startsWith(prefix)).sort();
    },
    objectPath(bucket: string, key: string) {
      return join(dataDir, bucket, key);
    },
    async stop() {
      if (!gone) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      if (ownDir) rmSync(home, { recursive: true, force: true });
    },
  };
}
