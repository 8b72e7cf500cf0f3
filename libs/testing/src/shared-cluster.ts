import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from './app-process';
import { startCluster, type ClusterOptions } from './cluster';
import { sharedKafka } from './kafka-server';
import { TEST_POSTGRES_ADMIN_URL } from './postgres';

/** What a suite needs to call a shared cluster; its processes belong to the worker, not to the suite. */
export interface SharedCluster {
  gateway: { url: string };
  ingest: { url: string };
  query: { url: string };
  audit: { url: string };
  kafka: { brokers: string };
  /** KAFKA_PREFIX of its services (see Cluster.kafkaPrefix). */
  kafkaPrefix: string;
  /** The bootstrap key: an organization admin of the one organization every suite of the worker shares. */
  bootstrapApiKey: string;
}

interface SharedClusterState extends SharedCluster {
  pids: number[];
}

/**
 * The one set of options of the shared cluster: the union of what its suites need. The audit app runs
 * with audit logs allowed for every organization (the audit suite reads /audit-logs).
 */
export const SHARED_CLUSTER_OPTIONS: ClusterOptions = {
  sharedKafka: true,
  auditEnv: { DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'true' },
  gatewayEnv: { DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'true' },
};

/** This process's start time (clock ticks since boot): with the pid, names this process and no later one with a recycled pid. */
function processStartTicks(): string {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

/** Whether `pid` is still a process of this cluster (its environment carries the folder), not a recycled pid. */
function isOurs(pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').includes(`TH_SHARED_CLUSTER=${dir}`);
  } catch {
    return false;
  }
}

/**
 * Once this process (the jest worker) is gone: SIGKILL the cluster's processes, drop its database (and any
 * deployment databases it recorded) and remove the folder. Started before the first process, so a worker
 * that dies half-way through start-up leaves nothing behind either.
 */
function spawnReaper(dir: string): void {
  const dropDatabases = [
    "const { Client } = require('pg');",
    '(async () => {',
    '  const c = new Client({ connectionString: process.argv[1] });',
    '  await c.connect();',
    "  for (const name of process.argv.slice(2)) await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`).catch(() => undefined);",
    '  await c.end();',
    '})().catch(() => process.exit(1));',
  ].join('\n');
  const script = [
    `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done`,
    'dir="$1"',
    'if [ -f "$dir/pids" ]; then',
    '  while read -r p; do',
    '    if [ -n "$p" ] && tr "\\0" "\\n" < "/proc/$p/environ" 2>/dev/null | grep -qxF "TH_SHARED_CLUSTER=$dir"; then kill -9 "$p" 2>/dev/null; fi',
    '  done < "$dir/pids"',
    'fi',
    'if [ -f "$dir/database" ]; then "$2" -e "$3" "$4" $(cat "$dir/database"); fi',
    'sleep 1',
    'rm -rf "$dir"',
  ].join('\n');
  const reaper = spawn('bash', ['-c', script, 'th-shared-cluster-reaper', dir, process.execPath, dropDatabases, TEST_POSTGRES_ADMIN_URL], {
    cwd: repoRoot(),
    detached: true,
    stdio: 'ignore',
  });
  reaper.on('error', () => undefined);
  reaper.unref();
}

async function alive(state: SharedClusterState, dir: string, brokers: string): Promise<boolean> {
  if (state.kafka.brokers !== brokers || !state.pids.every((pid) => isOurs(pid, dir))) return false;
  try {
    return (await fetch(`${state.gateway.url}/health/ready`, { signal: AbortSignal.timeout(10_000) })).status === 200;
  } catch {
    return false;
  }
}

/**
 * One cluster (SHARED_CLUSTER_OPTIONS) per jest worker, started by the first suite that asks and reused by the
 * next ones of the same worker, like sharedKafka: for suites that stop, kill and reconfigure nothing, and keep
 * apart by a workspace of their own (see useSharedCluster in apps/e2e). Jest gives no hook at a worker's end,
 * so a reaper stops it when the worker exits; its folder is named by the worker's pid and start time, so no
 * run ever picks up a cluster an earlier run left. If one of its processes died, the next suite starts a new
 * cluster rather than testing against a half one.
 */
export async function sharedCluster(): Promise<SharedCluster> {
  const kafka = await sharedKafka();
  const dir = join(tmpdir(), `th-cluster-shared-${process.pid}-${processStartTicks()}`);
  const stateFile = join(dir, 'shared.json');
  if (existsSync(stateFile)) {
    const state = JSON.parse(readFileSync(stateFile, 'utf8')) as SharedClusterState;
    if (await alive(state, dir, kafka.brokers)) return state;
    for (const pid of state.pids) if (isOurs(pid, dir)) process.kill(pid, 'SIGKILL');
    // The reaper of this folder is still waiting for the worker: it drops the databases recorded here.
    for (const stale of ['shared.json', 'pids', 'clickhouse']) rmSync(join(dir, stale), { recursive: true, force: true });
  } else {
    mkdirSync(dir, { recursive: true });
    spawnReaper(dir);
  }
  const cluster = await startCluster({ ...SHARED_CLUSTER_OPTIONS, detachTo: dir });
  const audit = cluster.audit;
  if (audit === undefined) throw new Error('sharedCluster: the audit app did not start');
  const state: SharedClusterState = {
    gateway: { url: cluster.gateway.url },
    ingest: { url: cluster.ingest.url },
    query: { url: cluster.query.url },
    audit: { url: audit.url },
    kafka: { brokers: cluster.kafka.brokers },
    kafkaPrefix: cluster.kafkaPrefix,
    bootstrapApiKey: cluster.apiKey,
    pids: [cluster.clickhouse.child, cluster.query.child, cluster.ingest.child, audit.child, cluster.gateway.child].map((c) => c.pid as number),
  };
  writeFileSync(stateFile, JSON.stringify(state));
  return state;
}
