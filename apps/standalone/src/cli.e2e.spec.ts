import { execFileSync, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'langsmith';
import { dottedSegment as seg } from '@th/ingest';
import { repoRoot, startS3Server, type S3Server } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

// The compiled CLI through its npm bin launcher, as a pipeline runs it (`npm run build` first): stdout is not a
// terminal, so output defaults to JSON lines and progress to one stderr line per status change.
type Json = Record<string, any>;

const BUCKET = 'th-cli-exports';
const CLI_TIMEOUT_MS = 120_000;
// s3proxy (a JVM) and the whole service start here: on a loaded 2-core machine that alone has taken over 100 s.
const START_MS = 300_000;

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

const GRAPH_JS = `'use strict';
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
const graph = new StateGraph(MessagesAnnotation)
  .addNode('echo', async (s) => ({ messages: [{ role: 'assistant', content: 'echo ' + (process.env.GREETING || '') }] }))
  .addEdge(START, 'echo').addEdge('echo', END).compile();
module.exports = { graph };
`;

function writeProject(dir: string): void {
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
  writeFileSync(join(dir, 'graph.js'), GRAPH_JS);
}

const lines = (s: string): Json[] => s.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Json);

describe('the tracehouse CLI against the standalone service (compiled, as a child process)', () => {
  let svc: TestStandalone;
  let s3: S3Server;
  let work: string;
  let env: NodeJS.ProcessEnv;
  const project = `cli-runs-${randomUUID()}`;
  const RUNS = 1005;

  function cli(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'tracehouse.js'), ...args], { cwd: work, env: { ...env, ...extraEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), CLI_TIMEOUT_MS);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  }

  beforeAll(async () => {
    s3 = await startS3Server();
    s3.createBucket(BUCKET);
    // cloud: git_host deployments (from a local repository, which the operator must allow); the S3 server is on 127.0.0.1.
    svc = await startTestStandalone({
      CONTROL_PLANE_INSTALLATION: 'cloud',
      ROLLOUT_POLL_MS: '200',
      DEPLOY_TIMEOUT_MS: '90000',
      GIT_ALLOW_LOCAL_REPOS: 'true',
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      EXPORT_POLL_MS: '200',
    });
    work = mkdtempSync(join(tmpdir(), 'cli-e2e-'));
    chmodSync(work, 0o755); // the git repository below is cloned inside the sandbox, as its unprivileged user
    env = { PATH: process.env.PATH, HOME: work, LANGSMITH_ENDPOINT: `${svc.url}/api/v1`, LANGSMITH_API_KEY: svc.apiKey };

    // Runs written with the published JS SDK: RUNS chains in one hour of 2026-11-18, and three LLM children.
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, autoBatchTracing: false, timeout_ms: 30_000 });
    await client.createProject({ projectName: project });
    const base = Date.parse('2026-11-18T10:00:00Z');
    const runCreates: Json[] = [];
    for (let i = 0; i < RUNS; i++) {
      const id = randomUUID();
      const t = new Date(base + i * 1000).toISOString();
      runCreates.push({ id, trace_id: id, dotted_order: seg(t, id), name: `chain-${i}`, run_type: 'chain', start_time: t, end_time: t, inputs: { i }, outputs: { ok: true }, session_name: project });
      if (i < 3) {
        const child = randomUUID();
        runCreates.push({
          id: child,
          trace_id: id,
          parent_run_id: id,
          dotted_order: `${seg(t, id)}.${seg(t, child)}`,
          name: 'ChatModel',
          run_type: 'llm',
          start_time: t,
          end_time: t,
          inputs: { messages: [{ role: 'user', content: 'hi' }] },
          outputs: { usage_metadata: { input_tokens: 10, output_tokens: 5, total_tokens: 15 } },
          session_name: project,
        });
      }
    }
    for (let i = 0; i < runCreates.length; i += 500) await client.batchIngestRuns({ runCreates: runCreates.slice(i, i + 500) as never[] });
  }, START_MS);

  afterAll(async () => {
    if (svc) {
      // Deployments left by a failed test: delete them so their servers and databases go too.
      const list = (await (await svc.api('/v2/deployments?limit=100')).json()) as Json;
      for (const d of (list.resources ?? []) as Json[]) if (d.status !== 'AWAITING_DELETE') await svc.api(`/v2/deployments/${d.id}`, { method: 'DELETE' });
      for (let i = 0; i < 300; i++) {
        if (((await (await svc.api('/v2/deployments')).json()) as Json).total === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    await svc?.close();
    await s3?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('usage errors exit 2 through the launcher; --help exits 0', async () => {
    const none = await cli([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('Usage: tracehouse <command>');
    const bad = await cli(['runs', 'query', '--limit', 'many']);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toContain('--limit must be an integer');
    const noKey = await cli(['keys', 'list'], { LANGSMITH_API_KEY: '' });
    expect(noKey.code).toBe(2);
    const help = await cli(['export', 'create', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: tracehouse export create');
  });

  it('keys create, list (with the new key), revoke; a revoked key is refused (exit 1)', async () => {
    const made = await cli(['keys', 'create', '--description', 'ci pipeline']);
    expect(made.code).toBe(0);
    const key = made.stdout.trim();
    expect(key).toMatch(/^\S{20,}$/);
    const mine = await cli(['keys', 'list', '--json'], { LANGSMITH_API_KEY: key });
    expect(mine.code).toBe(0);
    const listed = lines(mine.stdout);
    const entry = listed.find((k) => k.description === 'ci pipeline');
    expect(entry).toMatchObject({ short_key: expect.any(String) });
    expect(mine.stdout).not.toContain(key);
    const table = await cli(['keys', 'list', '--table']);
    expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+KEY\s+DESCRIPTION\s+CREATED\s+EXPIRES$/);
    expect(table.stdout).toContain(entry!.id);

    const revoked = await cli(['keys', 'revoke', entry!.id]);
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked ${entry!.id}\n` });
    const refused = await cli(['keys', 'list'], { LANGSMITH_API_KEY: key });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/GET \/api\/v1\/api-key: 401/);
    const again = await cli(['keys', 'revoke', entry!.id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/DELETE \/api\/v1\/api-key\/\{id\}: 404/);
  });

  it('runs query: JSON lines across pages, the filter language, a table, a refused filter', async () => {
    const all = await cli(['runs', 'query', '--project', project, '--limit', '2000', '--select', 'id,name,run_type']);
    expect(all.code).toBe(0);
    const runs = lines(all.stdout);
    expect(runs).toHaveLength(RUNS + 3);
    expect(new Set(runs.map((r) => r.id)).size).toBe(RUNS + 3);
    expect(Object.keys(runs[0]).sort()).toEqual(['id', 'name', 'run_type']);

    const limited = await cli(['runs', 'query', '-p', project, '--limit', '1002', '--root', '--order', 'asc', '--select', 'name']);
    const names = lines(limited.stdout).map((r) => r.name);
    expect(names).toHaveLength(1002);
    expect(names.slice(0, 2)).toEqual(['chain-0', 'chain-1']);

    const llm = await cli(['runs', 'query', '--project', project, '--filter', 'and(eq(run_type, "llm"), gte(total_tokens, 15))', '--json']);
    expect(llm.code).toBe(0);
    const found = lines(llm.stdout);
    expect(found).toHaveLength(3);
    for (const r of found) expect(r).toMatchObject({ name: 'ChatModel', run_type: 'llm', total_tokens: 15 });

    const table = await cli(['runs', 'query', '--project', project, '--filter', 'eq(run_type, "llm")', '--table']);
    const rows = table.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^ID\s+NAME\s+RUN_TYPE\s+STATUS\s+START_TIME\s+END_TIME\s+TOTAL_TOKENS\s+ERROR$/);
    expect(rows).toHaveLength(4);
    for (const r of rows.slice(1)) expect(r).toMatch(/^[0-9a-f-]{36}\s+ChatModel\s+llm\s+success\s+2026-11-18T10:00:0\d/);

    const refused = await cli(['runs', 'query', '--project', project, '--filter', 'eq(run_type'], {});
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/POST \/api\/v1\/runs\/query: (400|422) /);
    const missing = await cli(['runs', 'query', '--project', 'no-such-project']);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr).toContain('no tracing project named "no-such-project"');
  });

  it('export: a destination, create --wait to S3 (COMPLETED, every run), status and wait', async () => {
    const s3env = { AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey };
    const dest = await cli(['export', 'destinations', 'create', '--bucket', BUCKET, '--prefix', 'cli', '--region', 'us-east-1', '--endpoint-url', s3.endpoint, '--table'], s3env);
    expect(dest.code).toBe(0);
    const destinationId = dest.stdout.trim();
    expect(destinationId).toMatch(/^[0-9a-f-]{36}$/);
    const wrong = await cli(['export', 'destinations', 'create', '--bucket', BUCKET, '--endpoint-url', s3.endpoint], { ...s3env, AWS_SECRET_ACCESS_KEY: 'not-the-secret' });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/POST \/api\/v1\/bulk-exports\/destinations: 400 /);

    const args = ['export', 'create', '-d', destinationId, '-p', project, '--start', '2026-11-18T00:00:00Z', '--end', '2026-11-19T00:00:00Z'];
    const done = await cli([...args, '--wait', '--json']);
    expect(done.code).toBe(0);
    expect(done.stderr).toMatch(/\] (CREATED|RUNNING|COMPLETED)/);
    const exp = lines(done.stdout)[0];
    expect(exp).toMatchObject({ status: 'COMPLETED', rows_written: RUNS + 3 });
    expect(exp.files_written).toBeGreaterThan(0);
    expect(s3.listKeys(BUCKET, `cli/export_id=${exp.id}/`).filter((k) => k.endsWith('.parquet')).length).toBe(exp.files_written);

    const status = await cli(['export', 'status', exp.id, '--table']);
    expect(status.stdout).toMatch(/^status\s+COMPLETED$/m);
    expect((await cli(['export', 'wait', exp.id])).code).toBe(0);

    // Without --wait: the id at once; then wait for it.
    const started = await cli([...args, '--fields', 'id,name']);
    expect(started.code).toBe(0);
    const waited = await cli(['export', 'wait', started.stdout.trim(), '--timeout', '60', '--json']);
    expect(waited).toMatchObject({ code: 0 });
    expect(lines(waited.stdout)[0]).toMatchObject({ status: 'COMPLETED', rows_written: RUNS + 3, export_fields: ['id', 'name'] });

    const unknown = await cli(['export', 'status', randomUUID()]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/: 404 /);
  });

  // Deployments build and start real agent servers: on a loaded 2-core machine one rollout can take half a minute.
  const DEPLOY_TEST_MS = 240_000;
  let url = '';

  it('deploy from a folder: waits to DEPLOYED, prints the address; deployments get by name and id', async () => {
    const app = join(work, 'cli-app');
    execFileSync('mkdir', ['-p', join(app, 'node_modules', 'junk')]);
    writeProject(app);
    writeFileSync(join(app, 'prod.env'), 'OTHER="from file"\n');

    const first = await cli(['deploy', app, '--secret', 'GREETING=hello', '--env-file', join(app, 'prod.env'), '--timeout', '180']);
    expect(first).toMatchObject({ code: 0 });
    url = first.stdout.trim();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    // One line per status change (stderr is not a terminal), ending DEPLOYED.
    const statuses = first.stderr.split('\n').filter((l) => /^\[\d+\.\d+s\] /.test(l)).map((l) => l.replace(/^\[[^\]]+\] /, '').split(':')[0]);
    expect(statuses[statuses.length - 1]).toBe('DEPLOYED');
    expect(new Set(statuses).size).toBe(statuses.length);
    expect(first.stderr).toMatch(/created deployment cli-app \([0-9a-f-]{36}\), revision/);
    expect(first.stderr).toMatch(/uploading 3 files/); // langgraph.json, graph.js, prod.env; not node_modules
    expect((await fetch(`${url}/ok`)).status).toBe(200);

    const got = await cli(['deployments', 'get', 'cli-app']);
    const dep = lines(got.stdout)[0];
    expect(dep).toMatchObject({ name: 'cli-app', source: 'internal_source', status: 'READY', source_config: { custom_url: url } });
    expect(dep.secrets.map((s: Json) => s.name).sort()).toEqual(['GREETING', 'OTHER']);
    const byId = await cli(['deployments', 'get', dep.id, '--table']);
    expect(byId.stdout).toMatch(new RegExp(`^url\\s+${url.replace(/[.:/]/g, '\\$&')}$`, 'm'));
  }, DEPLOY_TEST_MS);

  it("a failing build exits 1 with the build's error; the previous revision still serves; deployments revisions", async () => {
    const app = join(work, 'cli-app');
    const failed = await cli(['deploy', app, '--name', 'cli-app', '--build-command', 'echo broken build >&2; exit 3', '--json']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/error: build failed: .*broken build/);
    expect(lines(failed.stdout)[0]).toMatchObject({ status: 'BUILD_FAILED', url });
    expect((await fetch(`${url}/ok`)).status).toBe(200);

    const revs = await cli(['deployments', 'revisions', 'cli-app', '--table']);
    const rows = revs.stdout.trim().split('\n');
    expect(rows[0]).toMatch(/^ID\s+STATUS\s+CREATED\s+MESSAGE$/);
    expect(rows.slice(1).map((r) => r.split(/\s+/)[1])).toEqual(['BUILD_FAILED', 'DEPLOYED']);
  }, DEPLOY_TEST_MS);

  it('deploy from a git repository (--json, --no-wait); an image the control plane refuses; list; delete --wait', async () => {
    // A local path: allowed by GIT_ALLOW_LOCAL_REPOS.
    const repo = join(work, 'repo');
    execFileSync('mkdir', ['-p', repo]);
    writeProject(repo);
    const git = (...a: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...a], { cwd: repo, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-q', '-m', 'v1');
    const fromGit = await cli(['deploy', '--repo', repo, '--ref', 'main', '--name', 'cli-git', '--json']);
    expect(fromGit).toMatchObject({ code: 0 });
    const gitResult = lines(fromGit.stdout)[0];
    expect(gitResult).toMatchObject({ name: 'cli-git', status: 'DEPLOYED', url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
    const queued = await cli(['deploy', '--repo', repo, '--name', 'cli-git', '--no-wait', '--json']);
    expect(queued).toMatchObject({ code: 0 });
    expect(lines(queued.stdout)[0]).toMatchObject({ deployment_id: gitResult.deployment_id, status: 'QUEUED', revision_id: expect.any(String) });
    const otherRepo = await cli(['deploy', '--repo', '/somewhere/else', '--name', 'cli-git']);
    expect(otherRepo.code).toBe(2);
    expect(otherRepo.stderr).toContain(`deployment cli-git deploys ${repo}, not /somewhere/else`);

    // This (cloud) control plane refuses external_docker images, and the CLI says why.
    const image = await cli(['deploy', '--image', 'registry.example.com/agent:1', '--name', 'cli-img']);
    expect(image.code).toBe(1);
    expect(image.stderr).toMatch(/POST \/v2\/deployments: 422 body\.source/);

    const listed = lines((await cli(['deployments', 'list'])).stdout);
    expect(listed.map((d) => d.name).sort()).toEqual(['cli-app', 'cli-git']);
    const listTable = await cli(['deployments', 'list', '--table', '--name-contains', 'app']);
    expect(listTable.stdout.trim().split('\n')).toHaveLength(2);
    expect(listTable.stdout).toMatch(/cli-app\s+internal_source\s+READY/);

    for (const name of ['cli-app', 'cli-git']) {
      const del = await cli(['deployments', 'delete', name, '--wait', '--timeout', '120']);
      expect({ name, code: del.code, stderr: del.stderr }).toMatchObject({ name, code: 0 });
      expect(del.stdout).toMatch(new RegExp(`^deleted ${name} `));
    }
    const gone = await cli(['deployments', 'get', 'cli-app']);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('no deployment named "cli-app"');
    expect(((await (await svc.api('/v2/deployments')).json()) as Json).total).toBe(0);
    await expect(fetch(`${url}/ok`)).rejects.toThrow();
  }, DEPLOY_TEST_MS);
});
