import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SpanKind, endSpan, startSpan } from './self-tracing';
import { routeTemplateOf } from './route-template';

/**
 * The process's Prometheus registry and every metric the services expose, declared once here (docs/metrics.md
 * lists them, and a test checks that list, the alert rules and the dashboards against this registry). One
 * registry per process, like the process metrics it also holds: the libraries that update it (the Kafka bus,
 * the ClickHouse client, the writer) are built outside Nest's container, and the standalone service runs every
 * role in one process. Labels take values from small fixed sets (route templates, topics, states), never ids.
 */
export const metricsRegistry = new Registry();

const SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LONG_SECONDS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600];
const COUNTS = [1, 5, 10, 50, 100, 500, 1000, 5000, 10000, 50000];

const counter = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
  new Counter<L>({ name, help, labelNames, registers: [metricsRegistry] });
const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
  new Gauge<L>({ name, help, labelNames, registers: [metricsRegistry] });
const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
  new Histogram<L>({ name, help, labelNames, buckets, registers: [metricsRegistry] });

export const METRICS = {
  httpRequests: counter('tracehouse_http_requests_total', 'HTTP requests answered, by route template, method and status class.', ['route', 'method', 'status_class']),
  httpDuration: histogram('tracehouse_http_request_duration_seconds', 'Time from a request to its answer, by route template, method and status class.', ['route', 'method', 'status_class'], SECONDS),

  kafkaProduceDuration: histogram('tracehouse_kafka_produce_duration_seconds', 'Time for one produce request (the publishes coalesced into it) to be acknowledged.', ['topic'], SECONDS),
  kafkaProducedMessages: counter('tracehouse_kafka_produced_messages_total', 'Messages acknowledged by the broker, by topic.', ['topic']),
  kafkaProduceErrors: counter('tracehouse_kafka_produce_errors_total', 'Messages whose produce request failed, by topic.', ['topic']),
  kafkaConsumedMessages: counter('tracehouse_kafka_consumed_messages_total', 'Messages handled and committed by this process, by topic and consumer group.', ['topic', 'group']),
  kafkaBatchRetries: counter('tracehouse_kafka_batch_retries_total', 'Times a consumer batch handler failed and its batch was retried, by topic and group.', ['topic', 'group']),
  kafkaConsumerLag: gauge('tracehouse_kafka_consumer_lag', "Messages on a partition past its consumer group's committed offset (read from the broker at scrape time).", ['topic', 'partition', 'group']),
  deadLettered: counter('tracehouse_dead_lettered_messages_total', 'Messages sent to a dead-letter topic, by source topic and reason (invalid_json, schema, rejected).', ['topic', 'reason']),

  writerBatchSize: histogram('tracehouse_writer_batch_messages', 'Messages in each batch the run writer handled.', [], COUNTS),
  writerRows: counter('tracehouse_writer_rows_total', 'Run versions the writer landed in ClickHouse.'),
  writerInsertDuration: histogram('tracehouse_writer_insert_duration_seconds', "Time of each of the writer's grouped inserts, by outcome (ok, error).", ['outcome'], SECONDS),
  writerInsertBytes: histogram('tracehouse_writer_insert_bytes', "Body size of each of the writer's grouped inserts.", [], [16_384, 65_536, 262_144, 1_048_576, 4_194_304, 16_777_216, 67_108_864]),
  writerFailures: counter('tracehouse_writer_failed_batches_total', 'Writer batches whose rows could not be written (the batch is retried).'),
  writerCacheEntries: gauge('tracehouse_writer_merge_cache_entries', "Runs in the writer's merge cache."),

  clickhouseQueryDuration: histogram('tracehouse_clickhouse_query_duration_seconds', 'ClickHouse statements, by kind (query, command, insert, ping) and outcome (ok, error).', ['kind', 'outcome'], SECONDS),
  clickhouseInFlight: gauge('tracehouse_clickhouse_statements_in_flight', 'ClickHouse statements under way on this process (its connection lanes in use).'),
  postgresQueryDuration: histogram('tracehouse_postgres_query_duration_seconds', 'PostgreSQL queries, by outcome (ok, error).', ['outcome'], SECONDS),
  postgresPoolConnections: gauge('tracehouse_postgres_pool_connections', 'PostgreSQL pool connections, by state (total, idle, waiting: requests waiting for one).', ['state']),

  rateLimitDecisions: counter('tracehouse_rate_limit_decisions_total', 'Rate-limit checks, by rule id and decision (allowed, limited, store-down).', ['rule', 'decision']),

  exportJobs: counter('tracehouse_export_job_transitions_total', 'Bulk-export jobs (and their runs) entering a state.', ['state']),
  exportRunning: gauge('tracehouse_export_runs_in_progress', 'Bulk-export runs this worker is writing now.'),
  exportOldestRunAge: gauge('tracehouse_export_oldest_run_age_seconds', 'Age of the longest-running bulk-export run on this worker (0: none).'),
  exportRows: counter('tracehouse_export_rows_total', 'Rows written to bulk-export destinations.'),
  exportBytes: counter('tracehouse_export_bytes_total', 'Bytes written to bulk-export destinations.'),

  auditAppends: counter('tracehouse_audit_appends_total', 'Audit records offered to the log, by outcome (stored, duplicate: a re-delivery kept once, conflict: id taken by another record, failed: the append failed and is retried).', ['outcome']),

  rollouts: counter('tracehouse_rollouts_total', 'Control-plane rollouts (revisions) that reached a final state.', ['state']),
  rolloutDuration: histogram('tracehouse_rollout_duration_seconds', 'Time from a revision being queued to its final state.', ['state'], LONG_SECONDS),

  agentQueueDepth: gauge('tracehouse_agent_queue_depth', "Agent runs waiting in the agent server's queue (read at scrape time)."),
  agentRuns: counter('tracehouse_agent_runs_total', 'Agent runs finished, by status.', ['status']),
  agentRunDuration: histogram('tracehouse_agent_run_duration_seconds', 'Agent run time, by status.', ['status'], [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900]),
  agentLeaseReaps: counter('tracehouse_agent_lease_reaps_total', 'Agent runs whose worker lease expired and that were taken back into the queue.'),
} as const;

let processMetrics = false;
/** Node's process metrics (CPU, memory, event-loop lag, GC) in the registry; once per process. */
export function enableProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: metricsRegistry });
}

/** Async gauges read at scrape time (consumer lag from the broker, the agent queue from PostgreSQL). */
const scrapeHooks = new Set<() => Promise<void>>();
/** Runs `hook` before each scrape (errors are logged by the caller's hook, never fail the scrape); returns its removal. */
export function onScrape(hook: () => Promise<void>): () => void {
  scrapeHooks.add(hook);
  return () => scrapeHooks.delete(hook);
}

/** The exposition text, after the scrape hooks (each bounded to 2 s). */
export async function renderMetrics(): Promise<string> {
  await Promise.all(
    [...scrapeHooks].map((h) => {
      let timer: NodeJS.Timeout | undefined;
      return Promise.race([h().catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, 2_000)))]).finally(() => clearTimeout(timer));
    }),
  );
  return metricsRegistry.metrics();
}

/** Times `fn` into a histogram with an `outcome` label (ok, error). */
export async function timed<T>(h: Histogram<'outcome'> | Histogram<'kind' | 'outcome'>, labels: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const end = (h as Histogram<string>).startTimer(labels);
  try {
    const out = await fn();
    end({ outcome: 'ok' });
    return out;
  } catch (err) {
    end({ outcome: 'error' });
    throw err;
  }
}

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const STATUS_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];

/** Counts and times every answered request by route template (an Express/connect middleware). */
export function httpMetricsMiddleware(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  const start = process.hrtime.bigint();
  res.once('finish', () => {
    const method = METHODS.has(req.method ?? '') ? (req.method as string) : 'OTHER';
    const labels = { route: routeTemplateOf(req), method, status_class: STATUS_CLASSES[Math.floor(res.statusCode / 100) - 1] ?? 'other' };
    METRICS.httpRequests.inc(labels);
    METRICS.httpDuration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
  });
  next();
}

export interface MetricsEndpointOptions {
  /** Bearer token /metrics asks for on the public port (METRICS_TOKEN); unset: open. */
  token?: string;
}

function tokenMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/i.exec(header ?? '')?.[1] ?? '');
  const want = Buffer.from(token);
  return given.length === want.length && timingSafeEqual(given, want);
}

/** Answers GET /metrics with the exposition text (anything else: next). */
export function metricsEndpoint(opts: MetricsEndpointOptions = {}) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) return next();
    if (opts.token && !tokenMatches(req.headers.authorization, opts.token)) {
      res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' }).end(JSON.stringify({ detail: 'Metrics need the METRICS_TOKEN bearer token' }));
      return;
    }
    renderMetrics().then(
      (text) => res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain' }).end(String(err)),
    );
  };
}

/** A server of its own for /metrics (METRICS_PORT): unauthenticated, for a network the operators control. */
export async function startMetricsServer(host: string, port: number): Promise<Server> {
  const handle = metricsEndpoint();
  const server = createServer((req, res) => handle(req, res, () => res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: 'Not Found' }))));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}

/** What instrumentPgPool needs of a `pg` Pool (structural: this library does not depend on pg). */
export interface PgPoolLike {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
  on(event: 'acquire', listener: (client: { query: (...args: unknown[]) => unknown }) => void): unknown;
}

const TIMED = Symbol('th:pg-timed');

const pgPools = new Set<PgPoolLike>();
onScrape(async () => {
  let total = 0;
  let idle = 0;
  let waiting = 0;
  for (const p of pgPools) {
    total += p.totalCount;
    idle += p.idleCount;
    waiting += p.waitingCount;
  }
  METRICS.postgresPoolConnections.set({ state: 'total' }, total);
  METRICS.postgresPoolConnections.set({ state: 'idle' }, idle);
  METRICS.postgresPoolConnections.set({ state: 'waiting' }, waiting);
});

/**
 * Times the promise-returning queries of a pg pool's connections and counts its connections at scrape time
 * (`forget` it when the pool ends). Callback and streaming queries pass through untimed.
 */
export function instrumentPgPool(pool: PgPoolLike): { forget(): void } {
  pgPools.add(pool);
  // On every checkout, wrapped once per client: the connection the data source opened before this ran (the one
  // a quiet pool keeps reusing) is timed too.
  pool.on('acquire', (client) => {
    const marked = client as unknown as Record<symbol, boolean>;
    if (marked[TIMED]) return;
    marked[TIMED] = true;
    const query = client.query.bind(client);
    client.query = (...args: unknown[]) => {
      // Self-tracing on: a CLIENT span per query (null when off).
      const span = startSpan('postgres query', SpanKind.CLIENT, { 'db.system.name': 'postgresql' });
      const out = query(...args);
      if (!(out instanceof Promise)) {
        if (span) endSpan(span);
        return out;
      }
      const end = METRICS.postgresQueryDuration.startTimer();
      out.then(
        () => {
          end({ outcome: 'ok' });
          if (span) endSpan(span);
        },
        (err: unknown) => {
          end({ outcome: 'error' });
          if (span) endSpan(span, err);
        },
      );
      return out;
    };
  });
  return { forget: () => void pgPools.delete(pool) };
}
