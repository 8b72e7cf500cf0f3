import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, freePort, startAppProcess, type AppProcess } from '@th/testing';

// The control plane as its own OS process (`node scripts/run.js standalone`, after `npm run build`), killed with
// SIGKILL while a revision builds; the restarted process resumes the rollout from what PostgreSQL says.
type Json = Record<string, any>;

const GRAPH_JS = `'use strict';
const { StateGraph, MessagesAnnotation, START, END } = require('@langchain/langgraph');
module.exports.graph = new StateGraph(MessagesAnnotation)
  .addNode('echo', async (s) => ({ messages: [{ role: 'assistant', content: 'resumed ' + s.messages[s.messages.length - 1].content }] }))
  .addEdge(START, 'echo').addEdge('echo', END).compile();
`;

describe('control plane: a crash mid-rollout resumes after restart', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let proc: AppProcess | null = null;
  const dataDir = mkdtempSync(join(tmpdir(), 'cp-crash-'));
  chmodSync(dataDir, 0o711); // the sandbox's user must pass through to the control plane's work folder
  const repo = mkdtempSync(join(tmpdir(), 'cp-crash-git-'));
  chmodSync(repo, 0o755); // cloned inside the sandbox, as its unprivileged user
  const key = `th_test_${randomBytes(12).toString('hex')}`;
  let env: Record<string, string>;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    port = await freePort();
    env = {
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: key,
      PRINT_BANNER: 'false',
      RATE_LIMIT_ENABLED: 'false',
      CONTROL_PLANE_INSTALLATION: 'cloud',
      ROLLOUT_POLL_MS: '200',
      // The test's repository is a local path: allowed only when the operator says so.
      GIT_ALLOW_LOCAL_REPOS: 'true',
    };
    writeFileSync(join(repo, 'langgraph.json'), JSON.stringify({ graphs: { echo: './graph.js:graph' } }));
    writeFileSync(join(repo, 'graph.js'), GRAPH_JS);
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: repo, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-q', '-m', 'v1');
  });
  afterAll(async () => {
    await proc?.stop();
    await db?.drop();
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(repo, { recursive: true, force: true });
  });

  const api = async (path: string, init: RequestInit & { json?: unknown } = {}): Promise<{ status: number; body: Json }> => {
    const headers: Record<string, string> = { 'x-api-key': key };
    if (init.json !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${(proc as AppProcess).url}${path}`, { ...init, headers, body: init.json !== undefined ? JSON.stringify(init.json) : init.body });
    return { status: r.status, body: (await r.json()) as Json };
  };
  async function poll(path: string, pred: (b: Json) => boolean): Promise<Json> {
    for (let i = 0; i < 1200; i++) {
      const r = await api(path);
      if (r.status === 200 && pred(r.body)) return r.body;
      await new Promise((res) => setTimeout(res, 200));
    }
    throw new Error(`${path} never reached the expected state`);
  }

  it('kill -9 while BUILDING; after restart the revision builds again and is DEPLOYED', async () => {
    proc = await startAppProcess('standalone', env, { port });
    const { integration_id } = (await api('/v1/integrations/git_host/install')).body;
    const created = await api('/v2/deployments', {
      method: 'POST',
      json: {
        name: 'crashy',
        source: 'git_host',
        // A build slow enough to be caught in the middle.
        source_config: { integration_id, repo_url: repo, build_command: 'sleep 5' },
        source_revision_config: { repo_ref: 'main', langgraph_config_path: 'langgraph.json' },
        secrets: [],
      },
    });
    expect(created.status).toBe(201);
    const { id, latest_revision_id } = created.body;
    await poll(`/v2/deployments/${id}/revisions/${latest_revision_id}`, (r) => r.status === 'BUILDING');
    await proc.kill(); // SIGKILL: no shutdown hook runs

    proc = await startAppProcess('standalone', env, { port });
    const rev = await poll(`/v2/deployments/${id}/revisions/${latest_revision_id}`, (r) => !['QUEUED', 'BUILDING', 'DEPLOYING'].includes(r.status));
    expect(rev.status + ': ' + rev.status_message).toMatch(/^DEPLOYED/);
    const history = (rev.status_history as Json[]).map((h) => h.status);
    expect(history).toEqual(['QUEUED', 'BUILDING', 'BUILDING', 'DEPLOYING', 'DEPLOYED']);
    expect(rev.status_history[2].message).toContain('resumed after a control-plane restart');
    const dep = (await api(`/v2/deployments/${id}`)).body;
    expect(dep).toMatchObject({ status: 'READY', active_revision_id: latest_revision_id });

    const url = dep.source_config.custom_url as string;
    const headers = { 'content-type': 'application/json', 'x-api-key': key };
    const t = (await (await fetch(`${url}/threads`, { method: 'POST', headers, body: '{}' })).json()) as Json;
    const run = (await (await fetch(`${url}/threads/${t.thread_id}/runs`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ assistant_id: 'echo', input: { messages: [{ role: 'user', content: 'ok' }] } }),
    })).json()) as Json;
    expect((await fetch(`${url}/threads/${t.thread_id}/runs/${run.run_id}/join`, { headers })).status).toBe(200);
    const state = (await (await fetch(`${url}/threads/${t.thread_id}/state`, { headers })).json()) as Json;
    expect(state.values.messages.at(-1).content).toBe('resumed ok');

    // A graceful restart brings the deployed server back behind the same address.
    await proc.stop();
    proc = await startAppProcess('standalone', env, { port });
    await poll(`/v2/deployments/${id}`, (d) => d.status === 'READY');
    let answered = 0;
    for (let i = 0; i < 300 && answered === 0; i++) {
      const ok = await fetch(`${url}/ok`).then((r) => r.status, () => 0);
      if (ok === 200) answered = ok;
      else await new Promise((res) => setTimeout(res, 200));
    }
    expect(answered).toBe(200);
    // Delete frees the deployment's server and database.
    expect((await api(`/v2/deployments/${id}`, { method: 'DELETE' })).status).toBe(202);
    for (let i = 0; i < 300; i++) {
      if ((await api(`/v2/deployments/${id}`)).status === 404) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    expect((await api(`/v2/deployments/${id}`)).status).toBe(404);
  });
});
