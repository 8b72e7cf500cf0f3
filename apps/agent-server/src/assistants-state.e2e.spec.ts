import { Client } from '@langchain/langgraph-sdk';
import { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { contents, detail, MISSING, statusOf, user } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;

/** updateState's answer: the reference server's {checkpoint} (the client's type only names {configurable}, also sent). */
const ckOf = (r: unknown) => (r as { checkpoint: { checkpoint_id: string }; configurable: { checkpoint_id: string } });
/** A checkpoint reference as getState accepts it (the client's type asks for every field). */
const ref = (c: Record<string, unknown>) => c as unknown as Parameters<Client['threads']['getState']>[1];
const count = async (sql: string, params: unknown[] = []) => Number((await pg.query<{ n: string }>(sql, params)).rows[0].n);
const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const patch = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

useAgentServer((f) => ({ server, client, pg } = f));

describe('assistant update and versions', () => {
  it('stores every update as a new version, lists versions and sets the latest', async () => {
    const a = await client.assistants.create({ graphId: 'agent', name: 'v1', metadata: { team: 'x' }, config: { configurable: { tone: 'dry' } } });
    expect(a.version).toBe(1);
    const b = await client.assistants.update(a.assistant_id, { name: 'v2', metadata: { stage: 'beta' }, context: { lang: 'fr' } });
    expect(b).toMatchObject({ assistant_id: a.assistant_id, version: 2, name: 'v2', graph_id: 'agent', metadata: { team: 'x', stage: 'beta' }, context: { lang: 'fr' } });
    expect(b.config).toEqual({ configurable: { tone: 'dry' } });
    const c = await client.assistants.update(a.assistant_id, { graphId: 'echo', config: { configurable: { tone: 'wet' } }, description: 'third' });
    expect(c).toMatchObject({ version: 3, graph_id: 'echo', name: 'v2', description: 'third', config: { configurable: { tone: 'wet' } } });
    expect(await client.assistants.get(a.assistant_id)).toMatchObject({ version: 3, graph_id: 'echo' });

    const versions = await client.assistants.getVersions(a.assistant_id);
    expect(versions.map((v) => [v.version, v.name, v.graph_id])).toEqual([
      [3, 'v2', 'echo'],
      [2, 'v2', 'agent'],
      [1, 'v1', 'agent'],
    ]);
    expect((await client.assistants.getVersions(a.assistant_id, { limit: 1, offset: 1 })).map((v) => v.version)).toEqual([2]);
    expect((await client.assistants.getVersions(a.assistant_id, { metadata: { stage: 'beta' } })).map((v) => v.version)).toEqual([3, 2]);

    const back = await client.assistants.setLatest(a.assistant_id, 1);
    expect(back).toMatchObject({ version: 1, name: 'v1', graph_id: 'agent', metadata: { team: 'x' }, config: { configurable: { tone: 'dry' } } });
    expect((await client.assistants.get(a.assistant_id)).name).toBe('v1');
    // a run uses the current version: graph "agent" again
    const values = await client.runs.wait(null, a.assistant_id, { input: user('hi') });
    expect(contents(values)).toEqual(['human:hi', 'ai:thought: hi', 'ai:echo: hi']);
    // updating after setLatest continues numbering after the highest version
    expect((await client.assistants.update(a.assistant_id, { name: 'v4' })).version).toBe(4);
    expect((await client.assistants.getVersions(a.assistant_id)).map((v) => v.version)).toEqual([4, 3, 2, 1]);
  });

  it('refuses bad updates (404, 409, 422) and writes nothing', async () => {
    const a = await client.assistants.create({ graphId: 'agent', name: 'fixed' });
    const versionsBefore = await count(`SELECT count(*) AS n FROM agent_server.assistant_versions`);
    expect(await statusOf(client.assistants.update(MISSING, { name: 'x' }))).toBe(404);
    expect(await statusOf(client.assistants.update(a.assistant_id, { graphId: 'nope' }))).toBe(404);
    // the default assistant of a graph is fixed
    expect(await statusOf(client.assistants.update('fe096781-5601-53d2-b2f6-0d3403f7e9ca', { name: 'x' }))).toBe(409);
    const bad = await patch(`/assistants/${a.assistant_id}`, { name: 'x', color: 'red' });
    expect(bad.status).toBe(422);
    expect((await detail(bad))[0].loc).toEqual(['body']);
    const badType = await patch(`/assistants/${a.assistant_id}`, { metadata: 'x' });
    expect(badType.status).toBe(422);
    expect((await detail(badType))[0].loc).toEqual(['body', 'metadata']);
    const badId = await patch(`/assistants/not-a-uuid`, { name: 'x' });
    expect(badId.status).toBe(422);
    expect((await detail(badId))[0]).toMatchObject({ loc: ['path', 'assistant_id'], type: 'uuid_parsing' });
    expect(await statusOf(client.assistants.setLatest(a.assistant_id, 7))).toBe(404);
    expect(await statusOf(client.assistants.setLatest(MISSING, 1))).toBe(404);
    const badLatest = await post(`/assistants/${a.assistant_id}/latest`, { version: 'one' });
    expect(badLatest.status).toBe(422);
    expect((await detail(badLatest))[0].loc).toEqual(['body', 'version']);
    expect(await statusOf(client.assistants.getVersions(MISSING))).toBe(404);
    const badVersions = await post(`/assistants/${a.assistant_id}/versions`, { limit: 0 });
    expect(badVersions.status).toBe(422);
    expect(await count(`SELECT count(*) AS n FROM agent_server.assistant_versions`)).toBe(versionsBefore);
    expect(await client.assistants.get(a.assistant_id)).toMatchObject({ name: 'fixed', version: 1 });
  });

  it('lists the default assistant as version 1', async () => {
    const versions = await client.assistants.getVersions('agent');
    expect(versions.map((v) => [v.version, v.graph_id])).toEqual([[1, 'agent']]);
  });
});

describe('assistant delete', () => {
  it('deletes the assistant alone, or with delete_threads its threads (runs and checkpoints too)', async () => {
    const mine = await client.assistants.create({ graphId: 'agent', name: 'doomed' });
    const other = await client.assistants.create({ graphId: 'agent', name: 'other' });
    const [t1, t2, t3] = [await client.threads.create(), await client.threads.create(), await client.threads.create()];
    await client.runs.wait(t1.thread_id, mine.assistant_id, { input: user('a') });
    await client.runs.wait(t2.thread_id, mine.assistant_id, { input: user('b') });
    await client.runs.wait(t3.thread_id, other.assistant_id, { input: user('c') });
    expect((await client.threads.get(t1.thread_id)).metadata).toMatchObject({ assistant_id: mine.assistant_id });
    expect(await count('SELECT count(*) AS n FROM agent_server.checkpoints WHERE thread_id = ANY($1::text[])', [[t1.thread_id, t2.thread_id]])).toBeGreaterThan(0);

    await client.assistants.delete(mine.assistant_id, { deleteThreads: true });
    expect(await statusOf(client.assistants.get(mine.assistant_id))).toBe(404);
    expect(await statusOf(client.threads.get(t1.thread_id))).toBe(404);
    expect(await statusOf(client.threads.get(t2.thread_id))).toBe(404);
    expect(await count('SELECT count(*) AS n FROM agent_server.runs WHERE thread_id = ANY($1::uuid[])', [[t1.thread_id, t2.thread_id]])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM agent_server.checkpoints WHERE thread_id = ANY($1::text[])', [[t1.thread_id, t2.thread_id]])).toBe(0);
    expect((await client.threads.get(t3.thread_id)).thread_id).toBe(t3.thread_id);

    // Without the flag (the client sends delete_threads=false) the threads stay.
    await client.assistants.delete(other.assistant_id);
    expect(await statusOf(client.assistants.get(other.assistant_id))).toBe(404);
    expect((await client.threads.get(t3.thread_id)).thread_id).toBe(t3.thread_id);
  });

  it('404 for an unknown assistant, 422 for a bad id or flag, deleting nothing', async () => {
    const a = await client.assistants.create({ graphId: 'agent' });
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, a.assistant_id, { input: user('x') });
    expect(await statusOf(client.assistants.delete(MISSING, { deleteThreads: true }))).toBe(404);
    const bad = await fetch(`${server.url}/assistants/not-a-uuid`, { method: 'DELETE' });
    expect(bad.status).toBe(422);
    expect((await detail(bad))[0].loc).toEqual(['path', 'assistant_id']);
    const flag = await fetch(`${server.url}/assistants/${a.assistant_id}?delete_threads=maybe`, { method: 'DELETE' });
    expect(flag.status).toBe(422);
    expect((await detail(flag))[0].loc).toEqual(['query', 'delete_threads']);
    expect((await client.assistants.get(a.assistant_id)).assistant_id).toBe(a.assistant_id);
    expect((await client.threads.get(t.thread_id)).thread_id).toBe(t.thread_id);
  });
});

describe('assistant graph and schemas', () => {
  it('returns the drawable graph, with and without xray', async () => {
    const g = (await client.assistants.getGraph('agent')) as { nodes: { id: string }[]; edges: { source: string; target: string }[] };
    expect(g.nodes.map((n) => n.id)).toEqual(['__start__', 'think', 'answer', '__end__']);
    expect(g.edges.map((e) => `${e.source}>${e.target}`).sort()).toEqual(['__start__>think', 'answer>__end__', 'think>answer']);
    const x = (await client.assistants.getGraph('agent', { xray: true })) as { nodes: { id: string }[] };
    expect(x.nodes.map((n) => n.id)).toContain('think');
    const x1 = (await client.assistants.getGraph('counter', { xray: 1 })) as { nodes: { id: string }[] };
    expect(x1.nodes.map((n) => n.id)).toContain('inc');
    expect(await statusOf(client.assistants.getGraph(MISSING))).toBe(404);
    expect((await fetch(`${server.url}/assistants/agent/graph?xray=maybe`)).status).toBe(422);
  });

  it('returns JSON Schemas for a zod-defined graph and null where the graph has none', async () => {
    const s = await client.assistants.getSchemas('counter');
    expect(s.graph_id).toBe('counter');
    expect(s.state_schema).toMatchObject({ type: 'object', properties: { count: { type: 'integer' }, label: { type: 'string' } }, required: ['count'] });
    expect(s.input_schema).toMatchObject({ type: 'object', properties: { count: { type: 'integer' } } });
    expect(s.config_schema).toBeNull();
    const plain = await client.assistants.getSchemas('agent');
    expect(plain).toMatchObject({ graph_id: 'agent', config_schema: null });
    expect(await statusOf(client.assistants.getSchemas('nope'))).toBe(404);
  });

  it('lists subgraphs (none in the test graphs) and 404s for an unknown assistant', async () => {
    expect(await client.assistants.getSubgraphs('agent')).toEqual({});
    expect(await client.assistants.getSubgraphs('agent', { recurse: true })).toEqual({});
    expect(await statusOf(client.assistants.getSubgraphs(MISSING))).toBe(404);
  });
});

describe('thread state update and state at a checkpoint', () => {
  it('updates the state as a node, reads it back at each checkpoint, and continues from it', async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'agent', { input: user('one') });
    const before = await client.threads.getState(t.thread_id);
    const first = before.checkpoint!.checkpoint_id!;
    const up = ckOf(await client.threads.updateState(t.thread_id, { values: { messages: [{ role: 'assistant', content: 'edited' }] }, asNode: 'answer' }));
    expect(up.checkpoint.checkpoint_id).toEqual(expect.any(String));
    expect(up.configurable.checkpoint_id).toBe(up.checkpoint.checkpoint_id);
    expect(up.checkpoint.checkpoint_id).not.toBe(first);
    const now = await client.threads.getState(t.thread_id);
    expect(now.checkpoint!.checkpoint_id).toBe(up.checkpoint.checkpoint_id);
    expect(contents(now.values)).toEqual(['human:one', 'ai:thought: one', 'ai:echo: one', 'ai:edited']);
    expect((now.metadata as { source?: string }).source).toBe('update');
    expect(contents((await client.threads.get(t.thread_id)).values)).toHaveLength(4);

    // the earlier checkpoint, by id and by checkpoint object
    const old = await client.threads.getState(t.thread_id, first);
    expect(old.checkpoint!.checkpoint_id).toBe(first);
    expect(contents(old.values)).toEqual(['human:one', 'ai:thought: one', 'ai:echo: one']);
    const oldObj = await client.threads.getState(t.thread_id, ref({ checkpoint_id: first, checkpoint_ns: '' }));
    expect(contents(oldObj.values)).toEqual(contents(old.values));

    // an update forking from the earlier checkpoint
    const fork = ckOf(await client.threads.updateState(t.thread_id, { values: { messages: [{ role: 'assistant', content: 'forked' }] }, asNode: 'answer', checkpointId: first }));
    const forked = await client.threads.getState(t.thread_id, fork.checkpoint.checkpoint_id);
    expect(contents(forked.values)).toEqual(['human:one', 'ai:thought: one', 'ai:echo: one', 'ai:forked']);
    expect((forked.parent_checkpoint as { checkpoint_id: string }).checkpoint_id).toBe(first);
    // the latest checkpoint is now the fork: the next run continues from it
    const next = await client.runs.wait(t.thread_id, 'agent', { input: user('two') });
    expect(contents(next)).toEqual(['human:one', 'ai:thought: one', 'ai:echo: one', 'ai:forked', 'human:two', 'ai:thought: two', 'ai:echo: two']);
  });

  it('refuses a state update while a run is active on the thread (409)', async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'agent', { input: user('x') });
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('sleep:30000 slow') });
    const n = await count(`SELECT count(*) AS n FROM agent_server.checkpoints WHERE thread_id = $1 AND metadata ->> 'source' = 'update'`, [t.thread_id]);
    expect(await statusOf(client.threads.updateState(t.thread_id, { values: { messages: [] }, asNode: 'answer' }))).toBe(409);
    expect(await count(`SELECT count(*) AS n FROM agent_server.checkpoints WHERE thread_id = $1 AND metadata ->> 'source' = 'update'`, [t.thread_id])).toBe(n);
    await client.runs.cancel(t.thread_id, run.run_id, true);
  });

  it('resumes an interrupted thread by updating its state as the interrupted node', async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'approval', { input: user('ship') });
    expect((await client.threads.get(t.thread_id)).status).toBe('interrupted');
    await client.threads.updateState(t.thread_id, { values: { messages: [{ role: 'assistant', content: 'decided by hand' }] }, asNode: 'ask' });
    const s = await client.threads.getState(t.thread_id);
    expect(s.next).toEqual([]);
    expect(contents(s.values)).toEqual(['human:ship', 'ai:decided by hand']);
    expect((await client.threads.get(t.thread_id)).status).toBe('idle');
  });

  it('refuses bad state updates and unknown checkpoints, writing no checkpoint', async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'agent', { input: user('x') });
    const checkpoints = () => count(`SELECT count(*) AS n FROM agent_server.checkpoints WHERE thread_id = $1`, [t.thread_id]);
    const n = await checkpoints();
    expect(await statusOf(client.threads.updateState(MISSING, { values: {} }))).toBe(404);
    expect(await statusOf(client.threads.updateState(t.thread_id, { values: {}, checkpointId: '1f000000-0000-6000-8000-000000000000' }))).toBe(404);
    const fresh = await client.threads.create();
    expect(await statusOf(client.threads.updateState(fresh.thread_id, { values: { messages: [] } }))).toBe(409);
    const badNode = await post(`/threads/${t.thread_id}/state`, { values: { messages: [] }, as_node: 'nowhere' });
    expect(badNode.status).toBe(422);
    expect((await detail(badNode))[0].loc).toEqual(['body', 'as_node']);
    const extra = await post(`/threads/${t.thread_id}/state`, { values: {}, node: 'answer' });
    expect(extra.status).toBe(422);
    const badValues = await post(`/threads/${t.thread_id}/state`, { values: 'text', as_node: 'answer' });
    expect(badValues.status).toBe(422);
    expect((await detail(badValues))[0].loc).toEqual(['body', 'values']);
    expect(await checkpoints()).toBe(n);

    expect(await statusOf(client.threads.getState(t.thread_id, '1f000000-0000-6000-8000-000000000000'))).toBe(404);
    expect(await statusOf(client.threads.getState(t.thread_id, ref({ checkpoint_id: '1f000000-0000-6000-8000-000000000000' })))).toBe(404);
    expect(await statusOf(client.threads.getState(MISSING, 'abc'))).toBe(404);
    const badCk = await post(`/threads/${t.thread_id}/state/checkpoint`, { checkpoint: 'abc' });
    expect(badCk.status).toBe(422);
    expect((await detail(badCk))[0].loc).toEqual(['body', 'checkpoint']);
  });
});

describe('runs/batch', () => {
  it('creates stateless background runs that all complete', async () => {
    const runs = await client.runs.createBatch([
      { assistantId: 'echo', input: user('a'), metadata: { n: 1 } },
      { assistantId: 'counter', input: { count: 4 } },
    ]);
    expect(runs).toHaveLength(2);
    expect(runs[0].metadata).toEqual({ n: 1 });
    for (const r of runs) expect(r.status === 'pending' || r.status === 'running' || r.status === 'success').toBe(true);
    const done = await Promise.all(runs.map((r) => client.runs.join(r.thread_id, r.run_id)));
    expect(contents(done[0])).toEqual(['human:a', 'ai:a']);
    expect(done[1]).toEqual({ count: 5 });
    // stateless threads are not listed
    expect((await client.threads.search({ ids: runs.map((r) => r.thread_id) })).length).toBe(0);
  });

  it('refuses the whole batch when any run is bad, writing nothing', async () => {
    const runsBefore = await count(`SELECT count(*) AS n FROM agent_server.runs`);
    const threadsBefore = await count(`SELECT count(*) AS n FROM agent_server.threads`);
    expect(await statusOf(client.runs.createBatch([{ assistantId: 'echo', input: user('a') }, { assistantId: 'nope', input: user('b') }]))).toBe(404);
    const badInput = await post('/runs/batch', [{ assistant_id: 'echo', input: user('a') }, { assistant_id: 'counter', input: { count: 'x' } }]);
    expect(badInput.status).toBe(422);
    expect((await detail(badInput))[0].loc).toEqual(['body', 1, 'input', 'count']);
    const badField = await post('/runs/batch', [{ assistant_id: 'echo', multitask_strategy: 'shove' }]);
    expect(badField.status).toBe(422);
    expect((await detail(badField))[0].loc).toEqual(['body', 0, 'multitask_strategy']);
    expect((await post('/runs/batch', [])).status).toBe(422);
    expect((await post('/runs/batch', { assistant_id: 'echo' })).status).toBe(422);
    expect(await count(`SELECT count(*) AS n FROM agent_server.runs`)).toBe(runsBefore);
    expect(await count(`SELECT count(*) AS n FROM agent_server.threads`)).toBe(threadsBefore);
  });
});
