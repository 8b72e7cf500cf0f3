import { randomUUID } from 'node:crypto';
import { ChatPromptTemplate, PromptTemplate } from '@langchain/core/prompts';
import { load } from '@langchain/core/load';
import { RunnableSequence } from '@langchain/core/runnables';
import { FakeListChatModel } from '@langchain/core/utils/testing';
import { Client } from 'langsmith';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { EventBus } from '@th/bus';
import { commitHash } from '@th/prompt-hub';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, any>;

/** A stand-in for the serialized ChatOpenAI: loading a prompt with its model must not need an OpenAI package. */
class ChatOpenAI extends FakeListChatModel {
  constructor() {
    super({ responses: ['pong'] });
  }
}

describe('prompt hub through HTTP and the published langsmith client', () => {
  let svc: TestStandalone;
  let client: Client;
  /** A second workspace of the same organization, with its own hub handle. */
  let other: { key: string; tenant: string };
  const handle = `ws-${randomUUID().slice(0, 8)}`;
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone();
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `hub-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value);
    });
    const ws = (await (await svc.api('/api/v1/workspaces', { method: 'POST', json: { name: 'Other hub tenant' } })).json()) as Json;
    const sk = (await (await svc.api('/api/v1/service-keys', { method: 'POST', json: { workspace_id: null, description: 'other' } })).json()) as Json;
    other = { key: sk.key as string, tenant: ws.id as string };
    client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, timeout_ms: 20_000 });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const asOther = (path: string, init: RequestInit & { json?: unknown } = {}) =>
    svc.api(path, { ...init, headers: { 'x-api-key': other.key, 'x-tenant-id': other.tenant, ...(init.headers as Record<string, string>) } });
  async function json<T = Json>(res: Response, status = 200): Promise<T> {
    const text = await res.text();
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  it('sets the hub handle once, audited as set_tenant_handle', async () => {
    expect((await json(await svc.api('/api/v1/settings'))).tenant_handle).toBeNull();
    expect((await svc.api('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: 'Not Valid' } })).status).toBe(422);
    const set = await json(await svc.api('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: handle } }));
    expect(set).toMatchObject({ id: svc.workspaceId, tenant_handle: handle });
    expect((await svc.api('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: `${handle}-2` } })).status).toBe(409);
    // a handle belongs to one workspace
    expect((await asOther('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: handle } })).status).toBe(409);
    await json(await asOther('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: `${handle}-o` } }));
    expect((await json(await svc.api('/api/v1/settings'))).tenant_handle).toBe(handle);
    const deadline = Date.now() + 5_000;
    while (audit.filter((e) => e.operation === 'set_tenant_handle').length < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(audit.filter((e) => e.operation === 'set_tenant_handle').map((e) => e.status).sort()).toEqual(['Failure', 'Failure', 'Failure', 'Success', 'Success']);
  });

  it('pushes and pulls a ChatPromptTemplate with the JS SDK, by name, -/name, handle/name, hash and tag', async () => {
    const name = `joke-${randomUUID().slice(0, 8)}`;
    const template = ChatPromptTemplate.fromMessages([
      ['system', 'You are a comedian.'],
      ['human', 'tell me a joke about {topic}'],
    ]);
    const url = await client.pushPrompt(name, { object: template, description: 'jokes', tags: ['fun'], commitTags: ['prod'] });
    expect(url).toContain(name);
    const pulled = await client.pullPromptCommit(name);
    expect(pulled.manifest).toEqual(JSON.parse(JSON.stringify(template)));
    const prompt = await load<ChatPromptTemplate>(JSON.stringify(pulled.manifest));
    expect(prompt).toBeInstanceOf(ChatPromptTemplate);
    const messages = await prompt.formatMessages({ topic: 'cats' });
    expect(messages.map((m) => m.content)).toEqual(['You are a comedian.', 'tell me a joke about cats']);
    for (const id of [`-/${name}`, `${handle}/${name}`, `${name}:${pulled.commit_hash}`, `${name}:${pulled.commit_hash.slice(0, 8)}`, `${name}:prod`, `${name}:latest`]) {
      expect((await client.pullPromptCommit(id, { skipCache: true, dangerouslyPullPublicPrompt: true })).commit_hash).toBe(pulled.commit_hash);
    }
    // a second version: history kept, both pullable, the tag still on the first
    const v2 = PromptTemplate.fromTemplate('Summarize: {text}');
    await client.pushPrompt(name, { object: v2 });
    const commits: Json[] = [];
    for await (const c of client.listCommits(name)) commits.push(c);
    expect(commits).toHaveLength(2);
    expect(commits[1]!.commit_hash).toBe(pulled.commit_hash);
    expect(commits[0]!.parent_commit_hash).toBe(pulled.commit_hash);
    expect((await client.pullPromptCommit(`${name}:prod`, { skipCache: true })).commit_hash).toBe(pulled.commit_hash);
    const latest = await client.pullPromptCommit(`${name}:latest`, { skipCache: true });
    expect(latest.commit_hash).toBe(commits[0]!.commit_hash);
    expect(await (await load<PromptTemplate>(JSON.stringify(latest.manifest))).format({ text: 'x' })).toBe('Summarize: x');
    const repo = (await client.getPrompt(name))!;
    expect(repo).toMatchObject({ repo_handle: name, owner: handle, full_name: `${handle}/${name}`, description: 'jokes', tags: ['fun'], num_commits: 2, last_commit_hash: latest.commit_hash, is_public: false, tenant_id: svc.workspaceId });
    expect(repo.num_downloads).toBe(9); // every pull above
    await client.deletePrompt(name);
    expect(await client.promptExists(name)).toBe(false);
  });

  it('returns a prompt with its model attached as a runnable sequence (include_model), else the prompt alone', async () => {
    const name = `with-model-${randomUUID().slice(0, 8)}`;
    const prompt = ChatPromptTemplate.fromMessages([['human', '{question}']]);
    const manifest = {
      lc: 1,
      type: 'constructor',
      id: ['langsmith', 'playground', 'PromptPlayground'],
      kwargs: {
        first: JSON.parse(JSON.stringify(prompt)),
        last: { lc: 1, type: 'constructor', id: ['langchain', 'chat_models', 'openai', 'ChatOpenAI'], kwargs: { model: 'gpt-4o-mini' } },
      },
    };
    await client.pushPrompt(name, { object: manifest });
    const withModel = await client.pullPromptCommit(name, { includeModel: true });
    expect(withModel.manifest.id).toEqual(['langchain', 'schema', 'runnable', 'RunnableSequence']);
    expect(await json(await svc.api(`/api/v1/commits/-/${name}/latest?include_model=true`))).toMatchObject({ model_config: { model: 'gpt-4o-mini' }, model_provider: 'ChatOpenAI' });
    expect(await json(await svc.api(`/api/v1/commits/-/${name}/latest`))).toMatchObject({ model_config: null, model_provider: null });
    // The `langchain` namespace resolves through the caller's import map, as the langchain package's hub.pull gives it.
    const importMap = { schema__runnable: { RunnableSequence }, chat_models__openai: { ChatOpenAI } };
    const chain = await load<RunnableSequence>(JSON.stringify(withModel.manifest), { importMap });
    expect(chain).toBeInstanceOf(RunnableSequence);
    expect((await chain.invoke({ question: 'ping?' })).content).toBe('pong');
    const alone = await client.pullPromptCommit(name, { skipCache: true });
    expect(alone.manifest).toEqual(manifest.kwargs.first);
    // the stored manifest itself comes back as sent in the history
    const [c] = (await json(await svc.api(`/api/v1/commits/-/${name}/`))).commits as Json[];
    expect(JSON.stringify(c!.manifest)).toBe(JSON.stringify(manifest));
  });

  it('keeps manifests byte for byte: key order, 1.0, 1e3 and escapes come back as pushed; the hash is over those bytes', async () => {
    const name = `bytes-${randomUUID().slice(0, 8)}`;
    await json(await svc.api('/api/v1/repos/', { method: 'POST', json: { repo_handle: name } }));
    const manifest =
      '{"lc":1,"type":"constructor","id":["langchain","prompts","prompt","PromptTemplate"],"kwargs":{"template_format":"f-string","template":"caf\\u00e9 \\"{x}\\" \u00fc","input_variables":["x"],"z":1.0,"a":1e3,"n":-0.50}}';
    expect(JSON.stringify(JSON.parse(manifest))).not.toBe(manifest);
    const res = await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', body: `{"description":"raw", "manifest": ${manifest} }`, headers: { 'content-type': 'application/json' } });
    const commit = (await json(res)).commit as Json;
    expect(commit.commit_hash).toBe(commitHash(null, manifest));
    const pulled = await svc.api(`/api/v1/commits/-/${name}/latest`);
    expect(pulled.headers.get('content-type')).toContain('application/json');
    const text = await pulled.text();
    expect(text.startsWith(`{"manifest":${manifest},`)).toBe(true);
    expect(JSON.parse(text)).toMatchObject({ commit_hash: commit.commit_hash, repo: name, examples: [] });
    // the SDK reads it as any JSON
    expect((await client.pullPromptCommit(name, { skipCache: true })).manifest).toEqual(JSON.parse(manifest));
    // the same content pushed again is nothing to commit; other bytes of the same value are a new commit
    expect((await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', body: `{"manifest":${manifest}}`, headers: { 'content-type': 'application/json' } })).status).toBe(409);
    const c2 = (await json(await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: JSON.parse(manifest) } }))).commit as Json;
    expect(c2.commit_hash).toBe(commitHash(commit.commit_hash as string, JSON.stringify(JSON.parse(manifest))));
    expect((await (await svc.api(`/api/v1/commits/-/${name}/${(commit.commit_hash as string).slice(0, 12)}`)).text()).startsWith(`{"manifest":${manifest},`)).toBe(true);
  });

  it('refuses a stale parent_commit (409), unsupported manifests (400) and bad bodies (422), writing nothing', async () => {
    const name = `conflict-${randomUUID().slice(0, 8)}`;
    await json(await svc.api('/api/v1/repos/', { method: 'POST', json: { repo_handle: name } }));
    const m1 = JSON.parse(JSON.stringify(PromptTemplate.fromTemplate('one {x}')));
    const m2 = JSON.parse(JSON.stringify(PromptTemplate.fromTemplate('two {x}')));
    const c1 = (await json(await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: m1 } }))).commit as Json;
    expect(c1.commit_hash).toMatch(/^[0-9a-f]{64}$/);
    const c2 = (await json(await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: m2, parent_commit: c1.commit_hash } }))).commit as Json;
    const stale = await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: m1, parent_commit: c1.commit_hash } });
    expect(stale.status).toBe(409);
    expect((await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: m2, parent_commit: c2.commit_hash } })).status).toBe(409);
    const noId = await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: { hi: 'hello' } } });
    expect(noId.status).toBe(400);
    expect(((await noId.json()) as Json).detail).toBe('Manifest must have an id field');
    expect((await json(await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: { id: ['hi'] } } }), 400)).detail).toBe('Manifest type hi is not supported');
    for (const body of [{}, { manifest: 'x' }, { manifest: m1, parent_commit: 'zz' }]) {
      const r = await json(await svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: body }), 422);
      for (const d of r.detail as Json[]) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    }
    for (const body of [{ repo_handle: 'a/b' }, { repo_handle: '' }, { repo_handle: 'ok', tags: 'x' }, { repo_handle: 'ok', is_public: 'yes' }]) {
      await json(await svc.api('/api/v1/repos/', { method: 'POST', json: body }), 422);
    }
    await json(await svc.api(`/api/v1/repos/-/${name}`, { method: 'PATCH', json: { is_public: 'no' } }), 422);
    await json(await svc.api('/api/v1/repos/?sort_field=name'), 422);
    expect((await json(await svc.api(`/api/v1/commits/-/${name}/`))).total).toBe(2);
    expect((await json(await svc.api(`/api/v1/repos/-/${name}`))).repo).toMatchObject({ num_commits: 2, last_commit_hash: c2.commit_hash, is_public: false });
    expect((await svc.api('/api/v1/repos/-/ok')).status).toBe(404);
    // racing commits on the same parent: exactly one lands, the others are told to pull first
    const racers = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => svc.api(`/api/v1/commits/-/${name}`, { method: 'POST', json: { manifest: JSON.parse(JSON.stringify(PromptTemplate.fromTemplate(`race ${i} {x}`))), parent_commit: c2.commit_hash } })),
    );
    expect(racers.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect((await json(await svc.api(`/api/v1/commits/-/${name}/`))).total).toBe(3);
    // duplicate name → 409
    expect((await svc.api('/api/v1/repos/', { method: 'POST', json: { repo_handle: name } })).status).toBe(409);
  });

  it('tags: create, list, move, delete', async () => {
    const name = `tags-${randomUUID().slice(0, 8)}`;
    await client.pushPrompt(name, { object: PromptTemplate.fromTemplate('a {x}') });
    await client.pushPrompt(name, { object: PromptTemplate.fromTemplate('b {x}') });
    const { commits } = await json(await svc.api(`/api/v1/commits/-/${name}/`));
    const [newer, older] = commits as Json[];
    const tag = await json(await svc.api(`/api/v1/repos/-/${name}/tags`, { method: 'POST', json: { tag_name: 'stable', commit_id: older!.id } }));
    expect(tag).toMatchObject({ tag_name: 'stable', commit_id: older!.id, commit_hash: older!.commit_hash });
    expect((await svc.api(`/api/v1/repos/-/${name}/tags`, { method: 'POST', json: { tag_name: 'stable', commit_id: newer!.id } })).status).toBe(409);
    expect((await svc.api(`/api/v1/repos/-/${name}/tags`, { method: 'POST', json: { tag_name: 'x', commit_id: randomUUID() } })).status).toBe(404);
    await json(await svc.api(`/api/v1/repos/-/${name}/tags`, { method: 'POST', json: { tag_name: 'bad tag', commit_id: older!.id } }), 422);
    expect(((await json(await svc.api(`/api/v1/repos/-/${name}/tags`))) as unknown as Json[]).map((t) => t.tag_name)).toEqual(['stable']);
    expect((await json(await svc.api(`/api/v1/commits/-/${name}/stable`))).commit_hash).toBe(older!.commit_hash);
    await json(await svc.api(`/api/v1/repos/-/${name}/tags/stable`, { method: 'PATCH', json: { commit_id: newer!.id } }));
    expect((await json(await svc.api(`/api/v1/commits/-/${name}/stable`))).commit_hash).toBe(newer!.commit_hash);
    await json(await svc.api(`/api/v1/repos/-/${name}/tags/stable`, { method: 'DELETE' }));
    expect((await svc.api(`/api/v1/commits/-/${name}/stable`)).status).toBe(404);
    expect((await svc.api(`/api/v1/repos/-/${name}/tags/stable`, { method: 'DELETE' })).status).toBe(404);
  });

  it('public prompts are readable, likeable and counted by other workspaces; private ones are a 404', async () => {
    const pub = `pub-${randomUUID().slice(0, 8)}`;
    const priv = `priv-${randomUUID().slice(0, 8)}`;
    await client.pushPrompt(pub, { object: PromptTemplate.fromTemplate('p {x}'), isPublic: true });
    await client.pushPrompt(priv, { object: PromptTemplate.fromTemplate('q {x}') });
    expect((await asOther(`/api/v1/repos/${handle}/${priv}`)).status).toBe(404);
    expect((await asOther(`/api/v1/commits/${handle}/${priv}/latest`)).status).toBe(404);
    expect((await asOther(`/api/v1/likes/${handle}/${priv}`, { method: 'POST', json: { like: true } })).status).toBe(404);
    expect((await asOther(`/api/v1/repos/-/${pub}`)).status).toBe(404); // `-` is the reader's own workspace
    expect((await asOther(`/api/v1/repos/nobody-${randomUUID().slice(0, 6)}/${pub}`)).status).toBe(404);
    const seen = (await json(await asOther(`/api/v1/repos/${handle}/${pub}`))).repo as Json;
    expect(seen).toMatchObject({ is_public: true, owner: handle, num_views: 1, liked_by_auth_user: false });
    await json(await asOther(`/api/v1/commits/${handle}/${pub}/latest`));
    expect(await json(await asOther(`/api/v1/likes/${handle}/${pub}`, { method: 'POST', json: { like: true } }))).toEqual({ likes: 1 });
    expect(await json(await asOther(`/api/v1/likes/${handle}/${pub}`, { method: 'POST', json: { like: true } }))).toEqual({ likes: 1 });
    expect(await client.likePrompt(pub)).toEqual({ likes: 2 });
    expect(await client.unlikePrompt(pub)).toEqual({ likes: 1 });
    const after = (await json(await asOther(`/api/v1/repos/${handle}/${pub}`))).repo as Json;
    expect(after).toMatchObject({ num_likes: 1, liked_by_auth_user: true, num_downloads: 1, num_views: 2 });
    // the other workspace cannot change or commit to it
    expect((await asOther(`/api/v1/repos/${handle}/${pub}`, { method: 'PATCH', json: { description: 'mine' } })).status).toBe(403);
    expect((await asOther(`/api/v1/repos/${handle}/${pub}`, { method: 'DELETE' })).status).toBe(403);
    expect((await asOther(`/api/v1/commits/${handle}/${pub}`, { method: 'POST', json: { manifest: JSON.parse(JSON.stringify(PromptTemplate.fromTemplate('z {x}'))) } })).status).toBe(403);
    // listing: own repos by default; is_public=true lists every workspace's public ones
    const own = await json(await asOther(`/api/v1/repos/?query=${pub}`));
    expect(own.total).toBe(0);
    const listed = await json(await asOther(`/api/v1/repos/?is_public=true&query=${pub}`));
    expect(listed.repos.map((r: Json) => r.full_name)).toEqual([`${handle}/${pub}`]);
    // tenant_handle: one workspace's prompts, only the public ones of another workspace; an unknown handle lists nothing
    const byOwner = async (h: string, as = asOther) => ((await json(await as(`/api/v1/repos/?tenant_handle=${h}&limit=100`))).repos as Json[]).map((r) => r.repo_handle);
    expect(await byOwner(handle)).toContain(pub);
    expect(await byOwner(handle)).not.toContain(priv);
    expect(await byOwner(handle, svc.api)).toEqual(expect.arrayContaining([pub, priv]));
    expect(await byOwner('-', svc.api)).toEqual(expect.arrayContaining([pub, priv]));
    expect(await byOwner(`nobody-${randomUUID().slice(0, 6)}`)).toEqual([]);
    expect((await json(await asOther('/api/v1/repos/?tenant_handle=Not%20A%20Handle'), 422)).detail[0].loc).toEqual(['query', 'tenant_handle']);
  });

  it('the workspace owns the handle: a PATCH of the workspace renames the owner in paths and listings, null removes it', async () => {
    const name = `owned-${randomUUID().slice(0, 8)}`;
    const renamed = `rn-${randomUUID().slice(0, 8)}`;
    await client.pushPrompt(name, { object: PromptTemplate.fromTemplate('o {x}'), isPublic: true });
    expect(((await json(await asOther(`/api/v1/repos/${handle}/${name}`))).repo as Json).owner).toBe(handle);
    const patch = (h: string | null) => svc.api(`/api/v1/workspaces/${svc.workspaceId}`, { method: 'PATCH', json: { tenant_handle: h } });
    expect((await json(await patch(renamed))).tenant_handle).toBe(renamed);
    try {
      expect((await json(await svc.api('/api/v1/settings'))).tenant_handle).toBe(renamed);
      // the other workspace resolves the new name, no longer the old one
      expect(((await json(await asOther(`/api/v1/repos/${renamed}/${name}`))).repo as Json).full_name).toBe(`${renamed}/${name}`);
      expect((await asOther(`/api/v1/repos/${handle}/${name}`)).status).toBe(404);
      const listed = await json(await asOther(`/api/v1/repos/?is_public=true&query=${name}`));
      expect(listed.repos.map((r: Json) => r.full_name)).toEqual([`${renamed}/${name}`]);
      expect(((await client.getPrompt(name)) as Json).owner).toBe(renamed);
      // set once through /settings: a workspace with a handle is a 409 there
      expect((await svc.api('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: `${renamed}-x` } })).status).toBe(409);
      // without a handle: no owner name, no new public prompt, and /settings sets one again
      await json(await patch(null));
      expect((await json(await svc.api('/api/v1/settings'))).tenant_handle).toBeNull();
      expect((await asOther(`/api/v1/repos/${renamed}/${name}`)).status).toBe(404);
      expect((await svc.api('/api/v1/repos/', { method: 'POST', json: { repo_handle: `${name}-2`, is_public: true } })).status).toBe(400);
      expect(((await json(await svc.api('/api/v1/settings/handle', { method: 'POST', json: { tenant_handle: renamed } }))) as Json).tenant_handle).toBe(renamed);
      expect(((await json(await asOther(`/api/v1/repos/${renamed}/${name}`))).repo as Json).owner).toBe(renamed);
    } finally {
      await json(await patch(handle));
    }
    expect(((await json(await asOther(`/api/v1/repos/${handle}/${name}`))).repo as Json).owner).toBe(handle);
  });

  it('lists with filters and sorting', async () => {
    const prefix = `list-${randomUUID().slice(0, 6)}`;
    for (const [i, tags] of [['a'], ['a', 'b'], ['b']].entries()) {
      await client.pushPrompt(`${prefix}-${i}`, { object: PromptTemplate.fromTemplate(`${i} {x}`), tags, description: `number ${i}` });
    }
    await client.updatePrompt(`${prefix}-2`, { isArchived: true });
    await client.likePrompt(`${prefix}-1`);
    const names = async (qs: string) => ((await json(await svc.api(`/api/v1/repos/?${qs}`))).repos as Json[]).map((r) => r.repo_handle);
    expect(await names(`query=${prefix}&sort_field=updated_at&sort_direction=asc`)).toEqual([`${prefix}-0`, `${prefix}-1`, `${prefix}-2`]);
    expect(await names(`query=${prefix}&is_archived=false&sort_field=updated_at&sort_direction=desc`)).toEqual([`${prefix}-1`, `${prefix}-0`]);
    expect(await names(`query=${prefix}&tags=a&tags=b`)).toEqual([`${prefix}-1`]);
    expect((await names(`query=${prefix}&sort_field=num_likes&sort_direction=desc`))[0]).toBe(`${prefix}-1`);
    expect(await names(`query=${prefix}-&match_prefix=true&limit=1&offset=1&sort_field=updated_at&sort_direction=asc`)).toEqual([`${prefix}-1`]);
    expect((await json(await svc.api(`/api/v1/repos/?query=${prefix}&limit=1`))).total).toBe(3);
    expect(await names(`query=${encodeURIComponent('%')}${prefix}`)).toEqual([]);
    const sdk: string[] = [];
    for await (const p of client.listPrompts({ query: prefix })) sdk.push(p.repo_handle);
    expect(sdk.sort()).toEqual([`${prefix}-0`, `${prefix}-1`]);
  });

  it('agents and skills: directories of files pushed, pulled, changed and deleted with the JS SDK', async () => {
    const agent = `agent-${randomUUID().slice(0, 8)}`;
    const url = await client.pushAgent(agent, { files: { 'AGENTS.md': { type: 'file', content: '# v1' }, 'tools.json': { type: 'file', content: '{}' } }, description: 'an agent' });
    expect(url).toContain(agent);
    const v1 = await client.pullAgent(agent);
    expect(v1.files).toEqual({ 'AGENTS.md': { type: 'file', content: '# v1' }, 'tools.json': { type: 'file', content: '{}' } });
    await client.pushAgent(agent, { files: { 'AGENTS.md': { type: 'file', content: '# v2' }, 'tools.json': null } });
    expect((await client.pullAgent(agent)).files).toEqual({ 'AGENTS.md': { type: 'file', content: '# v2' } });
    // any version stays pullable; a stale parent is a 409
    expect((await client.pullAgent(agent, { version: v1.commit_hash })).files['tools.json']).toEqual({ type: 'file', content: '{}' });
    const stale = await svc.api(`/api/v1/platform/hub/repos/-/${agent}/directories/commits`, { method: 'POST', json: { files: { a: { type: 'file', content: 'x' } }, parent_commit: v1.commit_hash } });
    expect(stale.status).toBe(409);
    for (const files of [{ '../etc/passwd': { type: 'file', content: 'x' } }, { '/abs': { type: 'file', content: 'x' } }, { a: { type: 'file' } }, { a: { type: 'dir' } }]) {
      await json(await svc.api(`/api/v1/platform/hub/repos/-/${agent}/directories/commits`, { method: 'POST', json: { files } }), 422);
    }
    // an agent is not a prompt, and prompts are listed apart from agents
    expect((await svc.api(`/api/v1/commits/-/${agent}`, { method: 'POST', json: { manifest: JSON.parse(JSON.stringify(PromptTemplate.fromTemplate('x {y}'))) } })).status).toBe(400);
    expect((await json(await svc.api(`/api/v1/repos/?query=${agent}`))).total).toBe(0);
    expect((await json(await svc.api(`/api/v1/repos/?query=${agent}&repo_type=agent`))).repos.map((r: Json) => r.repo_type)).toEqual(['agent']);
    expect(await client.agentExists(agent)).toBe(true);
    await client.deleteAgent(agent);
    expect(await client.agentExists(agent)).toBe(false);
    expect((await svc.api(`/api/v1/platform/hub/repos/-/${agent}/directories`)).status).toBe(404);
  });
});
