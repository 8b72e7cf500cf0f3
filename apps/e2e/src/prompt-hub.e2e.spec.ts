import { randomUUID } from 'node:crypto';
import { PromptTemplate } from '@langchain/core/prompts';
import { Client } from 'langsmith';
import type { Cluster } from '@th/testing';
import { api, type Json, useCluster } from './cluster-client';

/** The prompt hub in the cluster form: the gateway routes /repos, /commits, /likes, /settings, prompt webhooks and hub directories to query. */
describe('prompt hub in the cluster form', () => {
  let call: ReturnType<typeof api>;
  let cluster: Cluster;
  useCluster(
    (c, a) => {
      cluster = c;
      call = a;
    },
    { sharedKafka: true },
  );

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
});
