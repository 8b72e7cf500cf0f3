import { ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { classArchive, compilerArgs } from './test-jvm';
import { spawnWatchdog } from './watchdog';

export interface KafkaServerOptions {
  /** Where server.properties, the log segments and broker.log live. A temp dir by default. */
  dataDir?: string;
  /** PLAINTEXT listener port on 127.0.0.1. A free one by default. */
  port?: number;
  /** Readiness deadline for (re)starts. Default 90 s. */
  startTimeoutMs?: number;
  /** Remove the data dir once this Node process is gone. Default: only when the dir was made here. */
  removeDataDirOnExit?: boolean;
}

export interface KafkaServer {
  /** `127.0.0.1:<port>`, ready for `new Kafka({ brokers: [server.brokers] })`. */
  brokers: string;
  port: number;
  /** Stops the broker with SIGTERM and waits for it to exit. The data dir is kept. */
  stop(): Promise<void>;
  /** SIGKILL, waits for exit. The data dir is kept, so `restart()` recovers from it. */
  kill(): Promise<void>;
  /** Stops (SIGTERM) if running, then starts again on the same ports and data dir. */
  restart(): Promise<void>;
  readonly dataDir: string;
  readonly controllerPort: number;
  /** The broker's log4j output; its tail is included in start-up errors. */
  readonly logFile: string;
}

const DEFAULT_START_TIMEOUT_MS = 90_000;
const STOP_GRACE_MS = 30_000;
const HEAP = ['-Xms128m', '-Xmx512m'];

const liveChildren = new Set<ChildProcess>();
const autoCreatedDirs = new Set<string>();
let exitHookInstalled = false;

/**
 * Reaps brokers the moment a plain Node process exits. Inside jest it never fires
 * (the sandbox's `process` is a copy), which is what the watchdog is for.
 */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of liveChildren) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const dir of autoCreatedDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // best effort on the way out
      }
    }
  });
}

function findRepoRoot(): string {
  // Works from the TS sources and from the swc output in dist/ alike.
  let dir = __dirname;
  for (let i = 0; i < 12; i++) {
    if (existsSync(join(dir, 'scripts', 'kafka', 'fetch.sh'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`kafka-server: cannot find scripts/kafka/fetch.sh above ${__dirname}`);
}

function runProcess(cmd: string, args: string[], opts: { cwd?: string; timeoutMs: number }): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolvePromise(output);
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`}):\n${output}`));
    });
  });
}

let libsPromise: Promise<string> | undefined;

/** Runs scripts/kafka/fetch.sh (a no-op when the jar cache is complete); returns the libs dir. */
export function ensureKafkaLibs(): Promise<string> {
  libsPromise ??= (async () => {
    const root = findRepoRoot();
    const libs = join(root, '.cache', 'kafka', 'libs');
    // fetch.sh is the single authority on "complete" (it hashes pom.xml); on a
    // warm cache it returns in ~10 ms.
    await runProcess('bash', [join(root, 'scripts', 'kafka', 'fetch.sh')], { cwd: root, timeoutMs: 10 * 60_000 });
    return libs;
  })();
  libsPromise.catch(() => (libsPromise = undefined));
  return libsPromise;
}

function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      if (address === null || typeof address === 'string') {
        srv.close();
        reject(new Error('kafka-server: could not allocate a port'));
        return;
      }
      srv.close(() => resolvePromise(address.port));
    });
  });
}

/** Kafka's Uuid.toString(): 16 random bytes, URL-safe base64 without padding. */
function randomClusterId(): string {
  // Kafka's argument parser reads an id starting with '-' as an option: keep the first character a letter.
  const id = randomBytes(16).toString('base64url');
  return /^[A-Za-z]/.test(id) ? id : `K${id.slice(1)}`;
}

function tail(file: string, lines: number): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no output)';
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

interface Layout {
  dataDir: string;
  logDir: string;
  propertiesFile: string;
  log4jFile: string;
  logFile: string;
  stdoutFile: string;
  pidFile: string;
}

function writeConfig(layout: Layout, port: number, controllerPort: number): void {
  const props: Record<string, string | number | boolean> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.voters': `1@127.0.0.1:${controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${port}`,
    'listener.security.protocol.map': 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'log.dirs': layout.logDir,
    'num.partitions': 4,
    'default.replication.factor': 1,
    'min.insync.replicas': 1,
    'offsets.topic.replication.factor': 1,
    // 50 by default; creating them delays the first consumer group join by seconds.
    'offsets.topic.num.partitions': 4,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'transaction.state.log.num.partitions': 4,
    'auto.create.topics.enable': true,
    'delete.topic.enable': true,
    'group.initial.rebalance.delay.ms': 0,
    'message.max.bytes': 32 * 1024 * 1024,
    'replica.fetch.max.bytes': 32 * 1024 * 1024,
    'auto.leader.rebalance.enable': false,
    // After a SIGKILL the restarted broker cannot register until the previous
    // incarnation's session expires (9 s by default): shorter keeps kill+restart fast.
    'broker.session.timeout.ms': 4_000,
    'broker.heartbeat.interval.ms': 800,
    // Sized for a 2-core CI box rather than a production host.
    'num.network.threads': 2,
    'num.io.threads': 4,
    'num.recovery.threads.per.data.dir': 1,
    'log.retention.check.interval.ms': 300_000,
  };
  writeFileSync(
    layout.propertiesFile,
    Object.entries(props)
      .map(([k, v]) => `${k}=${String(v)}`)
      .join('\n') + '\n',
  );
  writeFileSync(
    layout.log4jFile,
    [
      'log4j.rootLogger=INFO, file',
      'log4j.appender.file=org.apache.log4j.FileAppender',
      `log4j.appender.file.File=${layout.logFile}`,
      'log4j.appender.file.Append=true',
      'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
      'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
      'log4j.logger.kafka.request.logger=WARN',
      'log4j.logger.org.apache.kafka.clients=WARN',
      'log4j.logger.state.change.logger=WARN',
      '',
    ].join('\n'),
  );
}

/** The Kafka version's id (its jar names), naming what is built once per version in .cache/kafka. */
function versionOf(libs: string): string {
  return createHash('sha256').update(readdirSync(libs).sort().join('\n')).digest('hex').slice(0, 12);
}

function javaArgs(libs: string, layout: Layout): string[] {
  return [
    ...HEAP,
    // One GC thread instead of G1's pool: the broker shares 2 cores with the tests.
    '-XX:+UseSerialGC',
    ...compilerArgs(),
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${layout.log4jFile}`,
    `-Dkafka.logs.dir=${layout.dataDir}`,
    '-cp',
    `${libs}/*`,
  ];
}

/**
 * Formats KRaft storage once per Kafka version into .cache/kafka and copies it into each new log dir: a
 * format is a JVM start of its own. The copies share a cluster id, which is harmless for single-node brokers.
 */
async function formatStorage(libs: string, layout: Layout): Promise<void> {
  if (existsSync(join(layout.logDir, 'meta.properties'))) return;
  const formatted = join(dirname(libs), `formatted-${versionOf(libs)}`);
  if (!existsSync(join(formatted, 'meta.properties'))) {
    const work = mkdtempSync(join(dirname(libs), 'formatting-'));
    try {
      const scratch: Layout = { ...layout, logDir: join(work, 'kraft-logs'), propertiesFile: join(work, 'server.properties') };
      writeConfig(scratch, 9092, 9093);
      await runProcess(
        'java',
        [...javaArgs(libs, scratch), 'kafka.tools.StorageTool', 'format', '--ignore-formatted', '-t', randomClusterId(), '-c', scratch.propertiesFile],
        { timeoutMs: 120_000 },
      );
      // A rename is atomic: a parallel worker either sees the whole template or formats its own and loses the race.
      try {
        renameSync(scratch.logDir, formatted);
      } catch (err) {
        if (!existsSync(join(formatted, 'meta.properties'))) throw err;
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }
  cpSync(formatted, layout.logDir, { recursive: true });
}

async function waitReady(
  brokers: string,
  child: ChildProcess,
  exited: Promise<unknown>,
  layout: Layout,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exitedEarly = false;
  void exited.then(() => (exitedEarly = true));
  let lastError = 'not attempted';
  const kafka = new Kafka({
    clientId: 'kafka-server-readiness',
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1_000,
    requestTimeout: 3_000,
    retry: { retries: 0 },
  });
  while (Date.now() < deadline) {
    if (exitedEarly) {
      throw new Error(
        `Kafka broker exited during start-up (code ${String(child.exitCode)}, signal ${String(child.signalCode)}).\n` +
          `--- ${layout.logFile} ---\n${tail(layout.logFile, 40)}\n--- ${layout.stdoutFile} ---\n${tail(layout.stdoutFile, 20)}`,
      );
    }
    const admin = kafka.admin({ retry: { retries: 0 } });
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      if (cluster.brokers.length > 0 && cluster.controller !== null) {
        await admin.disconnect();
        return;
      }
      lastError = 'no broker registered yet';
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    await admin.disconnect().catch(() => undefined);
    await sleep(250);
  }
  throw new Error(
    `Kafka broker on ${brokers} not ready after ${timeoutMs} ms (last error: ${lastError}).\n` +
      `--- ${layout.logFile} ---\n${tail(layout.logFile, 40)}\n--- ${layout.stdoutFile} ---\n${tail(layout.stdoutFile, 20)}`,
  );
}

export async function startKafka(opts: KafkaServerOptions = {}): Promise<KafkaServer> {
  installExitHook();
  const libs = await ensureKafkaLibs();
  const timeoutMs = opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;

  let dataDir: string;
  if (opts.dataDir !== undefined) {
    dataDir = resolve(opts.dataDir);
    mkdirSync(dataDir, { recursive: true });
  } else {
    dataDir = mkdtempSync(join(tmpdir(), 'kafka-test-'));
    autoCreatedDirs.add(dataDir);
  }
  const layout: Layout = {
    dataDir,
    logDir: join(dataDir, 'kraft-logs'),
    propertiesFile: join(dataDir, 'server.properties'),
    log4jFile: join(dataDir, 'log4j.properties'),
    logFile: join(dataDir, 'broker.log'),
    stdoutFile: join(dataDir, 'broker.out'),
    pidFile: join(dataDir, 'broker.pid'),
  };
  spawnWatchdog(layout.pidFile, (opts.removeDataDirOnExit ?? opts.dataDir === undefined) ? dataDir : undefined);

  let port = opts.port ?? (await freePort());
  let controllerPort = await freePort();
  while (controllerPort === port) controllerPort = await freePort();
  let brokers = `127.0.0.1:${port}`;

  writeConfig(layout, port, controllerPort);
  await formatStorage(libs, layout);

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const launch = async (): Promise<void> => {
    const out = openSync(layout.stdoutFile, 'a');
    let proc: ChildProcess;
    const archive = classArchive(join(dirname(libs), `classes-${versionOf(libs)}.jsa`));
    try {
      proc = spawn('java', [...archive.args, ...javaArgs(libs, layout), 'kafka.Kafka', layout.propertiesFile], {
        cwd: dataDir,
        stdio: ['ignore', out, out],
      });
    } finally {
      closeSync(out);
    }
    // A forgotten broker must not keep jest alive; the watchdog reaps it.
    proc.unref();
    child = proc;
    liveChildren.add(proc);
    if (proc.pid !== undefined) writeFileSync(layout.pidFile, String(proc.pid));
    exited = new Promise<void>((r) => {
      const onGone = (): void => {
        liveChildren.delete(proc);
        // So the watchdog can never SIGKILL a recycled pid.
        rmSync(layout.pidFile, { force: true });
        archive.settle();
        r();
      };
      proc.once('exit', onGone);
      proc.once('error', onGone);
    });
    try {
      await waitReady(brokers, proc, exited, layout, timeoutMs);
    } catch (err) {
      proc.kill('SIGKILL');
      await exited;
      throw err;
    }
  };

  const isRunning = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null;

  const terminate = async (signal: NodeJS.Signals): Promise<void> => {
    if (!isRunning() || child === undefined) return;
    const proc = child;
    proc.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const graceful = await Promise.race([
      exited.then(() => true),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(false), STOP_GRACE_MS))),
    ]);
    clearTimeout(timer);
    if (!graceful) {
      proc.kill('SIGKILL');
      await exited;
    }
  };

  // A port chosen by freePort() can be taken by another process before the broker binds it (parallel
  // test files start brokers at the same time): then choose new ports and launch again.
  for (let attempt = 1; ; attempt++) {
    const logStart = existsSync(layout.logFile) ? statSync(layout.logFile).size : 0;
    try {
      await launch();
      break;
    } catch (err) {
      const log = existsSync(layout.logFile) ? readFileSync(layout.logFile).subarray(logStart).toString('utf8') : '';
      if (opts.port !== undefined || attempt >= 4 || !/Address already in use/.test(log)) throw err;
      port = await freePort();
      controllerPort = await freePort();
      while (controllerPort === port) controllerPort = await freePort();
      brokers = `127.0.0.1:${port}`;
      writeConfig(layout, port, controllerPort);
    }
  }

  // Lifecycle calls queue up, so e.g. a stop() issued during restart() waits for it.
  let lifecycle: Promise<void> = Promise.resolve();
  const serialize = (op: () => Promise<void>): Promise<void> => {
    const next = lifecycle.then(op);
    lifecycle = next.catch(() => undefined);
    return next;
  };

  return {
    brokers,
    port,
    controllerPort,
    dataDir,
    logFile: layout.logFile,
    stop: () => serialize(() => terminate('SIGTERM')),
    kill: () => serialize(() => terminate('SIGKILL')),
    restart: () =>
      serialize(async () => {
        await terminate('SIGTERM');
        await launch();
      }),
  };
}

interface SharedBrokerState {
  pid: number;
  brokers: string;
  port: number;
  controllerPort: number;
  dataDir: string;
  logFile: string;
}

function sharedBrokerAlive(state: SharedBrokerState): boolean {
  try {
    // The pid must still be this broker (its command line names the data dir), not a recycled one.
    return readFileSync(`/proc/${state.pid}/cmdline`, 'utf8').includes(state.dataDir);
  } catch {
    return false;
  }
}

/**
 * One broker per test process (a jest worker), started by the first suite that asks and reused by the next
 * ones: for suites that stop and kill nothing and keep apart by fresh organizations and projects. The
 * watchdog stops it and removes its data once the worker exits, so no broker outlives the run, and its
 * folder is named by this process's id, so nothing is picked up from an earlier run. Its stop() only
 * releases it; kill() and restart() are refused: a suite that needs them starts its own with startKafka().
 */
export async function sharedKafka(): Promise<KafkaServer> {
  const dataDir = join(tmpdir(), `th-kafka-shared-${process.pid}`);
  const stateFile = join(dataDir, 'shared.json');
  let state: SharedBrokerState | undefined;
  if (existsSync(stateFile)) {
    const kept = JSON.parse(readFileSync(stateFile, 'utf8')) as SharedBrokerState;
    if (sharedBrokerAlive(kept)) state = kept;
  }
  if (state === undefined) {
    rmSync(dataDir, { recursive: true, force: true });
    const server = await startKafka({ dataDir, removeDataDirOnExit: true });
    const pid = Number(readFileSync(join(dataDir, 'broker.pid'), 'utf8'));
    state = { pid, brokers: server.brokers, port: server.port, controllerPort: server.controllerPort, dataDir, logFile: server.logFile };
    writeFileSync(stateFile, JSON.stringify(state));
  }
  const refuse = (what: string) => () => Promise.reject(new Error(`sharedKafka: ${what} would break the other suites on this broker; use startKafka()`));
  return {
    ...state,
    stop: () => Promise.resolve(),
    kill: refuse('kill()'),
    restart: refuse('restart()'),
  };
}
