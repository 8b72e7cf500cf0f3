import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { createTestDatabase, freePort, startAppProcess, sharedKafka, type AppProcess, type KafkaServer } from '@th/testing';

// The cluster form: Kafka, the control-plane app and the gateway as their own OS processes (after `npm run build`);
// the gateway authenticates the API key and proxies the control-plane paths with the signed identity.
type Json = Record<string, any>;

describe('control plane in the cluster form, behind the gateway', () => {
  let kafka: KafkaServer;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let controlPlane: AppProcess;
  let gateway: AppProcess;
  const work = mkdtempSync(join(tmpdir(), 'cp-cluster-'));
  chmodSync(work, 0o711); // the sandbox's user must pass through to the control plane's work folder and the repository
  const repo = join(work, 'repo');
  const apiKey = `th_cluster_${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    kafka = await sharedKafka();
    db = await createTestDatabase('th_cp_cluster');
    const signing = randomBytes(24).toString('hex');
    const cpPort = await freePort();
    const gwPort = await freePort();
    // topics of its own on the shared broker (see startCluster)
    const common = { INTERNAL_SIGNING_KEY: signing, KAFKA_BROKERS: kafka.brokers, KAFKA_PREFIX: `t${randomBytes(4).toString('hex')}.`, DATABASE_URL: db.url };
    controlPlane = await startAppProcess(
      'control-plane',
      { ...common, CONTROL_PLANE_SECRETS_KEY: randomBytes(24).toString('hex'), CONTROL_PLANE_INSTALLATION: 'cloud', DATA_DIR: join(work, 'data'), ROLLOUT_POLL_MS: '200', GIT_ALLOW_LOCAL_REPOS: 'true', AGENT_KEY_CHECK_URL: `http://127.0.0.1:${gwPort}` },
      { port: cpPort },
    );
    gateway = await startAppProcess('gateway', {
      ...common,
      BOOTSTRAP_API_KEY: apiKey,
      RATE_LIMIT_ENABLED: 'false',
      // Tracing services are not part of this test.
      INGEST_URL: 'http://127.0.0.1:9',
      QUERY_URL: 'http://127.0.0.1:9',
      CONTROL_PLANE_URL: controlPlane.url,
    }, { port: gwPort });
    execFileSync('mkdir', ['-p', repo]);
    writeFileSync(join(repo, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
    writeFileSync(
      join(repo, 'graph.js'),
      `const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
module.exports.graph = new StateGraph(MessagesAnnotation).addNode('echo', async () => ({ messages: [{ role: 'assistant', content: 'cluster' }] }))
  .addEdge(START, 'echo').addEdge('echo', END).compile();`,
    );
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: repo, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-q', '-m', 'v1');
  });
  afterAll(async () => {
    await gateway?.stop();
    await controlPlane?.stop();
    await kafka?.stop();
    await db?.drop();
    rmSync(work, { recursive: true, force: true });
  });

  const api = async (path: string, init: { method?: string; json?: unknown; key?: string | null } = {}): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = {};
    if (init.key !== null) headers['x-api-key'] = init.key ?? apiKey;
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${gateway.url}${path}`, { method: init.method ?? 'GET', headers, body: init.json !== undefined ? JSON.stringify(init.json) : undefined });
    return { status: r.status, body: (await r.json()) as Json };
  };

  it('create through the gateway, poll to DEPLOYED, call the server; unauthenticated calls are refused', async () => {
    expect((await api('/v2/deployments', { key: null })).status).toBe(401);
    expect((await fetch(`${controlPlane.url}/v2/deployments`)).status).toBe(401); // the service trusts only the signed identity
    const inst = await api('/v1/integrations/git_host/install');
    expect(inst.status).toBe(200);
    const created = await api('/v2/deployments', {
      method: 'POST',
      json: {
        name: 'cluster-dep',
        source: 'git_host',
        source_config: { integration_id: inst.body.integration_id, repo_url: repo },
        source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
        secrets: [{ name: 'K', value: 'v' }],
      },
    });
    expect(created.status).toBe(201);
    const invalid = await api('/v2/deployments', { method: 'POST', json: { name: 'x' } });
    expect(invalid.status).toBe(422);
    let rev: Json = {};
    for (let i = 0; i < 1200; i++) {
      rev = (await api(`/v2/deployments/${created.body.id}/revisions/${created.body.latest_revision_id}`)).body;
      if (!['QUEUED', 'BUILDING', 'DEPLOYING'].includes(rev.status)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(rev.status + ': ' + rev.status_message).toMatch(/^DEPLOYED/);
    const dep = (await api(`/v2/deployments/${created.body.id}`)).body;
    expect(dep.status).toBe('READY');
    const url = dep.source_config.custom_url as string;
    // The address verifies the caller's key through the gateway: none or a wrong one is refused, GET /ok is open.
    expect((await fetch(`${url}/ok`)).status).toBe(200);
    expect((await fetch(`${url}/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status).toBe(401);
    expect((await fetch(`${url}/threads`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'th_wrong' }, body: '{}' })).status).toBe(401);
    const headers = { 'content-type': 'application/json', 'x-api-key': apiKey };
    const t = (await (await fetch(`${url}/threads`, { method: 'POST', headers, body: '{}' })).json()) as Json;
    const out = await fetch(`${url}/threads/${t.thread_id}/runs/wait`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ assistant_id: 'echo', input: { messages: [{ role: 'user', content: 'hi' }] } }),
    });
    expect(out.status).toBe(200);
    expect(JSON.stringify(await out.json())).toContain('cluster');
    const list = await api('/v2/deployments?name=cluster-dep');
    expect(list.body.resources.map((d: Json) => d.id)).toEqual([created.body.id]);
    expect((await api(`/v2/deployments/${created.body.id}`, { method: 'DELETE' })).status).toBe(202);
    let gone = 0;
    for (let i = 0; i < 600 && gone !== 404; i++) {
      gone = (await api(`/v2/deployments/${created.body.id}`)).status;
      if (gone !== 404) await new Promise((r) => setTimeout(r, 100));
    }
    expect(gone).toBe(404);
  });

  it('an upload PUT through the gateway is taken as bytes with any Content-Type, or none', async () => {
    const created = await api('/v2/deployments', {
      method: 'POST',
      json: { name: 'cluster-upload', source: 'internal_source', source_config: {}, source_revision_config: { langgraph_config_path: 'langgraph.json' }, secrets: [] },
    });
    expect(created.status).toBe(201);
    const tarball = gzipSync(Buffer.from('not a real tar, but gzipped'));
    // {}: Node's fetch sends a Buffer body with no Content-Type, as `curl -T` does.
    for (const headers of [{}, { 'content-type': 'application/octet-stream' }] as Record<string, string>[]) {
      const issued = await api(`/deployments/${created.body.id}/upload-url`, { method: 'POST' });
      expect(issued.status).toBe(200);
      const put = await fetch(`${gateway.url}${new URL(issued.body.upload_url as string).pathname}`, { method: 'PUT', headers, body: tarball });
      expect([headers['content-type'] ?? 'none', put.status, await put.json()]).toEqual([headers['content-type'] ?? 'none', 200, { object_path: issued.body.object_path }]);
    }
    expect((await api(`/v2/deployments/${created.body.id}`, { method: 'DELETE' })).status).toBe(202);
  });
});
