import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import http from 'node:http';
import { dirname, join } from 'node:path';
import type { DataSource } from 'typeorm';
import { CONTROL_PLANE_DATA_SOURCE } from '@th/control-plane';
import { freePort, startConnectionCounter } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

// Issue 27, point 1: a hostile deployment, through the real control plane and the real agent server (`npm run
// build` first), tries to read the service's secrets, its parent's environment, another deployment's folder and
// database and the service's database, from its install command and from its graph code at run time.
type Json = Record<string, any>;

const TERMINAL = ['DEPLOYED', 'BUILD_FAILED', 'DEPLOY_FAILED', 'SUPERSEDED', 'REPLACED'];
const GRACE_MS = 3000;
const canary = `canary-${randomBytes(12).toString('hex')}`;
const REPO_ROOT = join(__dirname, '..', '..', '..');

function gitRepo(files: Record<string, string>, links: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'cp-sbx-git-'));
  chmodSync(dir, 0o755); // cloned inside the sandbox, as its unprivileged user
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(dir, name));
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir, stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('add', '.');
  git('commit', '-q', '-m', 'v1');
  return dir;
}

/** A graph that answers "probe" with a JSON report of what the deployment's code can reach, and "slow" after 60 s. */
const ATTACK_GRAPH = (targets: { files: string[]; folders: string[]; code?: string; databases: string[]; ports?: number[]; sockets?: string[]; proxied?: string[] }) => `'use strict';
const fs = require('node:fs');
const net = require('node:net');
const http = require('node:http');
const { Client } = require('pg');
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
const targets = ${JSON.stringify(targets)};
const attempt = async (f) => { try { return { ok: true, value: String(await f()).slice(0, 3000) }; } catch (e) { return { ok: false, error: String(e && e.message).slice(0, 200) }; } };
async function connect(db) {
  const url = new URL(process.env.DATABASE_URL);
  url.pathname = '/' + db;
  const c = new Client({ connectionString: url.toString() });
  await c.connect();
  try { return JSON.stringify((await c.query('SELECT current_user AS u, current_database() AS d')).rows[0]); } finally { await c.end(); }
}
async function probe() {
  const r = { files: {}, folders: {}, databases: {}, env: Object.keys(process.env).sort(), uid: process.getuid(), pid: process.pid, ppid: process.ppid };
  for (const f of targets.files) r.files[f] = await attempt(() => fs.readFileSync(f, 'utf8'));
  for (const f of ['/proc/1/environ', '/proc/' + process.ppid + '/environ']) r.files[f] = await attempt(() => fs.readFileSync(f, 'utf8').replace(/\\0/g, ' '));
  for (const d of targets.folders) r.folders[d] = await attempt(() => fs.readdirSync(d).join(','));
  if (targets.code) r.code = await attempt(() => fs.readdirSync(targets.code).join(','));
  r.procs = fs.readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).length;
  r.own = await attempt(async () => {
    const c = new Client({ connectionString: process.env.DATABASE_URL });
    await c.connect();
    try { return JSON.stringify((await c.query('SELECT current_user AS u, rolsuper AS su, rolcreatedb AS cd, rolcreaterole AS cr FROM pg_roles WHERE rolname = current_user')).rows[0]); } finally { await c.end(); }
  });
  for (const db of targets.databases) r.databases[db] = await attempt(() => connect(db));
  r.superuser = await attempt(async () => {
    const url = new URL(process.env.DATABASE_URL);
    url.username = 'postgres';
    const c = new Client({ connectionString: url.toString() });
    await c.connect();
    try { return JSON.stringify((await c.query('SELECT current_user AS u')).rows[0]); } finally { await c.end(); }
  });
  const reach = (opts) => new Promise((res) => { const s = net.connect(opts); s.on('connect', () => { s.destroy(); res('connected'); }); s.on('error', (e) => res(e.code)); });
  r.ports = {};
  for (const p of targets.ports || []) r.ports[p] = await reach({ host: '127.0.0.1', port: p });
  r.sockets = {};
  for (const p of targets.sockets || []) r.sockets[p] = await reach({ path: p });
  r.trace = await attempt(async () => { const res = await fetch(process.env.LANGSMITH_ENDPOINT + '/info'); return res.status + ' ' + Object.keys(await res.json()).includes('version'); });
  const proxy = new URL(process.env.HTTP_PROXY);
  r.proxied = {};
  for (const u of targets.proxied || []) r.proxied[u] = await new Promise((res) => http.get({ host: proxy.hostname, port: proxy.port, path: u, headers: { host: new URL(u).host } }, (x) => { let b = ''; x.on('data', (d) => (b += d)); x.on('end', () => res(x.statusCode + ' ' + b.trim().slice(0, 40))); }).on('error', (e) => res(e.code)));
  return r;
}
const graph = new StateGraph(MessagesAnnotation)
  .addNode('attack', async (s) => {
    const m = s.messages[s.messages.length - 1].content;
    if (m === 'slow') await new Promise((res) => setTimeout(res, 60000));
    return { messages: [{ role: 'assistant', content: m === 'probe' ? JSON.stringify(await probe()) : 'answer ' + (process.env.GREETING || '') }] };
  })
  .addEdge(START, 'attack').addEdge('attack', END).compile();
module.exports = { graph };
`;

describe('control plane: deployment code runs in a sandbox (issue 27, attack 1)', () => {
  let svc: TestStandalone;
  let integrationId: string;
  let dataDir: string;
  let serviceDb: string;
  let ds: DataSource;
  const repos: string[] = [];

  let listener: Awaited<ReturnType<typeof startConnectionCounter>>;
  let allowed: http.Server;
  let allowedPort: number;
  let otherKey: string;

  beforeAll(async () => {
    process.env.TH_SANDBOX_CANARY = canary; // in the control plane's own environment: must not reach tenant code
    listener = await startConnectionCounter(); // a listener of the host's loopback no deployment may reach
    allowedPort = await freePort();
    allowed = http.createServer((_req, res) => res.end('allowed-destination'));
    await new Promise<void>((r) => allowed.listen(allowedPort, '127.0.0.1', r));
    const port = await freePort();
    svc = await startTestStandalone({
      PORT: String(port),
      CONTROL_PLANE_INSTALLATION: 'cloud',
      ROLLOUT_POLL_MS: '200',
      DEPLOY_TIMEOUT_MS: '90000',
      AGENT_STOP_GRACE_MS: String(GRACE_MS),
      GIT_ALLOW_LOCAL_REPOS: 'true',
      AGENT_TRACING_ENDPOINT: `http://127.0.0.1:${port}`,
      // A private destination the operator allows (as an outbound URL the graph may fetch through the proxy).
      OUTBOUND_ALLOWED_HOSTS: `127.0.0.1:${allowedPort}`,
    });
    const ws = (await (await svc.api('/api/v1/workspaces', { method: 'POST', json: { name: 'other tenant' } })).json()) as Json;
    otherKey = ((await (await svc.api('/api/v1/service-keys', { method: 'POST', json: { workspace_id: ws.id, description: 'other' } })).json()) as Json).key;
    dataDir = join(tmpdir(), `th-standalone-${process.pid}`);
    writeFileSync(join(dataDir, 'world-readable-canary'), canary, { mode: 0o644 }); // readable by anyone who can see it
    ds = svc.app.get<DataSource>(CONTROL_PLANE_DATA_SOURCE, { strict: false });
    serviceDb = new URL((ds.options as { url: string }).url).pathname.slice(1);
    integrationId = ((await (await svc.api('/v1/integrations/git_host/install')).json()) as Json).integration_id;
  });
  afterAll(async () => {
    delete process.env.TH_SANDBOX_CANARY;
    if (svc) {
      const list = (await (await svc.api('/v2/deployments?limit=100')).json()) as Json;
      for (const d of list.resources as Json[]) await svc.api(`/v2/deployments/${d.id}`, { method: 'DELETE' });
      for (let i = 0; i < 600 && ((await (await svc.api('/v2/deployments')).json()) as Json).total > 0; i++) await new Promise((r) => setTimeout(r, 100));
      await svc.close();
    }
    await listener?.close();
    await new Promise((r) => allowed?.close(r));
    for (const r of repos) rmSync(r, { recursive: true, force: true });
  });

  /** Every secret the service keeps: the files in DATA_DIR, the bootstrap key, the canaries. */
  function serviceSecrets(): string[] {
    const files = readdirSync(dataDir).filter((f) => /secret|key|canary/.test(f));
    expect(files).toEqual(expect.arrayContaining(['session-secret', 'export-encryption-key', 'control-plane-secrets-key', 'world-readable-canary']));
    return [...files.map((f) => readFileSync(join(dataDir, f), 'utf8').trim()), svc.apiKey, canary];
  }

  async function revision(depId: string, revId: string, until = TERMINAL): Promise<Json> {
    for (let i = 0; i < 1200; i++) {
      const rev = (await (await svc.api(`/v2/deployments/${depId}/revisions/${revId}`)).json()) as Json;
      if (until.includes(rev.status)) return rev;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`revision ${revId} never reached ${until.join('/')}`);
  }

  const create = async (name: string, repo: string, extra: Json = {}) => {
    const r = await svc.api('/v2/deployments', {
      method: 'POST',
      json: {
        name,
        source: 'git_host',
        source_config: { integration_id: integrationId, repo_url: repo, ...(extra.source_config ?? {}) },
        source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
        secrets: extra.secrets ?? [],
      },
    });
    expect(r.status).toBe(201);
    return (await r.json()) as Json;
  };

  async function say(url: string, text: string): Promise<string> {
    const headers = { 'content-type': 'application/json', 'x-api-key': svc.apiKey };
    const t = (await (await fetch(`${url}/threads`, { method: 'POST', headers, body: '{}' })).json()) as Json;
    const r = await fetch(`${url}/threads/${t.thread_id}/runs/wait`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ assistant_id: 'g', input: { messages: [{ role: 'user', content: text }] } }),
    });
    expect(r.status).toBe(200);
    const out = (await r.json()) as Json;
    return out.messages.at(-1).content as string;
  }

  it('install command and graph code read nothing of the service, its environment, another deployment or another database; a replaced revision with an open stream is killed within the bound', async () => {
    // The victim: a deployment with a secret, its own folder and database.
    const victimMark = `victim-source-${randomBytes(8).toString('hex')}`;
    const victimRepo = gitRepo({ 'langgraph.json': JSON.stringify({ graphs: { g: './graph.js:graph' } }), 'graph.js': ATTACK_GRAPH({ files: [], folders: [], databases: [] }) + `// ${victimMark}\n` });
    repos.push(victimRepo);
    const victim = await create('victim', victimRepo, { secrets: [{ name: 'VICTIM_TOKEN', value: `victim-token-${canary}` }] });
    const victimRev = await revision(victim.id, victim.latest_revision_id);
    expect(victimRev.status + ': ' + victimRev.status_message).toMatch(/^DEPLOYED/);
    const victimFolder = join(dataDir, 'control-plane', victim.id, victim.latest_revision_id, 'src');
    expect(readFileSync(join(victimFolder, 'graph.js'), 'utf8')).toContain(victimMark);
    const victimDb = `th_agent_${(victim.id as string).replace(/-/g, '')}`;
    const victimUrl = ((await (await svc.api(`/v2/deployments/${victim.id}`)).json()) as Json).source_config.custom_url as string;
    const [{ runtime: victimRuntime }] = (await ds.query('SELECT runtime FROM control_plane.deployments WHERE id = $1', [victim.id])) as { runtime: Json }[];
    const victimSocket = victimRuntime.servers[victim.latest_revision_id].socket as string;
    expect(existsSync(victimSocket)).toBe(true);

    // The deployment's address: GET /ok is open, everything else needs a key of the deployment's own workspace.
    expect((await fetch(`${victimUrl}/ok`)).status).toBe(200);
    for (const [headers, status] of [[{}, 401], [{ 'x-api-key': 'th_not_a_key' }, 401], [{ 'x-api-key': otherKey }, 403], [{ authorization: `Bearer ${otherKey}` }, 403]] as const) {
      const refused = await fetch(`${victimUrl}/threads`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{}' });
      expect([status, refused.status, ((await refused.json()) as Json).detail]).toEqual([status, status, expect.any(String)]);
    }
    expect((await fetch(`${victimUrl}/threads/search`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${svc.apiKey}` }, body: '{}' })).status).toBe(200);
    const listed = (await (await fetch(`${victimUrl}/threads/search`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': svc.apiKey }, body: '{}' })).json()) as Json[];
    expect(listed).toEqual([]); // no refused call created a thread

    const secrets = serviceSecrets();
    const files = ['session-secret', 'export-encryption-key', 'control-plane-secrets-key', 'world-readable-canary'].map((f) => join(dataDir, f));
    const servicePort = Number(new URL(svc.url).port);
    const victimPort = Number(new URL(victimUrl).port);
    const targets = {
      files: [...files, join(victimFolder, 'graph.js')],
      folders: [dataDir, join(dataDir, 'control-plane'), victimFolder, '/root', '/var'],
      code: REPO_ROOT,
      databases: [victimDb, serviceDb, 'postgres'],
      ports: [servicePort, victimPort, listener.port, 6379],
      sockets: [victimSocket],
      proxied: [`http://127.0.0.1:${allowedPort}/`, `http://127.0.0.1:${listener.port}/`, `http://127.0.0.1:${servicePort}/ok`, 'http://169.254.169.254/latest/meta-data/'],
    };
    const repo = gitRepo({ 'langgraph.json': JSON.stringify({ graphs: { g: './graph.js:graph' } }), 'graph.js': ATTACK_GRAPH(targets) }, { 'evil.json': join(dataDir, 'session-secret') });
    repos.push(repo);

    // 1. The attack of the issue, from the install command: its output is the failed revision's status_message.
    const attack = [
      'echo "ran as $(id -u)"',
      `(exec 3<>/dev/tcp/127.0.0.1/${servicePort}) 2>/dev/null && echo "reached-service" || echo "service-unreachable"`,
      `(exec 3<>/dev/tcp/127.0.0.1/${listener.port}) 2>/dev/null && echo "reached-listener" || echo "listener-unreachable"`,
      'cat ../../../../session-secret',
      ...files.map((f) => `cat ${f}`),
      `cat ${join(victimFolder, 'graph.js')}`,
      `ls ${join(dataDir, 'control-plane')}`,
      'tr "\\0" " " </proc/$PPID/environ',
      'tr "\\0" " " </proc/1/environ; echo',
      'env | grep -v "^PWD=" | cut -c1-60',
      'exit 1',
    ].join('; ');
    const dep = await create('attacker', repo, { source_config: { install_command: attack }, secrets: [{ name: 'GREETING', value: 'first' }] });
    const failed = await revision(dep.id, dep.latest_revision_id);
    expect(failed.status).toBe('BUILD_FAILED');
    const msg = failed.status_message as string;
    expect(msg).toContain('ran as 65534');
    expect(msg).toContain('service-unreachable');
    expect(msg).toContain('listener-unreachable');
    for (const s of [...secrets, victimMark, `victim-token-${canary}`]) expect(msg).not.toContain(s);
    expect(msg).not.toContain(join(dataDir, 'control-plane', dep.id)); // its own host folder is /app to it
    expect(msg).toMatch(/No such file or directory/);

    // Cloning another deployment's folder (a git checkout on this machine) is refused.
    const thief = await create('thief', victimFolder);
    const stolen = await revision(thief.id, thief.latest_revision_id);
    expect(stolen.status + ': ' + stolen.status_message).toBe('BUILD_FAILED: repo_url names a folder of the control plane');

    // A graph configuration that links to a host file is not read by the control plane (it would quote it in the error).
    const linked = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { source_revision_config: { langgraph_config_path: 'evil.json' } } })).json()) as Json;
    const refused = await revision(dep.id, linked.latest_revision_id);
    expect(refused.status).toBe('BUILD_FAILED');
    expect(refused.status_message).toContain('links outside the source tree');
    for (const s of secrets) expect(refused.status_message).not.toContain(s);

    // 2. The same from the graph, at run time, through a run of the deployed server.
    const p = (await (await svc.api(`/v2/deployments/${dep.id}`, {
      method: 'PATCH',
      json: { source_config: { install_command: 'true' }, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [{ name: 'GREETING', value: 'first' }] },
    })).json()) as Json;
    expect(p.latest_revision_id).not.toBe(dep.latest_revision_id);
    const rev2 = await revision(dep.id, p.latest_revision_id);
    expect(rev2.status + ': ' + rev2.status_message).toMatch(/^DEPLOYED/);
    const url = ((await (await svc.api(`/v2/deployments/${dep.id}`)).json()) as Json).source_config.custom_url as string;
    const raw = await say(url, 'probe');
    for (const s of [...secrets, victimMark, `victim-token-${canary}`]) expect(raw).not.toContain(s);
    const report = JSON.parse(raw) as Json;
    expect(report.uid).toBe(65534);
    for (const f of targets.files) expect(report.files[f]).toMatchObject({ ok: false });
    expect(report.files['/proc/1/environ'].value).toContain('GRAPHS_CONFIG=/app/langgraph.json'); // pid 1 is the server itself
    for (const d of targets.folders) expect({ d, ...report.folders[d] }).toMatchObject({ d, ok: false });
    // What it may read of the service: the agent server's compiled code and its modules, nothing else of the repository.
    expect(report.code.value.split(',').sort()).toEqual(['dist', 'node_modules', 'scripts']);
    expect(report.procs).toBeLessThan(5); // its own PID namespace
    expect(report.env).toEqual(expect.arrayContaining(['DATABASE_URL', 'GRAPHS_CONFIG', 'GREETING', 'HOME', 'LISTEN_SOCKET', 'HTTPS_PROXY']));
    expect(report.env).not.toContain('PORT');
    expect(report.env.filter((k: string) => /SECRET|KEY|TOKEN|CANARY|BOOTSTRAP|INTERNAL|ENCRYPTION/.test(k))).toEqual([]);
    // Its own database, as its own role: no superuser, no CREATEDB, no CREATEROLE.
    const depDb = `th_agent_${(dep.id as string).replace(/-/g, '')}`;
    expect(JSON.parse(report.own.value)).toEqual({ u: depDb, su: false, cd: false, cr: false });
    // Its relay lets only its own role on its own database through: not another deployment's database, not the
    // service's, not a superuser (which the machine's trust authentication would otherwise let in).
    for (const db of [victimDb, serviceDb, 'postgres']) expect(report.databases[db]).toMatchObject({ ok: false, error: expect.stringContaining('can be reached from this deployment') });
    expect(report.superuser).toMatchObject({ ok: false, error: expect.stringContaining('can be reached from this deployment') });
    // No port of the host's loopback (the service, another deployment's address, a test listener, Redis), no other socket.
    expect(report.ports).toEqual({ [servicePort]: 'ECONNREFUSED', [victimPort]: 'ECONNREFUSED', [listener.port]: 'ECONNREFUSED', 6379: 'ECONNREFUSED' });
    expect(report.sockets).toEqual({ [victimSocket]: 'ENOENT' });
    expect(listener.connections()).toBe(0);
    // Tracing reaches the service (its relay); the internet only through the proxy, under the outbound policy.
    expect(report.trace).toEqual({ ok: true, value: '200 true' });
    expect(report.proxied).toEqual({
      [`http://127.0.0.1:${allowedPort}/`]: '200 allowed-destination',
      [`http://127.0.0.1:${listener.port}/`]: expect.stringMatching(/^403 /),
      [`http://127.0.0.1:${servicePort}/ok`]: expect.stringMatching(/^403 /),
      'http://169.254.169.254/latest/meta-data/': expect.stringMatching(/^403 /),
    });

    // 3. A replaced revision whose client holds an open stream is stopped within the bound.
    const [{ runtime }] = (await ds.query('SELECT runtime FROM control_plane.deployments WHERE id = $1', [dep.id])) as { runtime: Json }[];
    // The role's password is kept sealed, and no database URL is stored in clear.
    expect(runtime).toMatchObject({ database_role: depDb, database_password: { iv: expect.any(String), tag: expect.any(String), data: expect.any(String) } });
    expect(JSON.stringify(runtime)).not.toContain('postgres://');
    const oldPid = runtime.servers[rev2.id].pid as number;
    // Straight to the revision's server, on its socket (the front proxy's own handling of streams is another matter).
    const socketPath = runtime.servers[rev2.id].socket as string;
    expect(socketPath).toMatch(/\/agent\.sock$/);
    const direct = (path: string, body: string) =>
      new Promise<http.IncomingMessage>((res, rej) => http.request({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json' } }, res).on('error', rej).end(body));
    const created = await direct('/threads', '{}');
    const t = JSON.parse(await new Promise<string>((res) => { let b = ''; created.on('data', (d: Buffer) => (b += d.toString())).on('end', () => res(b)); })) as Json;
    const stream = await direct(`/threads/${t.thread_id}/runs/stream`, JSON.stringify({ assistant_id: 'g', input: { messages: [{ role: 'user', content: 'slow' }] }, on_disconnect: 'continue' }));
    expect(stream.statusCode).toBe(200);
    await new Promise((r) => stream.once('data', r)); // the stream is open and held
    const streamEnded = new Promise<boolean>((r) => { stream.on('data', () => undefined); stream.once('close', () => r(true)); });
    const q = (await (await svc.api(`/v2/deployments/${dep.id}`, { method: 'PATCH', json: { secrets: [{ name: 'GREETING', value: 'second' }] } })).json()) as Json;
    expect((await revision(dep.id, q.latest_revision_id)).status).toBe('DEPLOYED');
    const replacedAt = Date.now();
    expect((await revision(dep.id, rev2.id)).status).toBe('REPLACED');
    let gone = false;
    while (!gone && Date.now() - replacedAt < GRACE_MS + 5000) {
      try {
        process.kill(oldPid, 0);
        await new Promise((r) => setTimeout(r, 100));
      } catch {
        gone = true;
      }
    }
    expect(gone).toBe(true);
    expect(Date.now() - replacedAt).toBeLessThan(GRACE_MS + 5000);
    // The held stream ends with its server; new calls run the new revision with the new secret.
    const ended = await Promise.race([streamEnded, new Promise((r) => setTimeout(() => r(false), 5000))]);
    expect(ended).toBe(true);
    // Its relays and socket went with it.
    expect(existsSync(dirname(socketPath))).toBe(false);
    expect(await say(url, 'hi')).toBe('answer second');
  }, 300_000);
});
