import { randomUUID } from 'node:crypto';
import { PromptTemplate } from '@langchain/core/prompts';
import { Client } from 'langsmith';
import { api, type Json, type SuiteCluster, useSharedCluster } from './cluster-client';

/** The prompt hub in the cluster form: the gateway serves /settings and routes /repos, /commits, /likes, prompt webhooks and hub directories to query. */
describe('prompt hub in the cluster form', () => {
  let call: ReturnType<typeof api>;
  let cluster: SuiteCluster;
  useSharedCluster((c, a) => {
    cluster = c;
    call = a;
  });

  it('pushes and pulls with the JS SDK through the gateway, with the hub handle, tags, likes, directories and webhooks', async () => {
    const handle = `cl-${randomUUID().slice(0, 8)}`;
    expect((await call('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: handle } })).status).toBe(200);
    const client = new Client({ apiUrl: `${cluster.gateway.url}/api/v1`, apiKey: cluster.apiKey, timeout_ms: 20_000 });
    const name = `cluster-${randomUUID().slice(0, 8)}`;
    const template = PromptTemplate.fromTemplate('hi {name}');
    await client.pushPrompt(name, { object: template, commitTags: ['prod'] });
    const pulled = await client.pullPromptCommit(`${handle}/${name}:prod`, { dangerouslyPullPublicPrompt: true });
    expect(pulled.manifest).toEqual(JSON.parse(JSON.stringify(template)));
    expect(await client.likePrompt(name)).toEqual({ likes: 1 });
    expect(((await (await call(`/api/v1/repos/-/${name}`)).json()) as { repo: Json }).repo).toMatchObject({ num_commits: 1, num_likes: 1, owner: handle });
    expect((await call(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: { hi: 1 } } })).status).toBe(400);
    expect((await call('/api/v1/repos/?sort_field=nope')).status).toBe(422);
    await client.pushAgent(`ag-${name}`, { files: { 'AGENTS.md': { type: 'file', content: 'x' } } });
    expect((await client.pullAgent(`ag-${name}`)).files['AGENTS.md']).toEqual({ type: 'file', content: 'x' });
    // public addresses only (no OUTBOUND_ALLOWED_HOSTS here): loopback is refused
    expect((await call('/api/v1/prompt-webhooks', { method: 'POST', json: { url: 'http://127.0.0.1:9/hook' } })).status).toBe(422);
    expect(await (await call('/api/v1/prompt-webhooks')).json()).toEqual([]);
    await client.deletePrompt(name);
    expect((await call(`/api/v1/repos/-/${name}`)).status).toBe(404);
  });

  it("another workspace reaches a public prompt by the owner's handle, which follows the workspace (gateway → workspaces topic → query)", async () => {
    const ws = (await (await call('/api/v1/workspaces', { method: 'POST', json: { display_name: 'hub owner' } })).json()) as Json;
    const sk = (await (await call('/api/v1/service-keys', { method: 'POST', json: { workspace_id: null, description: 'hub owner' } })).json()) as Json;
    // call() sets the cluster's own key; the new workspace is reached with an organization-scoped service key
    const asOwner = (path: string, init: { method?: string; json?: unknown } = {}) =>
      fetch(`${cluster.gateway.url}${path}`, {
        method: init.method ?? 'GET',
        headers: { 'x-api-key': sk.key as string, 'x-tenant-id': ws.id as string, 'content-type': 'application/json' },
        body: init.json === undefined ? undefined : JSON.stringify(init.json),
      });
    const handle = `own-${randomUUID().slice(0, 8)}`;
    const name = `shared-${randomUUID().slice(0, 8)}`;
    expect((await asOwner('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: handle } })).status).toBe(200);
    expect((await asOwner('/api/v1/repos/', { method: 'POST', json: { repo_handle: name, is_public: true } })).status).toBe(200);
    /** Polls as the main workspace until `path` answers `status` (the copy in query follows Kafka), bounded to 20 s. */
    const until = async (path: string, status: number) => {
      const deadline = Date.now() + 20_000;
      let last = 0;
      while (Date.now() < deadline) {
        last = (await call(path)).status;
        if (last === status) return;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`${path} still answers ${last}, not ${status}`);
    };
    await until(`/api/v1/repos/${handle}/${name}`, 200);
    const renamed = `${handle}-r`;
    expect((await call(`/api/v1/workspaces/${ws.id as string}`, { method: 'PATCH', json: { tenant_handle: renamed } })).status).toBe(200);
    await until(`/api/v1/repos/${renamed}/${name}`, 200);
    await until(`/api/v1/repos/${handle}/${name}`, 404);
    const listed = (await (await call(`/api/v1/repos/?is_public=true&query=${name}`)).json()) as { repos: Json[] };
    expect(listed.repos.map((r) => r.full_name)).toEqual([`${renamed}/${name}`]);
    expect((await (await asOwner('/api/v1/settings')).json()) as Json).toMatchObject({ id: ws.id, tenant_handle: renamed });
  });
});
