/**
 * What the sandbox's network costs a run: runs/wait round trips through a deployment's address, with the agent
 * server sandboxed (AGENT_SANDBOX=bwrap: the front proxy reaches it on its unix socket, its database through the
 * relay) and without (unsafe-none: loopback TCP, direct database), two standalone services in the same sitting,
 * calls interleaved so both see the same load.
 *
 *   npm run build && node scripts/run.js bench/control-plane/relay-latency.js [--calls 100]
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, startAppProcess, type AppProcess } from '@th/testing';
import { median, percentile, round } from '../lib/stats';
import { sleep, tarball } from './echo-deployment';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Service {
  mode: string;
  proc: AppProcess;
  key: string;
  url: string;
  close(): Promise<void>;
}

async function start(mode: 'bwrap' | 'unsafe-none'): Promise<Service> {
  const db = await createTestDatabase('th_bench_relay');
  const dataDir = mkdtempSync(join(tmpdir(), 'relay-bench-'));
  const key = `th_bench_${randomBytes(12).toString('hex')}`;
  const proc = await startAppProcess('standalone', { DATABASE_URL: db.url, DATA_DIR: dataDir, BOOTSTRAP_API_KEY: key, PRINT_BANNER: 'false', RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'warn', AGENT_SANDBOX: mode, WEB_LINK_PORT: '0' });
  const api = async (path: string, init: { method?: string; json?: unknown } = {}): Promise<Json> => {
    const r = await fetch(`${proc.url}${path}`, { method: init.method ?? 'GET', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: init.json !== undefined ? JSON.stringify(init.json) : undefined });
    const body = (await r.json()) as Json;
    if (r.status >= 300) throw new Error(`${path}: ${r.status} ${JSON.stringify(body)}`);
    return body;
  };
  const dep = await api('/v2/deployments', { method: 'POST', json: { name: `relay-${randomUUID().slice(0, 8)}`, source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] } });
  const u = await api(`/deployments/${dep.id}/upload-url`, { method: 'POST' });
  await fetch(u.upload_url, { method: 'PUT', body: await tarball('v1') });
  const p = await api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: u.object_path } } });
  for (let i = 0; ; i++) {
    const r = await api(`/v2/deployments/${dep.id}/revisions/${p.latest_revision_id}`);
    if (r.status === 'DEPLOYED') break;
    if (['BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED'].includes(r.status) || i > 2400) throw new Error(`${mode}: ${r.status} ${r.status_message}`);
    await sleep(50);
  }
  const url = (await api(`/v2/deployments/${dep.id}`)).source_config.custom_url as string;
  return {
    mode,
    proc,
    key,
    url,
    async close() {
      await proc.stop();
      await db.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One runs/wait on the thread (stateful: the server reads and writes its checkpoints), in ms. */
async function roundTrip(s: Service, threadId: string): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${s.url}/threads/${threadId}/runs/wait`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': s.key },
    body: JSON.stringify({ assistant_id: 'echo', input: { messages: [{ role: 'user', content: 'x' }] } }),
  });
  await r.arrayBuffer();
  if (r.status !== 200) throw new Error(`${s.mode}: runs/wait ${r.status}`);
  return performance.now() - t0;
}



async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const calls = Number(argv[argv.indexOf('--calls') + 1] || 100) || 100;
  const services = [await start('bwrap'), await start('unsafe-none')];
  try {
    const threads = await Promise.all(
      services.map(async (s) => ((await (await fetch(`${s.url}/threads`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': s.key }, body: '{}' })).json()) as Json).thread_id as string),
    );
    const times: number[][] = services.map(() => []);
    for (let i = 0; i < calls + 10; i++) {
      for (const [k, s] of services.entries()) {
        const ms = await roundTrip(s, threads[k]);
        if (i >= 10) times[k].push(ms); // the first ten warm up pools and the JIT
      }
    }
    const [sandboxed, direct] = times;
    process.stdout.write(
      JSON.stringify({
        calls,
        sandboxed_median_ms: round(median(sandboxed), 2),
        sandboxed_p95_ms: round(percentile(sandboxed, 95), 2),
        unsafe_none_median_ms: round(median(direct), 2),
        unsafe_none_p95_ms: round(percentile(direct, 95), 2),
        added_median_ms: round(median(sandboxed) - median(direct), 2),
        ratio_median: round(median(sandboxed) / median(direct), 2),
      }) + '\n',
    );
  } finally {
    for (const s of services) await s.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
