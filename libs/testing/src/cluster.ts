import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedKafka, startKafka, type KafkaServer } from './kafka-server';
import { createTestDatabase } from './postgres';
import { freePort, repoRoot, startAppProcess, type AppProcess } from './app-process';

export interface ClickHouseServerProcess {
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * ClickHouse's HTTP interface over chDB in its own process (tools/ch-server), so several services share one engine.
 * With `logFile` its output goes there and it holds nothing open in this process (see startAppProcess).
 */
export async function startClickHouseServerProcess(dataDir: string, opts: { logFile?: string; env?: Record<string, string> } = {}): Promise<ClickHouseServerProcess> {
  const port = await freePort();
  const fd = opts.logFile === undefined ? null : openSync(opts.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, [join(repoRoot(), 'dist', 'tools', 'ch-server', 'main.js'), '--data-dir', dataDir, '--port', String(port)], {
      env: { ...process.env, ...opts.env },
      stdio: fd === null ? ['ignore', 'pipe', 'pipe'] : ['ignore', fd, fd],
    });
  } finally {
    if (fd !== null) closeSync(fd);
  }
  if (fd !== null) child.unref();
  let out = '';
  const output = () => (opts.logFile === undefined ? out : readFileSync(opts.logFile, 'utf8'));
  await new Promise<void>((resolve, reject) => {
    let poll: NodeJS.Timeout | undefined;
    const done = (err?: Error) => {
      clearTimeout(timer);
      clearInterval(poll);
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => done(new Error(`ch-server did not start:\n${output()}`)), 60_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('listening ')) done();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    if (opts.logFile !== undefined) poll = setInterval(() => output().includes('listening ') && done(), 100);
    child.once('exit', (code) => done(new Error(`ch-server exited ${String(code)}:\n${output()}`)));
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  return {
    url: `http://127.0.0.1:${port}`,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        process.removeListener('exit', killOnExit);
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

export interface Cluster {
  gateway: AppProcess;
  ingest: AppProcess;
  query: AppProcess;
  kafka: KafkaServer;
  clickhouse: ClickHouseServerProcess;
  /** The export-worker process, when startCluster was given `exportWorkerEnv` (the gateway then routes /bulk-exports to it). */
  exportWorker?: AppProcess;
  /** The audit process, when startCluster was given `auditEnv` (the gateway then routes /audit-logs to it). */
  audit?: AppProcess;
  apiKey: string;
  /** KAFKA_PREFIX of its services: the broker's name of topic `t` is `${kafkaPrefix}${t}` (and of its consumer groups). */
  kafkaPrefix: string;
  env: Record<string, string>;
  /** Restarts one service process with the same settings (after a kill, say). */
  restart(name: ClusterService): Promise<AppProcess>;
  stop(): Promise<void>;
}

export type ClusterService = 'gateway' | 'ingest' | 'query' | 'export-worker' | 'audit';

export interface ClusterOptions {
  /** Settings every service of the cluster gets (before each one's own). */
  env?: Record<string, string>;
  ingestEnv?: Record<string, string>;
  gatewayEnv?: Record<string, string>;
  /** Also start the export-worker app with these settings added (EXPORT_ENCRYPTION_KEY is generated unless given). */
  exportWorkerEnv?: Record<string, string>;
  /** Also start the audit app with these settings added; the gateway gets its AUDIT_URL. */
  auditEnv?: Record<string, string>;
  /** Use this jest worker's shared broker (sharedKafka) instead of a dedicated one: for suites that kill nothing. */
  sharedKafka?: boolean;
  /**
   * Work in this folder and leave nothing open in this process: every process logs to a file there and
   * is marked with TH_SHARED_CLUSTER=<folder>; their pids go to `pids` and the database's name to `database`
   * as they start, for a reaper that outlives the caller (sharedCluster).
   */
  detachTo?: string;
}

/**
 * The cluster form on this machine: Kafka (KRaft, one node), ClickHouse over HTTP, the machine's
 * PostgreSQL, and gateway, ingest and query as separate OS processes talking only through them.
 * Needs `npm run build` first (the services run from dist/).
 */
export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const work = opts.detachTo ?? mkdtempSync(join(tmpdir(), 'th-cluster-'));
  const detached = opts.detachTo === undefined ? null : { TH_SHARED_CLUSTER: opts.detachTo };
  const record = (file: 'pids' | 'database', line: string) => detached && appendFileSync(join(work, file), `${line}\n`);
  const kafka = opts.sharedKafka ? await sharedKafka() : await startKafka({ dataDir: join(work, 'kafka') });
  // Topics and consumer groups of their own on a shared broker: no group waits out the session of the previous
  // suite's departed members, and no suite reads another's messages.
  const kafkaPrefix = opts.sharedKafka ? `t${randomBytes(4).toString('hex')}.` : '';
  const clickhouse = await startClickHouseServerProcess(join(work, 'clickhouse'), detached ? { logFile: join(work, 'clickhouse.log'), env: detached } : {});
  record('pids', String(clickhouse.child.pid));
  const db = await createTestDatabase('th_cluster');
  record('database', db.name);
  const apiKey = `th_cluster_${randomBytes(12).toString('hex')}`;
  const [queryPort, ingestPort] = [await freePort(), await freePort()];
  const env: Record<string, string> = {
    INTERNAL_SIGNING_KEY: randomBytes(24).toString('hex'),
    KAFKA_BROKERS: kafka.brokers,
    KAFKA_TOPIC_PARTITIONS: '4',
    KAFKA_PREFIX: kafkaPrefix,
    CLICKHOUSE_URL: clickhouse.url,
    DATABASE_URL: db.url,
    QUERY_URL: `http://127.0.0.1:${queryPort}`,
    INGEST_URL: `http://127.0.0.1:${ingestPort}`,
    ...opts.env,
  };
  const procs: Partial<Record<ClusterService, AppProcess>> = {};
  const ports = { query: queryPort, ingest: ingestPort, gateway: await freePort(), 'export-worker': await freePort(), audit: await freePort() };
  const auditEnv = opts.auditEnv ? { AUDIT_CHAIN_KEY: randomBytes(24).toString('hex'), ...opts.auditEnv } : null;
  const exportWorkerEnv = opts.exportWorkerEnv ? { EXPORT_ENCRYPTION_KEY: randomBytes(24).toString('hex'), ...opts.exportWorkerEnv } : null;
  const start = async (name: ClusterService) => {
    // Rate limits are off unless a test asks for them (with REDIS_URL): the spec's production values would throttle load tests.
    const gatewayEnv = {
      BOOTSTRAP_API_KEY: apiKey,
      RATE_LIMIT_ENABLED: 'false',
      ...(exportWorkerEnv ? { EXPORT_WORKER_URL: `http://127.0.0.1:${ports['export-worker']}` } : {}),
      ...(auditEnv ? { AUDIT_URL: `http://127.0.0.1:${ports.audit}` } : {}),
      ...opts.gatewayEnv,
    };
    const queryEnv = { PROMPT_WEBHOOK_SECRETS_KEY: randomBytes(24).toString('hex') };
    const extra = name === 'gateway' ? gatewayEnv : name === 'query' ? queryEnv : name === 'ingest' ? (opts.ingestEnv ?? {}) : name === 'export-worker' ? (exportWorkerEnv ?? {}) : name === 'audit' ? (auditEnv ?? {}) : {};
    const proc = await startAppProcess(name, { ...env, ...extra, ...detached }, { port: ports[name], ...(detached ? { logFile: join(work, `${name}.log`) } : {}) });
    record('pids', String(proc.child.pid));
    procs[name] = proc;
    return proc;
  };
  await start('query');
  await start('ingest');
  if (exportWorkerEnv) await start('export-worker');
  if (auditEnv) await start('audit');
  await start('gateway');
  return {
    kafkaPrefix,
    get gateway() {
      return procs.gateway as AppProcess;
    },
    get ingest() {
      return procs.ingest as AppProcess;
    },
    get query() {
      return procs.query as AppProcess;
    },
    get exportWorker() {
      return procs['export-worker'];
    },
    get audit() {
      return procs.audit;
    },
    kafka,
    clickhouse,
    apiKey,
    env,
    restart: start,
    async stop() {
      for (const p of [procs.gateway, procs['export-worker'], procs.audit, procs.ingest, procs.query]) await p?.stop();
      await clickhouse.stop();
      await kafka.stop();
      await db.drop();
      rmSync(work, { recursive: true, force: true });
    },
  };
}
