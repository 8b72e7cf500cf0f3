import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, freePort, startAppProcess, startCluster, type AppProcess, type Cluster } from '@th/testing';
import { api, eventually, makeRun } from './cluster-client';

// Needs `npm run build` and Prometheus (`scripts/test.js` installs Debian's package when missing). Every app of
// the cluster form, an agent server and the standalone service run as their own processes; a real Prometheus
// started here scrapes each once a second and answers queries for their metrics.
jest.setTimeout(900_000);

const step = (what: string) => process.stdout.write(`${new Date().toISOString()} ${what}\n`);

const APPS = ['gateway', 'ingest', 'query', 'export-worker', 'audit', 'control-plane', 'agent-server', 'standalone'] as const;
type App = (typeof APPS)[number];

interface Prometheus {
  url: string;
  child: ChildProcess;
  log(): string;
}

async function startPrometheus(dir: string, targets: Record<App, string>): Promise<Prometheus> {
  const port = await freePort();
  const jobs = Object.entries(targets)
    .map(([app, url]) => `  - job_name: tracehouse-${app}\n    static_configs: [{ targets: ['${new URL(url).host}'] }]`)
    .join('\n');
  writeFileSync(join(dir, 'prometheus.yml'), `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n${jobs}\n`);
  const child = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const keep = (d: Buffer) => (log = (log + d.toString()).slice(-10_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const url = `http://127.0.0.1:${port}`;
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  await eventually(
    () => fetch(`${url}/-/ready`).then((r) => r.status, () => 0),
    (s) => s === 200,
    30_000,
  );
  return { url, child, log: () => log };
}

type Sample = { metric: Record<string, string>; value: [number, string] };
async function query(prom: Prometheus, promql: string): Promise<Sample[]> {
  const r = await fetch(`${prom.url}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await r.json()) as { status: string; data: { result: Sample[] } };
  if (body.status !== 'success') throw new Error(`${promql}: ${JSON.stringify(body)}`);
  return body.data.result;
}
const answered = (prom: Prometheus, promql: string, check: (s: Sample[]) => boolean = (s) => s.length > 0) => eventually(() => query(prom, promql), check, 60_000, 500);

describe('a real Prometheus scrapes every app', () => {
  const work = mkdtempSync(join(tmpdir(), 'th-metrics-'));
  let cluster: Cluster;
  let controlPlane: AppProcess;
  let agentServer: AppProcess;
  let standalone: AppProcess;
  let prom: Prometheus;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let standaloneDb: Awaited<ReturnType<typeof createTestDatabase>>;

  beforeAll(async () => {
    step('starting the cluster');
    cluster = await startCluster({ sharedKafka: true, exportWorkerEnv: {}, auditEnv: {} });
    db = await createTestDatabase('th_metrics');
    standaloneDb = await createTestDatabase('th_metrics_sa');
    const graphs = join(work, 'graphs');
    mkdirSync(graphs);
    writeFileSync(join(graphs, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
    writeFileSync(
      join(graphs, 'graph.js'),
      `const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
module.exports.graph = new StateGraph(MessagesAnnotation).addNode('echo', async () => ({ messages: [{ role: 'assistant', content: 'hi' }] }))
  .addEdge(START, 'echo').addEdge('echo', END).compile();`,
    );
    step('starting the control plane, an agent server and the standalone service');
    [controlPlane, agentServer, standalone] = await Promise.all([
      startAppProcess('control-plane', {
        INTERNAL_SIGNING_KEY: cluster.env.INTERNAL_SIGNING_KEY,
        KAFKA_BROKERS: cluster.env.KAFKA_BROKERS,
        KAFKA_PREFIX: cluster.kafkaPrefix,
        DATABASE_URL: db.url,
        CONTROL_PLANE_SECRETS_KEY: randomBytes(24).toString('hex'),
        CONTROL_PLANE_INSTALLATION: 'cloud',
        DATA_DIR: join(work, 'cp'),
      }),
      startAppProcess('agent-server', { DATABASE_URL: db.url, GRAPHS_CONFIG: join(graphs, 'langgraph.json') }),
      startAppProcess('standalone', { DATA_DIR: join(work, 'standalone'), DATABASE_URL: standaloneDb.url, BOOTSTRAP_API_KEY: `th_${randomBytes(12).toString('hex')}`, PRINT_BANNER: 'false' }, { timeoutMs: 300_000 }),
    ]);
    step('starting Prometheus');
    prom = await startPrometheus(work, {
      gateway: cluster.gateway.url,
      ingest: cluster.ingest.url,
      query: cluster.query.url,
      'export-worker': cluster.exportWorker!.url,
      audit: cluster.audit!.url,
      'control-plane': controlPlane.url,
      'agent-server': agentServer.url,
      standalone: standalone.url,
    });
  });

  afterAll(async () => {
    if (prom && prom.child.exitCode === null) {
      const exited = new Promise((r) => prom.child.once('exit', r));
      prom.child.kill('SIGTERM');
      await exited;
    }
    await standalone?.stop();
    await agentServer?.stop();
    await controlPlane?.stop();
    await cluster?.stop();
    await db?.drop();
    await standaloneDb?.drop();
    rmSync(work, { recursive: true, force: true });
  });

  it('every app is up and answers a metric of its own', async () => {
    const up = await answered(prom, 'up{job=~"tracehouse-.*"} == 1', (s) => s.length === APPS.length);
    expect(up.map((s) => s.metric.job).sort()).toEqual(APPS.map((a) => `tracehouse-${a}`).sort());
    // The readiness probes the test helpers made are counted by their route template.
    for (const app of APPS) {
      const r = await answered(prom, `tracehouse_http_requests_total{job="tracehouse-${app}",route="/health/ready",status_class="2xx"}`);
      expect(Number(r[0].value[1])).toBeGreaterThan(0);
      expect((await answered(prom, `process_resident_memory_bytes{job="tracehouse-${app}"}`)).length).toBe(1);
    }
    await answered(prom, 'tracehouse_postgres_pool_connections{job="tracehouse-control-plane",state="total"} > 0');
    await answered(prom, 'tracehouse_agent_queue_depth{job="tracehouse-agent-server"}');
    await answered(prom, 'tracehouse_clickhouse_query_duration_seconds_count{job="tracehouse-query"}');
    await answered(prom, 'tracehouse_kafka_consumer_lag{job="tracehouse-audit"}');
    await answered(prom, 'tracehouse_export_runs_in_progress{job="tracehouse-export-worker"}');
    await answered(prom, 'tracehouse_kafka_consumer_lag{job="tracehouse-standalone",topic="runs"}');
  });

  it('after a burst of ingest: requests by route template, rows landed, and the runs topic lag per partition back to 0', async () => {
    const call = api(cluster.gateway.url, cluster.apiKey);
    const project = `metrics-${randomBytes(4).toString('hex')}`;
    const batches = 20;
    const perBatch = 200;
    const sent = await Promise.all(
      Array.from({ length: batches }, async (_, b) => {
        const runs = Array.from({ length: perBatch }, (_, i) => makeRun(project, b * perBatch + i).post);
        return (await call('/runs/batch', { method: 'POST', json: { post: runs } })).status;
      }),
    );
    expect(sent.every((s) => s === 202)).toBe(true);
    const routed = await answered(prom, 'tracehouse_http_requests_total{job="tracehouse-gateway",route="/api/v1/runs/batch",method="POST",status_class="2xx"}', (s) => s.length === 1 && Number(s[0].value[1]) >= batches);
    expect(Number(routed[0].value[1])).toBe(batches);
    // No raw path or id ever becomes a label value.
    const routes = await query(prom, 'count by (route) (tracehouse_http_requests_total)');
    for (const s of routes) expect(s.metric.route).toMatch(/^(\/[A-Za-z0-9_.{}*-]*)+$|^unmatched$/);
    await answered(prom, 'sum(tracehouse_writer_rows_total{job="tracehouse-ingest"})', (s) => s.length === 1 && Number(s[0].value[1]) >= batches * perBatch);
    const lag = await answered(
      prom,
      'tracehouse_kafka_consumer_lag{job="tracehouse-ingest",topic="runs",group="ingest-writer"}',
      (s) => s.length === 4 && s.every((p) => p.value[1] === '0'),
    );
    expect(lag.map((s) => s.metric.partition).sort()).toEqual(['0', '1', '2', '3']);
    const consumed = await query(prom, 'sum(tracehouse_kafka_consumed_messages_total{job="tracehouse-ingest",topic="runs"})');
    expect(Number(consumed[0].value[1])).toBeGreaterThanOrEqual(batches * perBatch);
    const produced = await query(prom, 'sum(tracehouse_kafka_produced_messages_total{job="tracehouse-ingest",topic="runs"})');
    expect(Number(produced[0].value[1])).toBeGreaterThanOrEqual(batches * perBatch);
    const peak = await query(prom, 'max(max_over_time(tracehouse_kafka_consumer_lag{job="tracehouse-ingest",topic="runs"}[5m]))');
    process.stdout.write(`runs topic: peak lag seen by 1 s scrapes during a ${batches * perBatch}-run burst: ${peak[0]?.value[1]}\n`);
  });
});
