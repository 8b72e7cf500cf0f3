/**
 * Control-plane benchmark: for a small internal_source deployment (one echo graph, no install step),
 *   - create → DEPLOYED: POST /v2/deployments, upload-url, PUT the tarball, PATCH its object path, then
 *     poll the revision until DEPLOYED (every 25 ms) and check one run through the deployment's URL;
 *   - PATCH → new revision serving: PATCH a new tarball's object path, poll until the deployment's URL
 *     answers with the new version.
 * The ceiling, measured in the same run: a bare agent server started directly on the same unpacked graph
 * with a fresh database, until GET /ok answers (what every rollout has to pay at least).
 *
 *   npm run build && node scripts/run.js bench/control-plane/main.js [--repeat 5]
 *
 * The service is the standalone form as its own process on the machine's PostgreSQL (a fresh database).
 * Prints one JSON line per round and a summary line with medians and the ratios to the ceiling.
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase, freePort, repoRoot, startAppProcess, TEST_POSTGRES_ADMIN_URL } from '@th/testing';
import { median, round } from '../lib/stats';
import { ask, sleep, tarball, writeProject } from './echo-deployment';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A bare agent server on the same graph: the floor under any rollout. */
async function bareStart(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'cp-bench-bare-'));
  writeProject(dir, 'bare');
  const dbName = `th_bench_bare_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: TEST_POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${dbName}"`);
  const url = new URL(TEST_POSTGRES_ADMIN_URL);
  url.pathname = `/${dbName}`;
  const port = await freePort();
  const t0 = performance.now();
  const child = spawn(process.execPath, [join(repoRoot(), 'scripts', 'run.js'), 'agent-server'], {
    env: { PATH: process.env.PATH ?? '', NODE_PATH: join(repoRoot(), 'node_modules'), PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: url.toString(), GRAPHS_CONFIG: join(dir, 'langgraph.json'), LOG_LEVEL: 'warn' },
    stdio: 'ignore',
  });
  let ms = NaN;
  for (let i = 0; i < 2400; i++) {
    const ok = await fetch(`http://127.0.0.1:${port}/ok`).then((r) => r.status === 200, () => false);
    if (ok) {
      ms = performance.now() - t0;
      break;
    }
    await sleep(25);
  }
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const repeat = Number(argv[argv.indexOf('--repeat') + 1] || 5) || 5;
  const db = await createTestDatabase('th_bench_cp');
  const dataDir = mkdtempSync(join(tmpdir(), 'cp-bench-'));
  const key = `th_bench_${randomBytes(12).toString('hex')}`;
  const svc = await startAppProcess('standalone', { DATABASE_URL: db.url, DATA_DIR: dataDir, BOOTSTRAP_API_KEY: key, PRINT_BANNER: 'false', RATE_LIMIT_ENABLED: 'false', LOG_LEVEL: 'warn' });
  const api = async (path: string, init: { method?: string; json?: unknown } = {}): Promise<Json> => {
    const r = await fetch(`${svc.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { 'x-api-key': key, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
    const body = (await r.json()) as Json;
    if (r.status >= 300) throw new Error(`${init.method ?? 'GET'} ${path}: ${r.status} ${JSON.stringify(body)}`);
    return body;
  };
  const upload = async (id: string, version: string): Promise<string> => {
    const u = await api(`/deployments/${id}/upload-url`, { method: 'POST' });
    const put = await fetch(u.upload_url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: await tarball(version) });
    if (put.status !== 200) throw new Error(`upload: ${put.status}`);
    return u.object_path as string;
  };
  const untilDeployed = async (id: string, revisionId: string): Promise<void> => {
    for (let i = 0; i < 4800; i++) {
      const r = await api(`/v2/deployments/${id}/revisions/${revisionId}`);
      if (r.status === 'DEPLOYED') return;
      if (['BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED'].includes(r.status)) throw new Error(`${r.status}: ${r.status_message}`);
      await sleep(25);
    }
    throw new Error('never DEPLOYED');
  };

  const rounds: { create_to_deployed_ms: number; patch_to_serving_ms: number; bare_start_ms: number }[] = [];
  try {
    for (let i = 0; i < repeat; i++) {
      const t0 = performance.now();
      const dep = await api('/v2/deployments', {
        method: 'POST',
        json: { name: `bench-${randomUUID().slice(0, 8)}`, source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] },
      });
      const path = await upload(dep.id, 'v1');
      const p = await api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: path } } });
      await untilDeployed(dep.id, p.latest_revision_id);
      const createMs = performance.now() - t0;
      const url = (await api(`/v2/deployments/${dep.id}`)).source_config.custom_url as string;
      if ((await ask(url, key)) !== 'v1') throw new Error('the deployed server does not answer v1');

      const path2 = await upload(dep.id, 'v2');
      const t1 = performance.now();
      const p2 = await api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: path2 } } });
      let patchMs = NaN;
      for (let k = 0; k < 4800; k++) {
        if ((await ask(url, key)) === 'v2') {
          patchMs = performance.now() - t1;
          break;
        }
        const rev = await api(`/v2/deployments/${dep.id}/revisions/${p2.latest_revision_id}`);
        if (['BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED'].includes(rev.status)) throw new Error(`PATCH revision ${rev.status}: ${rev.status_message}`);
        await sleep(25);
      }
      if (Number.isNaN(patchMs)) throw new Error('the new revision never served');
      await api(`/v2/deployments/${dep.id}`, { method: 'DELETE' });
      for (let k = 0; k < 1200; k++) {
        const gone = await fetch(`${svc.url}/v2/deployments/${dep.id}`, { headers: { 'x-api-key': key } });
        if (gone.status === 404) break;
        await sleep(50);
      }
      const bare = await bareStart();
      const row = { create_to_deployed_ms: round(createMs), patch_to_serving_ms: round(patchMs), bare_start_ms: round(bare) };
      rounds.push(row);
      process.stdout.write(JSON.stringify({ round: i + 1, ...row }) + '\n');
    }
    const m = (k: keyof (typeof rounds)[number]) => median(rounds.map((r) => r[k]));
    process.stdout.write(
      JSON.stringify({
        summary: true,
        rounds: rounds.length,
        create_to_deployed_ms_median: round(m('create_to_deployed_ms')),
        patch_to_serving_ms_median: round(m('patch_to_serving_ms')),
        bare_start_ms_median: round(m('bare_start_ms')),
        create_ratio_to_bare: round(m('create_to_deployed_ms') / m('bare_start_ms'), 2),
        patch_ratio_to_bare: round(m('patch_to_serving_ms') / m('bare_start_ms'), 2),
      }) + '\n',
    );
  } finally {
    await svc.stop();
    await db.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
