import { Client } from '@langchain/langgraph-sdk';
import { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { contents, statusOf, user } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;

const count = async (sql: string, params: unknown[] = []) => Number((await pg.query<{ n: string }>(sql, params)).rows[0].n);

useAgentServer((f) => ({ server, client, pg } = f));

describe('health', () => {
  it('answers /ok and the health probes', async () => {
    expect(await (await fetch(`${server.url}/ok`)).json()).toEqual({ ok: true });
    expect((await fetch(`${server.url}/health/live`)).status).toBe(200);
    expect((await fetch(`${server.url}/health/ready`)).status).toBe(200);
  });
});

describe('assistants', () => {
  it('addresses a graph by name or by its uuid5 id, searches and reads them', async () => {
    const byName = await client.assistants.get('agent');
    expect(byName.assistant_id).toBe('fe096781-5601-53d2-b2f6-0d3403f7e9ca');
    expect(byName.graph_id).toBe('agent');
    const byId = await client.assistants.get(byName.assistant_id);
    expect(byId.graph_id).toBe('agent');
    const found = await client.assistants.search({ graphId: 'echo' });
    expect(found.map((a) => a.graph_id)).toEqual(['echo']);
    const all = await client.assistants.search({ limit: 2, offset: 0 });
    expect(all).toHaveLength(2);
  });

  it('creates an assistant with its own config, refuses a duplicate and an unknown graph', async () => {
    const a = await client.assistants.create({ graphId: 'agent', name: 'mine', metadata: { team: 'x' }, config: { configurable: { tone: 'dry' } } });
    expect(a.name).toBe('mine');
    expect(a.config).toEqual({ configurable: { tone: 'dry' } });
    expect((await client.assistants.get(a.assistant_id)).metadata).toEqual({ team: 'x' });
    expect(await statusOf(client.assistants.create({ graphId: 'agent', assistantId: a.assistant_id }))).toBe(409);
    expect((await client.assistants.create({ graphId: 'agent', assistantId: a.assistant_id, ifExists: 'do_nothing' })).name).toBe('mine');
    const before = await count(`SELECT count(*) AS n FROM agent_server.assistants`);
    expect(await statusOf(client.assistants.create({ graphId: 'nope' }))).toBe(404);
    expect(await count(`SELECT count(*) AS n FROM agent_server.assistants`)).toBe(before);
    expect(await statusOf(client.assistants.get('nope'))).toBe(404);
    expect((await client.assistants.search({ metadata: { team: 'x' } })).map((x) => x.assistant_id)).toEqual([a.assistant_id]);
  });
});

describe('threads', () => {
  it('creates (empty body too), reads, searches and deletes threads', async () => {
    const r = await fetch(`${server.url}/threads`, { method: 'POST' });
    expect(r.status).toBe(200);
    const empty = (await r.json()) as { thread_id: string; status: string };
    expect(empty.status).toBe('idle');
    const t = await client.threads.create({ metadata: { owner: 'ann' } });
    expect((await client.threads.get(t.thread_id)).metadata).toEqual({ owner: 'ann' });
    expect(await statusOf(client.threads.create({ threadId: t.thread_id }))).toBe(409);
    expect((await client.threads.create({ threadId: t.thread_id, ifExists: 'do_nothing' })).thread_id).toBe(t.thread_id);
    const found = await client.threads.search({ metadata: { owner: 'ann' } });
    expect(found.map((x) => x.thread_id)).toEqual([t.thread_id]);
    expect((await client.threads.search({ ids: [empty.thread_id] })).map((x) => x.thread_id)).toEqual([empty.thread_id]);
    await client.threads.delete(t.thread_id);
    expect(await statusOf(client.threads.get(t.thread_id))).toBe(404);
    expect(await statusOf(client.threads.delete(t.thread_id))).toBe(404);
  });

  it('answers 404 for an unknown thread and 422 for a malformed id or body', async () => {
    expect(await statusOf(client.threads.get('00000000-0000-4000-8000-000000000000'))).toBe(404);
    expect(await statusOf(client.threads.getState('00000000-0000-4000-8000-000000000000'))).toBe(404);
    const bad = await fetch(`${server.url}/threads/not-a-uuid`);
    expect(bad.status).toBe(422);
    expect(await bad.json()).toEqual({ detail: [{ loc: ['path', 'thread_id'], msg: expect.any(String), type: 'uuid_parsing' }] });
    const before = await count(`SELECT count(*) AS n FROM agent_server.threads`);
    const r = await fetch(`${server.url}/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ metadata: 'x' }) });
    expect(r.status).toBe(422);
    expect(((await r.json()) as { detail: { loc: string[] }[] }).detail[0].loc).toEqual(['body', 'metadata']);
    const j = await fetch(`${server.url}/threads`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"metadata":' });
    expect(j.status).toBe(422);
    expect(await count(`SELECT count(*) AS n FROM agent_server.threads`)).toBe(before);
  });
});

describe('thread copy', () => {
  it('copies a thread with its state and history under a new id; the two then diverge', async () => {
    const t = await client.threads.create({ metadata: { owner: 'copy' } });
    await client.runs.wait(t.thread_id, 'agent', { input: user('one') });
    const original = await client.threads.getState(t.thread_id);
    const copy = await client.threads.copy(t.thread_id);
    expect(copy.thread_id).not.toBe(t.thread_id);
    expect(copy.metadata).toEqual((await client.threads.get(t.thread_id)).metadata);
    expect(copy.metadata).toMatchObject({ owner: 'copy' });
    expect(copy.status).toBe('idle');
    const copied = await client.threads.getState(copy.thread_id);
    expect(contents(copied.values)).toEqual(contents(original.values));
    expect(copied.checkpoint.checkpoint_id).toBe(original.checkpoint.checkpoint_id);
    const history = await client.threads.getHistory(copy.thread_id);
    expect(history.map((h) => h.checkpoint.checkpoint_id)).toEqual((await client.threads.getHistory(t.thread_id)).map((h) => h.checkpoint.checkpoint_id));
    // a run on the copy continues from the copied state and leaves the original alone
    await client.runs.wait(copy.thread_id, 'agent', { input: user('two') });
    expect(contents((await client.threads.getState(copy.thread_id)).values)).toEqual([...contents(original.values), 'human:two', 'ai:thought: two', 'ai:echo: two']);
    expect(contents((await client.threads.getState(t.thread_id)).values)).toEqual(contents(original.values));
    expect(await client.runs.list(copy.thread_id)).toHaveLength(1);
    expect(await client.runs.list(t.thread_id)).toHaveLength(1);
  });

  it('answers 404 for an unknown thread and 422 for a malformed id, writing nothing', async () => {
    const before = await count(`SELECT count(*) AS n FROM agent_server.threads`);
    expect(await statusOf(client.threads.copy('00000000-0000-4000-8000-000000000000'))).toBe(404);
    const bad = await fetch(`${server.url}/threads/not-a-uuid/copy`, { method: 'POST' });
    expect(bad.status).toBe(422);
    expect(await count(`SELECT count(*) AS n FROM agent_server.threads`)).toBe(before);
  });
});

describe('counts', () => {
  it('counts assistants and threads with the search filters, through the published client', async () => {
    const tag = `count-${Date.now()}`;
    expect(await client.assistants.count({ metadata: { tag } })).toBe(0);
    await client.assistants.create({ graphId: 'echo', name: `${tag}-a`, metadata: { tag } });
    await client.assistants.create({ graphId: 'agent', name: `${tag}-b`, metadata: { tag } });
    expect(await client.assistants.count({ metadata: { tag } })).toBe(2);
    expect(await client.assistants.count({ metadata: { tag }, graphId: 'echo' })).toBe(1);
    expect(await client.assistants.count({ name: `${tag}-b` })).toBe(1);
    const everything = await client.assistants.search({ limit: 1000 });
    expect(await client.assistants.count()).toBe(everything.length);

    expect(await client.threads.count({ metadata: { tag } })).toBe(0);
    const a = await client.threads.create({ metadata: { tag, n: 1 } });
    await client.threads.create({ metadata: { tag, n: 2 } });
    expect(await client.threads.count({ metadata: { tag } })).toBe(2);
    expect(await client.threads.count({ metadata: { tag, n: 1 } })).toBe(1);
    expect(await client.threads.count({ metadata: { tag }, status: 'busy' })).toBe(0);
    await client.runs.wait(a.thread_id, 'agent', { input: user('c') });
    expect(await client.threads.count({ metadata: { tag }, values: { messages: [{ content: 'c' }] } })).toBe(1);
    expect(await client.threads.count({ metadata: { tag }, status: 'idle' })).toBe(2);

    // a bare JSON number
    const r = await fetch(`${server.url}/threads/count`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ metadata: { tag } }) });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await r.text()).toBe('2');
  });

  it('refuses bad count filters with 422', async () => {
    const post = (path: string, body: unknown) => fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const status = await post('/threads/count', { status: 'sleeping' });
    expect(status.status).toBe(422);
    expect(((await status.json()) as { detail: { loc: string[] }[] }).detail[0].loc).toEqual(['body', 'status']);
    const unknown = await post('/assistants/count', { limit: 10 });
    expect(unknown.status).toBe(422);
    expect((await post('/assistants/count', { metadata: 'x' })).status).toBe(422);
  });
});

describe('runs', () => {
  it('creates a run with Content-Location, joins it and reads the thread state', async () => {
    const t = await client.threads.create();
    let location = '';
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('hello'), metadata: { k: 1 }, onRunCreated: () => undefined });
    expect(run.status === 'pending' || run.status === 'running').toBe(true);
    expect(run.multitask_strategy).toBe('enqueue');
    const raw = await fetch(`${server.url}/threads/${t.thread_id}/runs/${run.run_id}`);
    expect(raw.status).toBe(200);
    const created = await fetch(`${server.url}/threads/${t.thread_id}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'agent', input: user('again') }),
    });
    location = created.headers.get('content-location') ?? '';
    const second = (await created.json()) as { run_id: string };
    expect(location).toBe(`/threads/${t.thread_id}/runs/${second.run_id}`);
    const joined = await client.runs.join(t.thread_id, run.run_id);
    expect(contents(joined)).toEqual(['human:hello', 'ai:thought: hello', 'ai:echo: hello']);
    await client.runs.join(t.thread_id, second.run_id);
    expect((await client.runs.get(t.thread_id, run.run_id)).status).toBe('success');
    const state = await client.threads.getState(t.thread_id);
    expect(contents(state.values)).toEqual(['human:hello', 'ai:thought: hello', 'ai:echo: hello', 'human:again', 'ai:thought: again', 'ai:echo: again']);
    expect(state.checkpoint?.checkpoint_id).toEqual(expect.any(String));
    expect(state.next).toEqual([]);
    const thread = await client.threads.get(t.thread_id);
    expect(thread.status).toBe('idle');
    expect(thread.metadata).toMatchObject({ graph_id: 'agent' });
    const runs = await client.runs.list(t.thread_id);
    expect(runs.map((r) => r.run_id).sort()).toEqual([run.run_id, second.run_id].sort());
    expect(runs.find((r) => r.run_id === run.run_id)?.metadata).toEqual({ k: 1 });
    const history = await client.threads.getHistory(t.thread_id, { limit: 3 });
    expect(history).toHaveLength(3);
    expect(contents(history[0].values)).toHaveLength(6);
  });

  it('waits on a thread and statelessly, and reports a failed run as __error__', async () => {
    const t = await client.threads.create();
    const values = await client.runs.wait(t.thread_id, 'agent', { input: user('w') });
    expect(contents(values)).toEqual(['human:w', 'ai:thought: w', 'ai:echo: w']);
    const threadsBefore = await count(`SELECT count(*) AS n FROM agent_server.threads`);
    const stateless = await client.runs.wait(null, 'echo', { input: user('solo') });
    expect(contents(stateless)).toEqual(['human:solo', 'ai:solo']);
    expect(await count(`SELECT count(*) AS n FROM agent_server.threads`)).toBe(threadsBefore);
    await expect(client.runs.wait(t.thread_id, 'agent', { input: user('fail') })).rejects.toThrow(/the graph failed on purpose/);
    const [failed] = await client.runs.list(t.thread_id, { status: 'error' });
    expect(failed.status).toBe('error');
    expect((await client.threads.get(t.thread_id)).status).toBe('error');
  });

  it('refuses bad input with clear errors and writes nothing', async () => {
    const t = await client.threads.create();
    const runsBefore = await count(`SELECT count(*) AS n FROM agent_server.runs`);
    expect(await statusOf(client.runs.create(t.thread_id, 'nope', { input: user('x') }))).toBe(404);
    expect(await statusOf(client.runs.create('00000000-0000-4000-8000-000000000000', 'agent', { input: user('x') }))).toBe(404);
    expect(await statusOf(client.runs.create(t.thread_id, 'counter', { input: { count: 'three' } }))).toBe(422);
    expect(await statusOf(client.runs.create(t.thread_id, 'agent', { input: { nonsense: 1 } }))).toBe(422);
    const bad = await fetch(`${server.url}/threads/${t.thread_id}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'agent', input: user('x'), multitask_strategy: 'shove' }),
    });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: string[] }[] }).detail[0].loc).toEqual(['body', 'multitask_strategy']);
    const big = await fetch(`${server.url}/threads/${t.thread_id}/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'agent', input: user('x'.repeat(11 * 1024 * 1024)) }),
    });
    expect(big.status).toBe(413);
    expect(await count(`SELECT count(*) AS n FROM agent_server.runs`)).toBe(runsBefore);
    expect((await client.threads.get(t.thread_id)).status).toBe('idle');
    const counted = await client.runs.wait(t.thread_id, 'counter', { input: { count: 2 } });
    expect(counted).toEqual({ count: 3 });
  });

  it('leaves the thread interrupted when the graph asks for input, and resumes it with a command', async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'approval', { input: user('ship it') });
    const thread = await client.threads.get(t.thread_id);
    expect(thread.status).toBe('interrupted');
    const state = await client.threads.getState(t.thread_id);
    expect(state.next).toEqual(['ask']);
    expect(state.tasks[0].interrupts[0]).toMatchObject({ value: { question: 'approve "ship it"?' } });
    const values = await client.runs.wait(t.thread_id, 'approval', { command: { resume: 'yes' } });
    expect(contents(values)).toEqual(['human:ship it', 'ai:decision: yes']);
    expect((await client.threads.get(t.thread_id)).status).toBe('idle');
  });
});
