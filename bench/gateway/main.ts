/**
 * Gateway benchmark: requests per second through the cluster gateway (API-key
 * authentication, rate limiting with counters in Redis, the signed identity header, the streamed proxy
 * hop) against the same requests sent straight to the query service with the identity header the
 * gateway would have signed, in one run on the same processes. A third figure, the gateway with rate
 * limiting off, tells the limiter's share of the cost apart from authentication and the proxy hop.
 * Two requests: GET /api/v1/runs/{id} (a ClickHouse point read; the service is the bottleneck) and
 * GET /api/v1/sessions/{id} (a PostgreSQL point read; cheap, so the gateway's own cost shows).
 *
 *   npm run build && node scripts/run.js bench/gateway/main.js [--runs 1000] [--repeat 3]
 *       [--seconds 10] [--warmup 3] [--concurrency 32] [--requests run,session] [--redis redis://127.0.0.1:6379]
 *       [--lease-max N]
 *
 * The spec limits GET /runs/{uuid} to 30 per minute per API key (and any other keyed request to 1000 per
 * 10 s), so a throughput test with the spec's values would measure 429s. The gateway under test raises
 * those two rows with RATE_LIMIT_OVERRIDES so every request does the limiter's whole work (the counter
 * in Redis, the headers) and is then served. The counter is kept as in production: the replica reserves
 * blocks of the window's budget in Redis (at most 1/100 of the limit and RATE_LIMIT_LEASE_MAX, 100 by
 * default; with the raised limits the block is that maximum) and counts from its block. `--lease-max N`
 * sets RATE_LIMIT_LEASE_MAX for the gateway: 10 is the block the spec's 1000-per-10-s default row gets,
 * 1 sends every request's count to Redis.
 * Rounds alternate the order of the three targets; each round prints one JSON line, then the medians.
 * Target: the gateway (limits on) keeps at least 80% of the direct throughput. Every process (client,
 * gateway, query, PostgreSQL, Redis, ClickHouse) shares this machine's cores, so the gateway's CPU is
 * taken from the service it fronts; each round line carries the 1-minute load average for that reason.
 */
import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import type { Request } from 'express';
import { IDENTITY_HEADER, signIdentity } from '@th/auth';
import { openServiceDataSource } from '@th/database';
import { GATEWAY_ENTITIES, GATEWAY_MIGRATIONS, IdentityService } from '@th/gateway';
import { startAppProcess, startCluster, type AppProcess, type Cluster } from '@th/testing';
import { median, percentile, round } from '../lib/stats';
import { benchRun } from '../lib/workload';

interface Args {
  runs: number;
  repeat: number;
  seconds: number;
  warmup: number;
  concurrency: number;
  requests: RequestKind[];
  redis: string;
  leaseMax?: number;
}

type RequestKind = 'run' | 'session';

function parseArgs(): Args {
  const a = process.argv.slice(2);
  const get = (k: string, d: string) => {
    const i = a.indexOf(`--${k}`);
    return i >= 0 ? a[i + 1] : d;
  };
  const num = (k: string, d: number, min = 1) => {
    const v = Number(get(k, String(d)));
    if (!Number.isFinite(v) || v < min) throw new Error(`--${k} must be a number >= ${min}`);
    return v;
  };
  return {
    runs: Math.floor(num('runs', 1000)),
    repeat: Math.floor(num('repeat', 3)),
    seconds: num('seconds', 10),
    warmup: num('warmup', 3, 0),
    concurrency: Math.floor(num('concurrency', 32)),
    requests: get('requests', 'run,session')
      .split(',')
      .map((k) => {
        if (k !== 'run' && k !== 'session') throw new Error('--requests takes run and/or session');
        return k as RequestKind;
      }),
    redis: get('redis', 'redis://127.0.0.1:6379'),
    leaseMax: a.includes('--lease-max') ? Math.floor(num('lease-max', 100)) : undefined,
  };
}

interface Load {
  rps: number;
  requests: number;
  p50_ms: number;
  p99_ms: number;
  non200: number;
  gateway_cpu_us_per_req?: number;
  query_cpu_us_per_req?: number;
  client_cpu_us_per_req?: number;
}

/** `concurrency` keep-alive connections, each sending GETs back to back for `seconds`. */
async function load(baseUrl: string, headers: () => http.OutgoingHttpHeaders, paths: string[], seconds: number, concurrency: number): Promise<Load> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL(baseUrl);
  const latencies: number[] = [];
  let non200 = 0;
  const deadline = performance.now() + seconds * 1000;
  const one = (path: string) =>
    new Promise<void>((resolve, reject) => {
      const t0 = performance.now();
      const req = http.request({ host: url.hostname, port: url.port, path, method: 'GET', headers: headers(), agent }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) non200 += 1;
          latencies.push(performance.now() - t0);
          resolve();
        });
      });
      req.on('error', reject);
      req.end();
    });
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, w) => {
      for (let i = w; performance.now() < deadline; i += concurrency) await one(paths[i % paths.length]);
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  agent.destroy();
  return { rps: round(latencies.length / elapsed), requests: latencies.length, p50_ms: round(percentile(latencies, 50), 2), p99_ms: round(percentile(latencies, 99), 2), non200 };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  const args = parseArgs();
  const tag = randomBytes(4).toString('hex');
  const overrides = 'run-lookup-api-key=1000000000/60,default-api-key=1000000000/10';
  const cluster: Cluster = await startCluster({
    gatewayEnv: {
      RATE_LIMIT_ENABLED: 'true',
      REDIS_URL: args.redis,
      RATE_LIMIT_KEY_PREFIX: `th:bench:rl:${tag}:`,
      RATE_LIMIT_OVERRIDES: overrides,
      ...(args.leaseMax !== undefined ? { RATE_LIMIT_LEASE_MAX: String(args.leaseMax) } : {}),
    },
  });
  let unlimited: AppProcess | undefined;
  try {
    unlimited = await startAppProcess('gateway', { ...cluster.env, BOOTSTRAP_API_KEY: cluster.apiKey, RATE_LIMIT_ENABLED: 'false' });
    // The identity the gateway signs for this key, resolved the way the gateway resolves it.
    const db = await openServiceDataSource({ url: cluster.env.DATABASE_URL, schema: 'gateway', entities: GATEWAY_ENTITIES, migrations: GATEWAY_MIGRATIONS });
    const identity = await new IdentityService(db).resolve({ headers: { 'x-api-key': cluster.apiKey } } as unknown as Request);
    await db.destroy();
    if (!identity) throw new Error('bootstrap key did not resolve');

    // Seed runs through the gateway and wait until the query service serves every one.
    const project = `bench-gw-${tag}`;
    const runs = Array.from({ length: args.runs }, (_, i) => benchRun(project, i, Date.UTC(2026, 10, 1) + i));
    for (let i = 0; i < runs.length; i += 100) {
      const chunk = runs.slice(i, i + 100);
      const res = await fetch(`${cluster.gateway.url}/runs/batch`, {
        method: 'POST',
        headers: { 'x-api-key': cluster.apiKey, 'content-type': 'application/json' },
        body: JSON.stringify({ post: chunk.map((r) => r.post), patch: chunk.map((r) => r.patch) }),
      });
      if (res.status !== 202) throw new Error(`seed batch: ${res.status} ${await res.text()}`);
    }
    const ids = runs.map((r) => r.id);
    const signed = () => ({ [IDENTITY_HEADER]: signIdentity(identity, cluster.env.INTERNAL_SIGNING_KEY) });
    await waitUntil(
      'seeded runs',
      async () => {
        for (const id of [ids[0], ids[ids.length - 1]]) {
          const r = await fetch(`${cluster.query.url}/api/v1/runs/${id}`, { headers: signed() });
          await r.text();
          if (r.status !== 200) return false;
        }
        return true;
      },
      120_000,
    );

    const projects = (await (await fetch(`${cluster.gateway.url}/api/v1/sessions?name=${project}`, { headers: { 'x-api-key': cluster.apiKey } })).json()) as { id: string }[];
    if (projects.length !== 1) throw new Error(`project ${project} not found`);
    const paths: Record<RequestKind, string[]> = { run: ids.map((id) => `/api/v1/runs/${id}`), session: [`/api/v1/sessions/${projects[0].id}`] };
    const label: Record<RequestKind, string> = { run: 'GET /api/v1/runs/{id}', session: 'GET /api/v1/sessions/{id}' };

    const keyHeaders = { 'x-api-key': cluster.apiKey };
    let directHeaders = signed();
    const targets: Record<string, { url: string; headers: () => http.OutgoingHttpHeaders; gatewayPid?: number }> = {
      direct: { url: cluster.query.url, headers: () => directHeaders },
      gateway: { url: cluster.gateway.url, headers: () => keyHeaders, gatewayPid: cluster.gateway.child.pid },
      gateway_no_limits: { url: unlimited.url, headers: () => keyHeaders, gatewayPid: unlimited.child.pid },
    };
    const queryPid = cluster.query.child.pid;
    for (const kind of args.requests) {
      const rounds: Record<string, Load>[] = [];
      for (let r = 0; r < args.repeat; r++) {
        directHeaders = signed(); // the signed header lives 5 minutes: one per round
        const order = r % 2 === 0 ? ['direct', 'gateway', 'gateway_no_limits'] : ['gateway_no_limits', 'gateway', 'direct'];
        const result: Record<string, Load> = {};
        for (const name of order) {
          const t = targets[name];
          if (args.warmup > 0) await load(t.url, t.headers, paths[kind], args.warmup, args.concurrency);
          const before = { gateway: cpuSeconds(t.gatewayPid), query: cpuSeconds(queryPid), client: process.cpuUsage() };
          const measured = await load(t.url, t.headers, paths[kind], args.seconds, args.concurrency);
          const perReq = (seconds: number) => round((seconds * 1e6) / measured.requests, 0);
          const client = process.cpuUsage(before.client);
          result[name] = {
            ...measured,
            // CPU each process spent per request: what the gateway costs independent of how busy the machine is.
            gateway_cpu_us_per_req: perReq(cpuSeconds(t.gatewayPid) - before.gateway),
            query_cpu_us_per_req: perReq(cpuSeconds(queryPid) - before.query),
            client_cpu_us_per_req: perReq((client.user + client.system) / 1e6),
          };
          if (result[name].non200 > 0) throw new Error(`${kind} ${name}: ${result[name].non200} responses were not 200`);
        }
        rounds.push(result);
        process.stdout.write(
          `${JSON.stringify({ request: label[kind], round: r, loadavg_1m: round(loadavg()[0], 2), ...result, gateway_over_direct: round(result.gateway.rps / result.direct.rps, 3), gateway_no_limits_over_direct: round(result.gateway_no_limits.rps / result.direct.rps, 3) })}\n`,
        );
      }
      const med = (name: string, field: keyof Load) => median(rounds.map((x) => x[name][field] ?? NaN));
      const ratio = round(median(rounds.map((x) => x.gateway.rps / x.direct.rps)), 3);
      process.stdout.write(
        `${JSON.stringify({
          bench: 'gateway',
          request: label[kind],
          runs: args.runs,
          repeat: args.repeat,
          seconds: args.seconds,
          concurrency: args.concurrency,
          rate_limit_overrides: overrides,
          rate_limit_lease_max: args.leaseMax ?? 'default',
          median: {
            direct_rps: med('direct', 'rps'),
            gateway_rps: med('gateway', 'rps'),
            gateway_no_limits_rps: med('gateway_no_limits', 'rps'),
            direct_p50_ms: med('direct', 'p50_ms'),
            gateway_p50_ms: med('gateway', 'p50_ms'),
            direct_p99_ms: med('direct', 'p99_ms'),
            gateway_p99_ms: med('gateway', 'p99_ms'),
            query_cpu_us_per_req_direct: med('direct', 'query_cpu_us_per_req'),
            query_cpu_us_per_req_via_gateway: med('gateway', 'query_cpu_us_per_req'),
            gateway_cpu_us_per_req: med('gateway', 'gateway_cpu_us_per_req'),
            gateway_no_limits_cpu_us_per_req: med('gateway_no_limits', 'gateway_cpu_us_per_req'),
            client_cpu_us_per_req_direct: med('direct', 'client_cpu_us_per_req'),
            gateway_over_direct: ratio,
            gateway_no_limits_over_direct: round(median(rounds.map((x) => x.gateway_no_limits.rps / x.direct.rps)), 3),
          },
          target: { gateway_over_direct_min: 0.8, met: ratio >= 0.8 },
        })}\n`,
      );
    }
  } finally {
    await unlimited?.stop();
    await cluster.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
