import { execFileSync } from 'node:child_process';
import { createHmac, randomUUID } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import * as tar from 'tar';
import { EventBus } from '@th/bus';
import { TOPICS, type AuditRecord, type DeploymentCreatedEvent } from '@th/contracts';
import { CONTROL_PLANE_DATA_SOURCE } from '@th/control-plane';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

// Deployments run the real agent server (`node scripts/run.js agent-server`): `npm run build` first.
type Json = Record<string, any>;

const GRAPH_JS = `'use strict';
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
const last = (s) => { const m = s.messages[s.messages.length - 1]; return typeof m.content === 'string' ? m.content : JSON.stringify(m.content); };
const graph = new StateGraph(MessagesAnnotation)
  .addNode('echo', async (s) => ({ messages: [{ role: 'assistant', content: 'VERSION ' + last(s) + ' greeting=' + (process.env.GREETING || '') }] }))
  .addEdge(START, 'echo').addEdge('echo', END).compile();
module.exports = { graph };
`;

/** Writes a small graph project: langgraph.json + a CommonJS graph whose answers carry `version`. */
function writeProject(dir: string, version: string): void {
  writeFileSync(join(dir, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
  writeFileSync(join(dir, 'graph.js'), GRAPH_JS.replace('VERSION', version));
}

async function tarball(version: string): Promise<Buffer> {
  const dir = mkdtempSync(join(tmpdir(), 'cp-src-'));
  writeProject(dir, version);
  const file = join(dir, '..', `${randomUUID()}.tar.gz`);
  await tar.c({ gzip: true, cwd: dir, file }, ['langgraph.json', 'graph.js']);
  const data = readFileSync(file);
  rmSync(dir, { recursive: true, force: true });
  rmSync(file, { force: true });
  return data;
}

function gitRepo(version: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-git-'));
  chmodSync(dir, 0o755); // cloned inside the sandbox, as its unprivileged user
  writeProject(dir, version);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, stdio: 'pipe' }).toString().trim();
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'v1');
  return dir;
}

function gitCommit(dir: string, version: string): string {
  writeProject(dir, version);
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, stdio: 'pipe' }).toString().trim();
  git('commit', '-q', '-am', version);
  return git('rev-parse', 'HEAD');
}

const TERMINAL = ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED', 'REPLACED'];

async function pollRevision(svc: TestStandalone, deploymentId: string, revisionId: string, until: string[] = TERMINAL): Promise<Json> {
  for (let i = 0; i < 1200; i++) {
    const r = await svc.api(`/v2/deployments/${deploymentId}/revisions/${revisionId}`);
    expect(r.status).toBe(200);
    const rev = (await r.json()) as Json;
    if (until.includes(rev.status)) return rev;
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(`revision ${revisionId} never reached ${until.join('/')}`);
}

async function pollDeployment(svc: TestStandalone, id: string, pred: (status: number, body: Json) => boolean): Promise<Json> {
  for (let i = 0; i < 600; i++) {
    const r = await svc.api(`/v2/deployments/${id}`);
    const body = (await r.json()) as Json;
    if (pred(r.status, body)) return { status: r.status, ...body };
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error(`deployment ${id} never reached the expected state`);
}

/** Calls the deployed agent server as the spec's agent-server endpoints describe. */
async function chat(url: string, text: string, key: string): Promise<string> {
  const headers = { 'content-type': 'application/json', 'x-api-key': key };
  const t = await fetch(`${url}/threads`, { method: 'POST', headers, body: '{}' });
  expect(t.status).toBe(200);
  const { thread_id } = (await t.json()) as Json;
  const run = await fetch(`${url}/threads/${thread_id}/runs`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ assistant_id: 'echo', input: { messages: [{ role: 'user', content: text }] } }),
  });
  expect(run.status).toBe(200);
  const { run_id } = (await run.json()) as Json;
  expect((await fetch(`${url}/threads/${thread_id}/runs/${run_id}/join`, { headers })).status).toBe(200);
  const state = (await (await fetch(`${url}/threads/${thread_id}/state`, { headers })).json()) as Json;
  const msgs = state.values.messages as Json[];
  return msgs[msgs.length - 1].content as string;
}

async function deleteAll(svc: TestStandalone): Promise<void> {
  const list = (await (await svc.api('/v2/deployments?limit=100')).json()) as Json;
  for (const d of list.resources as Json[]) if (d.status !== 'AWAITING_DELETE') await svc.api(`/v2/deployments/${d.id}`, { method: 'DELETE' });
  for (let i = 0; i < 600; i++) {
    if (((await (await svc.api('/v2/deployments')).json()) as Json).total === 0) return;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error('deployments were not deleted');
}

const locs = (body: Json) => (body.detail as Json[]).map((d) => (d.loc as (string | number)[]).join('.'));

describe('control plane (cloud installation): deployments, revisions and local rollouts through HTTP', () => {
  let svc: TestStandalone;
  const audit: AuditRecord[] = [];
  const created: DeploymentCreatedEvent[] = [];
  let integrationId: string;
  let webhookSecret: string;

  beforeAll(async () => {
    // The test's repositories are local paths: allowed only when the operator says so.
    svc = await startTestStandalone({ CONTROL_PLANE_INSTALLATION: 'cloud', ROLLOUT_POLL_MS: '200', DEPLOY_TIMEOUT_MS: '90000', GIT_ALLOW_LOCAL_REPOS: 'true' });
    const bus = svc.app.get(EventBus);
    await bus.subscribe(TOPICS.audit, { groupId: `cp-test-audit-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value);
    });
    await bus.subscribe(TOPICS.deployments, { groupId: `cp-test-deployments-${randomUUID()}` }, async (batch) => {
      for (const m of batch) created.push(m.value);
    });
    const inst = await svc.api('/v1/integrations/git_host/install');
    expect(inst.status).toBe(200);
    const body = (await inst.json()) as Json;
    integrationId = body.integration_id;
    webhookSecret = body.webhook_secret;
  });
  afterAll(async () => {
    // Deleting frees each deployment's database and server (nothing is left on the machine's PostgreSQL).
    if (svc) await deleteAll(svc);
    await svc?.close();
  });

  const gitBody = (name: string, repo: string, extra: Json = {}) => ({
    name,
    source: 'git_host',
    source_config: { integration_id: integrationId, repo_url: repo, deployment_type: 'dev', build_on_push: false, ...(extra.source_config ?? {}) },
    source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json', ...(extra.source_revision_config ?? {}) },
    secrets: extra.secrets ?? [{ name: 'GREETING', value: 'hello-secret' }],
  });

  it('the integration lookup is stable per workspace', async () => {
    const again = (await (await svc.api('/v1/integrations/git_host/install')).json()) as Json;
    expect(again.integration_id).toBe(integrationId);
  });

  it('quick start with git_host: create, read, poll to DEPLOYED, call the server, PATCH, the new revision rolls out', async () => {
    const repo = gitRepo('v1');
    const res = await svc.api('/v2/deployments', { method: 'POST', json: gitBody('qs-git', repo) });
    expect(res.status).toBe(201);
    const dep = (await res.json()) as Json;
    expect(dep).toMatchObject({ name: 'qs-git', source: 'git_host', status: 'AWAITING_DATABASE', active_revision_id: null });
    expect(dep.latest_revision_id).toEqual(expect.any(String));
    expect(dep.secrets).toEqual([{ name: 'GREETING', value: '********' }]);
    expect(JSON.stringify(dep)).not.toContain('hello-secret');
    expect(created.some((e) => e.deployment_id === dep.id && e.name === 'qs-git')).toBe(true);
    expect(audit.some((a) => a.operation === 'create_deployment' && a.status === 'Success' && a.resources.some((r) => r.id === dep.id))).toBe(true);
    // The tracing project of the same name exists (created from the deployment_created event by the query service).
    const projects = (await (await svc.api('/sessions?name=qs-git')).json()) as Json[];
    expect(projects.map((p) => p.name)).toEqual(['qs-git']);

    const read = (await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json;
    expect(read.id).toBe(dep.id);
    const rev1 = await pollRevision(svc, dep.id, dep.latest_revision_id);
    expect(rev1).toMatchObject({ status: 'DEPLOYED' });
    expect(rev1.status_history.map((h: Json) => h.status)).toEqual(['QUEUED', 'BUILDING', 'DEPLOYING', 'DEPLOYED']);
    for (const h of rev1.status_history) expect(h).toEqual({ status: expect.any(String), at: expect.any(String), message: expect.any(String) });
    expect(rev1.source_revision_config.repo_commit_sha).toMatch(/^[0-9a-f]{40}$/);
    const live = (await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json;
    expect(live).toMatchObject({ status: 'READY', active_revision_id: rev1.id });
    const url = live.source_config.custom_url as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await chat(url, 'hi', svc.apiKey)).toBe('v1 hi greeting=hello-secret');

    // PATCH a revision-creating field (secrets): a new revision, rolled out behind the same URL.
    const patched = await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { secrets: [{ name: 'GREETING', value: 'second' }] } });
    expect(patched.status).toBe(200);
    const p = (await patched.json()) as Json;
    expect(p.latest_revision_id).not.toBe(rev1.id);
    const rev2 = await pollRevision(svc, dep.id, p.latest_revision_id);
    expect(rev2).toMatchObject({ status: 'DEPLOYED' });
    expect(await chat(url, 'again', svc.apiKey)).toBe('v1 again greeting=second');
    expect((await pollRevision(svc, dep.id, rev1.id)).status).toBe('REPLACED');
    expect(((await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json).active_revision_id).toBe(rev2.id);

    // A field that creates no revision: build_on_push changes in place.
    const quiet = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_config: { build_on_push: true } } })).json()) as Json;
    expect(quiet).toMatchObject({ latest_revision_id: rev2.id, source_config: { build_on_push: true } });
    expect(audit.filter((a) => a.operation === 'update_deployment' && a.resources.some((r) => r.id === dep.id)).length).toBe(2);

    // A failing build leaves the previous revision serving.
    const bad = (await (await svc.api(`/v2/deployments/${dep.id}`, {
      method: 'PATCH',
      json: { source_config: { build_command: 'echo broken build >&2; exit 3' }, source_revision_config: { langgraph_config_path: 'langgraph.json' } },
    })).json()) as Json;
    const rev3 = await pollRevision(svc, dep.id, bad.latest_revision_id);
    expect(rev3.status).toBe('BUILD_FAILED');
    expect(rev3.status_message).toContain('broken build');
    const after = (await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json;
    expect(after).toMatchObject({ status: 'READY', active_revision_id: rev2.id });
    expect(await chat(url, 'still', svc.apiKey)).toBe('v1 still greeting=second');

    // build_on_push: a signed push webhook builds the new commit.
    await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_config: { build_command: 'true' } } });
    const sha = gitCommit(repo, 'v2');
    const payload = JSON.stringify({ ref: 'refs/heads/main', after: sha, repository: { clone_url: repo } });
    const unsigned = await fetch(`${svc.url}/v1/integrations/git_host/${integrationId}/webhook`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: payload });
    expect(unsigned.status).toBe(401);
    const hook = await fetch(`${svc.url}/v1/integrations/git_host/${integrationId}/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-hub-signature-256': 'sha256=' + createHmac('sha256', webhookSecret).update(payload).digest('hex') },
      body: payload,
    });
    expect(hook.status).toBe(200);
    const pushed = (await hook.json()) as Json;
    expect(pushed.revisions).toEqual([{ deployment_id: dep.id, revision_id: expect.any(String) }]);
    const rev4 = await pollRevision(svc, dep.id, pushed.revisions[0].revision_id);
    expect(rev4).toMatchObject({ status: 'DEPLOYED' });
    expect(rev4.source_revision_config.repo_commit_sha).toBe(sha);
    expect(await chat(url, 'pushed', svc.apiKey)).toBe('v2 pushed greeting=second');

    const list = (await (await svc.api(`/v2/deployments/${dep.id}/revisions`)).json()) as Json;
    expect(list.total).toBe(4);
    expect(list.resources.map((r: Json) => r.id)).toEqual([rev4.id, rev3.id, rev2.id, rev1.id]);

    // Delete: AWAITING_DELETE, then gone, its database dropped and its server stopped.
    const del = await svc.api(`/v2/deployments/${dep.id}`, { method: 'DELETE' });
    expect(del.status).toBe(202);
    expect(((await del.json()) as Json).status).toBe('AWAITING_DELETE');
    await pollDeployment(svc, dep.id, (s) => s === 404);
    await expect(fetch(`${url}/ok`)).rejects.toThrow();
    expect(audit.some((a) => a.operation === 'delete_deployment' && a.resources.some((r) => r.id === dep.id))).toBe(true);
    rmSync(repo, { recursive: true, force: true });
  });

  it('internal_source: upload URL, PUT the tarball, PATCH its object path, DEPLOYED; arbitrary paths refused', async () => {
    const res = await svc.api('/v2/deployments', {
      method: 'POST',
      json: { name: 'qs-src', source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] },
    });
    expect(res.status).toBe(201);
    const dep = (await res.json()) as Json;
    expect(dep.latest_revision_id).toBeNull();
    const other = (await (await svc.api('/v2/deployments', {
      method: 'POST',
      json: { name: 'qs-src-other', source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] },
    })).json()) as Json;

    const issued = await svc.api(`/deployments/${dep.id}/upload-url`, { method: 'POST' });
    expect(issued.status).toBe(200);
    const { object_path, upload_url } = (await issued.json()) as Json;
    expect(upload_url).toContain(object_path);
    // Named before anything was uploaded: refused.
    const early = await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: object_path } } });
    expect(early.status).toBe(422);
    const put = await fetch(upload_url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: await tarball('s1') });
    expect(put.status).toBe(200);
    // A path issued for another deployment, and an invented one, are refused; nothing changes.
    for (const path of [object_path.replace(dep.id, other.id), 'deployments/x/sources/made-up.tar.gz']) {
      const r = await svc.api(`/v2/deployments/${other.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: path } } });
      expect(r.status).toBe(422);
      expect(locs((await r.json()) as Json)).toEqual(['body.source_revision_config.source_tarball_path']);
    }
    expect(((await (await svc.api(`/v2/deployments/${other.id}`)).json()) as Json).latest_revision_id).toBeNull();

    const p = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: object_path } } })).json()) as Json;
    expect(p.source_revision_config.source_tarball_path).toBe(object_path);
    const rev = await pollRevision(svc, dep.id, p.latest_revision_id);
    expect(rev.status + ': ' + rev.status_message).toMatch(/^DEPLOYED/);
    const live = (await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json;
    expect(await chat(live.source_config.custom_url, 'up', svc.apiKey)).toBe('s1 up greeting=');
  });

  it('any of the three schemes authenticates: X-Api-Key, the Tenant ID header with a key, a bearer token', async () => {
    const body = (name: string) =>
      JSON.stringify({ name, source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] });
    const post = (headers: Record<string, string>, name: string) => fetch(`${svc.url}/v2/deployments`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: body(name) });
    expect((await post({ 'x-api-key': svc.apiKey }, 'auth-key')).status).toBe(201);
    expect((await post({ 'x-api-key': svc.apiKey, 'x-tenant-id': svc.workspaceId }, 'auth-tenant')).status).toBe(201);
    expect((await post({ authorization: `Bearer ${svc.apiKey}` }, 'auth-bearer')).status).toBe(201);
    expect((await post({ authorization: 'Bearer nope' }, 'auth-bad')).status).toBe(401);
    expect((await post({}, 'auth-none')).status).toBe(401);
    const names = ((await (await svc.api('/v2/deployments?name_contains=auth-')).json()) as Json).resources.map((d: Json) => d.name).sort();
    expect(names).toEqual(['auth-bearer', 'auth-key', 'auth-tenant']);
    for (const d of created.filter((e) => e.name.startsWith('auth-'))) expect(d.tenant_id).toBe(svc.workspaceId);
  });

  it('a failed create is audited as a Failure; upload URLs refuse what they did not issue', async () => {
    const bad = await svc.api('/v2/deployments', { method: 'POST', json: { name: 'audited-bad', source: 'internal_source', source_config: {}, source_revision_config: {}, secrets: [] } });
    expect(bad.status).toBe(422);
    expect(audit.some((a) => a.operation === 'create_deployment' && a.status === 'Failure')).toBe(true);

    const git = (await (await svc.api('/v2/deployments', { method: 'POST', json: gitBody('no-uploads', '/tmp/none') })).json()) as Json;
    expect((await svc.api(`/v2/deployments/${git.id}/upload-url`, { method: 'POST' })).status).toBe(400);
    expect((await svc.api(`/deployments/${randomUUID()}/upload-url`, { method: 'POST' })).status).toBe(404);
    const src = (await (await svc.api('/v2/deployments', {
      method: 'POST',
      json: { name: 'uploads-neg', source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] },
    })).json()) as Json;
    const { upload_url, object_path } = (await (await svc.api(`/deployments/${src.id}/upload-url`, { method: 'POST' })).json()) as Json;
    const put = (url: string, body: Buffer) => fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body });
    expect((await put(upload_url, Buffer.from('not gzip at all'))).status).toBe(400);
    expect((await put(upload_url.replace(/[0-9a-f]{32}\.tar\.gz$/, `${'0'.repeat(32)}.tar.gz`), await tarball('x'))).status).toBe(404);
    expect((await put(`${svc.url}/v2/uploads/elsewhere/file.tar.gz`, await tarball('x'))).status).toBe(400);
    // Nothing stored under the issued path: naming it is still refused.
    const early = await svc.api(`/v2/deployments/${src.id}`, { method: 'PATCH', json: { source_revision_config: { source_tarball_path: object_path } } });
    expect(early.status).toBe(422);
  });

  it('a newer revision supersedes an unfinished older one; a failed deploy leaves the previous revision serving', async () => {
    const repo = gitRepo('s1');
    const dep = (await (await svc.api('/v2/deployments', {
      method: 'POST',
      json: gitBody('supersede', repo, { source_config: { build_command: 'sleep 2' } }),
    })).json()) as Json;
    await pollRevision(svc, dep.id, dep.latest_revision_id, ['BUILDING', ...TERMINAL]);
    const p = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { repo_ref: 'main' } } })).json()) as Json;
    const first = await pollRevision(svc, dep.id, dep.latest_revision_id);
    expect(first.status).toBe('SUPERSEDED');
    expect(first.status_message).toContain(p.latest_revision_id);
    const second = await pollRevision(svc, dep.id, p.latest_revision_id);
    expect(second.status + ': ' + second.status_message).toMatch(/^DEPLOYED/);
    const url = ((await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json).source_config.custom_url as string;

    // A graph configuration naming a module that does not exist builds, but the server cannot start.
    writeFileSync(join(repo, 'broken.json'), JSON.stringify({ graphs: { echo: './missing.js:graph' } }));
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'add', '.'], { cwd: repo });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', 'commit', '-q', '-m', 'broken'], { cwd: repo });
    const b = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_config: { build_command: 'true' }, source_revision_config: { langgraph_config_path: 'broken.json' } } })).json()) as Json;
    const failed = await pollRevision(svc, dep.id, b.latest_revision_id);
    expect(failed.status).toBe('DEPLOY_FAILED');
    expect(failed.status_history.map((h: Json) => h.status)).toEqual(['QUEUED', 'BUILDING', 'DEPLOYING', 'DEPLOY_FAILED']);
    expect(((await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json)).toMatchObject({ status: 'READY', active_revision_id: second.id });
    expect(await chat(url, 'alive', svc.apiKey)).toBe('s1 alive greeting=hello-secret');
    rmSync(repo, { recursive: true, force: true });
  });

  it('secrets are stored encrypted', async () => {
    const res = await svc.api('/v2/deployments', {
      method: 'POST',
      json: { name: 'secret-check', source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [{ name: 'TOKEN', value: 'plain-text-never-stored' }] },
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as Json).id;
    const ds = svc.app.get<DataSource>(CONTROL_PLANE_DATA_SOURCE, { strict: false });
    const [row] = (await ds.query(`SELECT secrets::text AS s FROM control_plane.deployments WHERE id = $1`, [id])) as { s: string }[];
    expect(row.s).toContain('TOKEN');
    expect(row.s).not.toContain('plain-text-never-stored');
    const list = (await (await svc.api('/v2/deployments?name=secret-check')).json()) as Json;
    expect(list.resources.map((d: Json) => d.id)).toEqual([id]);
    expect(JSON.stringify(list)).not.toContain('plain-text-never-stored');
  });
});

describe('control plane: validation rules, each with its error', () => {
  let cloud: TestStandalone;
  let integrationId: string;
  beforeAll(async () => {
    cloud = await startTestStandalone({ CONTROL_PLANE_INSTALLATION: 'cloud', ROLLOUT_WORKER: 'false' });
    integrationId = ((await (await cloud.api('/v1/integrations/git_host/install')).json()) as Json).integration_id;
  });
  afterAll(async () => {
    await cloud?.close();
  });

  const git = (over: Json = {}) => ({
    name: `v-${randomUUID().slice(0, 8)}`,
    source: 'git_host',
    source_config: { integration_id: integrationId, repo_url: 'https://git.example/org/none.git', ...(over.source_config ?? {}) },
    source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json', ...(over.source_revision_config ?? {}) },
    secrets: [],
    ...Object.fromEntries(Object.entries(over).filter(([k]) => !['source_config', 'source_revision_config'].includes(k))),
  });
  async function expect422(body: unknown, expected: string[]): Promise<void> {
    const before = ((await (await cloud.api('/v2/deployments')).json()) as Json).total;
    const r = await cloud.api('/v2/deployments', { method: 'POST', json: body });
    expect(r.status).toBe(422);
    const b = (await r.json()) as Json;
    for (const d of b.detail) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    expect(locs(b)).toEqual(expect.arrayContaining(expected));
    expect(((await (await cloud.api('/v2/deployments')).json()) as Json).total).toBe(before); // nothing written
  }

  it('required fields, unknown fields and wrong types', async () => {
    await expect422({}, ['body.name', 'body.source', 'body.source_config', 'body.source_revision_config', 'body.secrets']);
    await expect422({ ...git(), extra: 1 }, ['body']);
    await expect422(git({ source: 'ftp' }), ['body.source']);
    await expect422(git({ secrets: [{ name: '1BAD', value: 'x' }] }), ['body.secrets.0.name']);
    await expect422(git({ secrets: [{ name: 'A', value: 'x' }, { name: 'A', value: 'y' }] }), ['body.secrets.1.name']);
    const bad = await cloud.api('/v2/deployments', { method: 'POST', body: '{"name":', headers: { 'content-type': 'application/json' } });
    expect(bad.status).toBe(422);
  });

  it('repo_url: https only, to a public address (no local paths, other transports, loopback, private or metadata addresses)', async () => {
    for (const repo_url of [
      '/tmp/none', 'file:///etc', 'http://git.example/r.git', 'ssh://git@git.example/r.git', 'git@git.example:org/r.git', 'git://git.example/r.git', 'ext::sh -c touch% /tmp/x',
      '--upload-pack=touch /tmp/x', 'https://127.0.0.1/r.git', 'https://localhost/r.git', 'https://[::1]/r.git', 'https://169.254.169.254/r.git', 'https://10.0.0.1/r.git',
      'https://2130706433/r.git', 'https://[::ffff:127.0.0.1]/r.git',
    ]) {
      const before = ((await (await cloud.api('/v2/deployments')).json()) as Json).total;
      const r = await cloud.api('/v2/deployments', { method: 'POST', json: git({ source_config: { repo_url } }) });
      const b = (await r.json()) as Json;
      expect({ repo_url, status: r.status, detail: b.detail }).toEqual({ repo_url, status: 422, detail: [{ loc: ['body', 'source_config', 'repo_url'], msg: expect.stringMatching(/^repo_url /), type: 'value_error' }] });
      expect(((await (await cloud.api('/v2/deployments')).json()) as Json).total).toBe(before);
    }
  });

  it('langgraph_config_path: required for git_host and internal_source', async () => {
    await expect422(git({ source_revision_config: { langgraph_config_path: null } }), ['body.source_revision_config.langgraph_config_path']);
    await expect422({ name: 'src-x', source: 'internal_source', source_config: {}, source_revision_config: {}, secrets: [] }, ['body.source_revision_config.langgraph_config_path']);
    await expect422(git({ source_revision_config: { langgraph_config_path: '../outside.json' } }), ['body.source_revision_config.langgraph_config_path']);
  });

  it('source-specific fields are refused on the wrong source; git_host needs its fields', async () => {
    await expect422(git({ source_config: { listener_id: randomUUID(), custom_url: 'http://x.example' } }), ['body.source_config.listener_id', 'body.source_config.custom_url']);
    await expect422(git({ source_revision_config: { image_uri: 'img:1' } }), ['body.source_revision_config.image_uri']);
    await expect422({ name: 'src-y', source: 'internal_source', source_config: { repo_url: '/x' }, source_revision_config: { langgraph_config_path: 'l.json', repo_ref: 'main' }, secrets: [] }, [
      'body.source_config.repo_url', 'body.source_revision_config.repo_ref',
    ]);
    await expect422(git({ source_config: { integration_id: null, repo_url: null }, source_revision_config: { repo_ref: null } }), [
      'body.source_config.integration_id', 'body.source_config.repo_url', 'body.source_revision_config.repo_ref',
    ]);
    await expect422(git({ source_config: { integration_id: randomUUID() } }), ['body.source_config.integration_id']);
    await expect422(git({ secret_references: [{ name: 'A', secret_name: 's', secret_key: 'k' }] }), ['body.secret_references']);
    await expect422({ name: 'src-z', source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'l.json', source_tarball_path: 'deployments/a/b.tar.gz' }, secrets: [] }, [
      'body.source_revision_config.source_tarball_path',
    ]);
  });

  it('build_on_push is refused with a refs/tags/ ref', async () => {
    await expect422(git({ source_config: { build_on_push: true }, source_revision_config: { repo_ref: 'refs/tags/v1.0' } }), ['body.source_config.build_on_push']);
  });

  it('installation setting: external_docker only self-hosted (this one is cloud-managed); internal_docker not offered', async () => {
    await expect422({ name: 'ext', source: 'external_docker', source_config: {}, source_revision_config: { image_uri: 'img:1' }, secrets: [] }, ['body.source']);
    await expect422({ name: 'intd', source: 'internal_docker', source_config: {}, source_revision_config: {}, secrets: [] }, ['body.source']);
  });

  it('a taken name is a 400 {detail}; unknown ids 404; bad ids 422; no credentials 401', async () => {
    const body = git({ name: 'dup-name' });
    expect((await cloud.api('/v2/deployments', { method: 'POST', json: body })).status).toBe(201);
    const again = await cloud.api('/v2/deployments', { method: 'POST', json: body });
    expect(again.status).toBe(400);
    expect(((await again.json()) as Json).detail).toEqual(expect.any(String));
    expect((await cloud.api(`/v2/deployments/${randomUUID()}`)).status).toBe(404);
    expect((await cloud.api(`/v2/deployments/${randomUUID()}/revisions/${randomUUID()}`)).status).toBe(404);
    expect((await cloud.api('/v2/deployments/not-a-uuid')).status).toBe(422);
    expect((await fetch(`${cloud.url}/v2/deployments`, { headers: {} })).status).toBe(401);
  });

  it('PATCH: immutable fields refused, nothing changes; list filters and pages', async () => {
    const d = (await (await cloud.api('/v2/deployments', { method: 'POST', json: git({ name: 'immut' }) })).json()) as Json;
    for (const [json, loc] of [
      [{ name: 'renamed' }, 'body.name'],
      [{ source: 'internal_source' }, 'body.source'],
      [{ source_config: { repo_url: '/elsewhere' } }, 'body.source_config.repo_url'],
      [{ source_config: { integration_id: randomUUID() } }, 'body.source_config.integration_id'],
      [{ source_config: { deployment_type: 'prod' } }, 'body.source_config.deployment_type'],
      [{ source_config: { listener_id: randomUUID() } }, 'body.source_config.listener_id'],
      [{ source_config: { build_on_push: true }, source_revision_config: { repo_ref: 'refs/tags/v2' } }, 'body.source_config.build_on_push'],
      [{ source_revision_config: { image_uri: 'x:1' } }, 'body.source_revision_config.image_uri'],
    ] as [Json, string][]) {
      const r = await cloud.api(`/v2/deployments/${d.id}`, { method: 'PATCH', json });
      expect(r.status).toBe(422);
      expect(locs((await r.json()) as Json)).toContain(loc);
    }
    const now = (await (await cloud.api(`/v2/deployments/${d.id}`)).json()) as Json;
    expect(now).toMatchObject({ name: 'immut', latest_revision_id: d.latest_revision_id, source_config: d.source_config, source_revision_config: d.source_revision_config });
    const revs = (await (await cloud.api(`/v2/deployments/${d.id}/revisions`)).json()) as Json;
    expect(revs.total).toBe(1);

    const byName = (await (await cloud.api('/v2/deployments?name=immut')).json()) as Json;
    expect(byName.resources.map((x: Json) => x.id)).toEqual([d.id]);
    const byStatus = (await (await cloud.api('/v2/deployments?status=AWAITING_DATABASE&limit=1')).json()) as Json;
    expect(byStatus.resources.length).toBe(1);
    expect(byStatus.total).toBeGreaterThanOrEqual(2);
    const page2 = (await (await cloud.api('/v2/deployments?status=AWAITING_DATABASE&limit=1&offset=1')).json()) as Json;
    expect(page2.resources[0].id).not.toBe(byStatus.resources[0].id);
    expect((await cloud.api('/v2/deployments?status=NOPE')).status).toBe(422);
    expect((await cloud.api('/v2/deployments?limit=0')).status).toBe(422);
  });

  it('serves its OpenAPI document (0.1.0, every path under its version segment)', async () => {
    const doc = (await (await fetch(`${cloud.url}/v2/openapi.json`)).json()) as Json;
    expect(doc.info.version).toBe('0.1.0');
    const paths = Object.keys(doc.paths);
    expect(paths).toEqual(expect.arrayContaining(['/v2/deployments', '/v2/deployments/{deployment_id}', '/v2/listeners', '/v1/integrations/git_host/install']));
    for (const p of paths) expect(p).toMatch(/^\/v[12]\//);
  });
});

describe('control plane (self-hosted installation): external_docker, resource_spec and k8s listeners', () => {
  let sh: TestStandalone;
  beforeAll(async () => {
    sh = await startTestStandalone({ CONTROL_PLANE_INSTALLATION: 'self_hosted', ROLLOUT_POLL_MS: '200', K8S_READY_TIMEOUT_MS: '5000' });
  });
  afterAll(async () => {
    await sh?.close();
  });

  const ext = (over: Json = {}) => ({
    name: `e-${randomUUID().slice(0, 8)}`,
    source: 'external_docker',
    source_config: { ...(over.source_config ?? {}) },
    source_revision_config: { image_uri: 'registry.example.com/agent:1', ...(over.source_revision_config ?? {}) },
    secrets: [],
    ...Object.fromEntries(Object.entries(over).filter(([k]) => !['source_config', 'source_revision_config'].includes(k))),
  });
  async function expect422(body: unknown, expected: string[]): Promise<void> {
    const r = await sh.api('/v2/deployments', { method: 'POST', json: body });
    expect(r.status).toBe(422);
    expect(locs((await r.json()) as Json)).toEqual(expect.arrayContaining(expected));
  }

  it('git_host is refused self-hosted; langgraph_config_path must be null for external_docker; image_uri required', async () => {
    await expect422({ name: 'g', source: 'git_host', source_config: { integration_id: randomUUID(), repo_url: '/x' }, source_revision_config: { repo_ref: 'main', langgraph_config_path: 'l.json' }, secrets: [] }, ['body.source']);
    await expect422(ext({ source_revision_config: { langgraph_config_path: 'langgraph.json' } }), ['body.source_revision_config.langgraph_config_path']);
    await expect422(ext({ source_revision_config: { image_uri: null } }), ['body.source_revision_config.image_uri']);
    await expect422(ext({ source_config: { build_command: 'make' } }), ['body.source_config.build_command']);
  });

  it('resource_spec: CPU rounded and bounded, orchestrator_*/executor_* refused, defaults applied', async () => {
    await expect422(ext({ source_config: { resource_spec: { cpu: 0.04 } } }), ['body.source_config.resource_spec.cpu']);
    await expect422(ext({ source_config: { resource_spec: { cpu: 8.2 } } }), ['body.source_config.resource_spec.cpu']);
    await expect422(ext({ source_config: { resource_spec: { cpu_limit: 16.5 } } }), ['body.source_config.resource_spec.cpu_limit']);
    await expect422(ext({ source_config: { resource_spec: { queue_cpu: 9 } } }), ['body.source_config.resource_spec.queue_cpu']);
    await expect422(ext({ source_config: { resource_spec: { cache_cpu_limit: 0.01 } } }), ['body.source_config.resource_spec.cache_cpu_limit']);
    await expect422(ext({ source_config: { resource_spec: { orchestrator_cpu: 1 } } }), ['body.source_config.resource_spec.orchestrator_cpu']);
    await expect422(ext({ source_config: { resource_spec: { executor_memory_mb: 512 } } }), ['body.source_config.resource_spec.executor_memory_mb']);
    await expect422(ext({ source_config: { resource_spec: { cpu: 4, cpu_limit: 2 } } }), ['body.source_config.resource_spec.cpu_limit']);
    const r = await sh.api('/v2/deployments', { method: 'POST', json: ext({ source_config: { resource_spec: { cpu: 0.25, memory_mb: 512, min_scale: 1, max_scale: 4, cache_memory_mb: 128 } } }) });
    expect(r.status).toBe(201);
    const spec = ((await r.json()) as Json).source_config.resource_spec;
    expect(spec).toMatchObject({ cpu: 0.3, cpu_limit: 0.6, memory_mb: 512, memory_limit_mb: 1024, queue_cpu: 0.3, queue_cpu_limit: 0.6, queue_memory_mb: 512, queue_min_scale: 1, queue_max_scale: 4, cache_memory_mb: 128, cache_memory_limit_mb: 128 });
  });

  it('PATCH resource_spec overwrites the old one and creates a revision; other fields do not', async () => {
    const d = (await (await sh.api('/v2/deployments', { method: 'POST', json: ext({ source_config: { resource_spec: { cpu: 2, max_scale: 3 } } }) })).json()) as Json;
    const p = (await (await sh.api(`/v2/deployments/${d.id}`, { method: 'PATCH', json: { source_config: { resource_spec: { memory_mb: 300 } } } })).json()) as Json;
    expect(p.latest_revision_id).not.toBe(d.latest_revision_id);
    expect(p.source_config.resource_spec).toMatchObject({ cpu: 1, max_scale: 1, memory_mb: 300, memory_limit_mb: 600 });
    const q = (await (await sh.api(`/v2/deployments/${d.id}`, { method: 'PATCH', json: { source_config: { custom_url: 'https://agent.example.com' }, image_version: '0.2' } })).json()) as Json;
    expect(q).toMatchObject({ latest_revision_id: p.latest_revision_id, image_version: '0.2', source_config: { custom_url: 'https://agent.example.com' } });
    const rev = (await (await sh.api(`/v2/deployments/${d.id}/revisions/${p.latest_revision_id}`)).json()) as Json;
    expect(rev.resource_spec).toMatchObject({ memory_mb: 300 });
  });

  it('listeners: register, list, use; namespace checked and immutable; rollout reaches the Kubernetes driver', async () => {
    expect((await sh.api('/v2/listeners', { method: 'POST', json: { name: 'l', compute_type: 'ecs', k8s_namespaces: ['a'] } })).status).toBe(422);
    expect((await sh.api('/v2/listeners', { method: 'POST', json: { name: 'l', compute_type: 'k8s', k8s_namespaces: ['Bad_NS'] } })).status).toBe(422);
    const l = (await (await sh.api('/v2/listeners', { method: 'POST', json: { name: 'cluster-a', compute_type: 'k8s', k8s_namespaces: ['agents', 'staging'] } })).json()) as Json;
    const listed = (await (await sh.api('/v2/listeners')).json()) as Json;
    expect(listed.resources.map((x: Json) => x.id)).toContain(l.id);
    await expect422(ext({ source_config: { listener_id: l.id, listener_config: { k8s_namespace: 'prod' } } }), ['body.source_config.listener_config.k8s_namespace']);
    await expect422(ext({ source_config: { listener_id: randomUUID() } }), ['body.source_config.listener_id']);
    await expect422(ext({ source_config: { listener_config: { k8s_namespace: 'agents' } } }), ['body.source_config.listener_config']);
    await expect422({ ...ext(), secret_references: [{ name: 'A', secret_name: '' , secret_key: 'k' }] }, ['body.secret_references.0.secret_name']);
    const d = (await (await sh.api('/v2/deployments', {
      method: 'POST',
      json: { ...ext({ source_config: { listener_id: l.id, listener_config: { k8s_namespace: 'staging' } } }), secret_references: [{ name: 'DB', secret_name: 'db', secret_key: 'pw' }] },
    })).json()) as Json;
    expect(d.source_config.listener_config).toEqual({ k8s_namespace: 'staging' });
    const r = await sh.api(`/v2/deployments/${d.id}`, { method: 'PATCH', json: { source_config: { listener_config: { k8s_namespace: 'agents' } } } });
    expect(r.status).toBe(422);
    // No cluster here: the driver renders and tries to apply, and the revision fails with the client's reason.
    const rev = await pollRevision(sh, d.id, d.latest_revision_id);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toMatch(/Kubernetes|apply|ECONNREFUSED|connect/i);
    expect(((await (await sh.api(`/v2/deployments/${d.id}`)).json()) as Json)).toMatchObject({ status: 'UNUSED', active_revision_id: null });
  });

  it('external_docker without a listener fails its rollout with a reason', async () => {
    const d = (await (await sh.api('/v2/deployments', { method: 'POST', json: ext() })).json()) as Json;
    const dep = await pollDeployment(sh, d.id, (_s, b) => b.status !== 'AWAITING_DATABASE');
    expect(dep.status).toBe('UNKNOWN');
    const rev = await pollRevision(sh, d.id, d.latest_revision_id);
    expect(rev.status).toBe('DEPLOY_FAILED');
    expect(rev.status_message).toContain('listener');
  });
});
