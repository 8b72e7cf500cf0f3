import type { Client } from '@langchain/langgraph-sdk';
import type { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { contents, detail422, sendJson, user } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;

useAgentServer((f) => ({ server, client, pg } = f));

const count = async (sql: string, params: unknown[] = []) => Number((await pg.query<{ n: string }>(sql, params)).rows[0].n);
const threads = () => count('SELECT count(*) AS n FROM agent_server.threads');

describe('thread supersteps through the published client', () => {
  it('creates a thread with its state built by supersteps, one checkpoint each; a run continues from it', async () => {
    const t = await client.threads.create({
      graphId: 'echo',
      supersteps: [
        { updates: [{ values: user('first'), asNode: '__start__' }] },
        { updates: [{ values: { messages: [{ role: 'assistant', content: 'first' }] }, asNode: 'echo' }] },
      ],
    });
    expect(t.metadata).toMatchObject({ graph_id: 'echo' });
    expect(contents(t.values)).toEqual(['human:first', 'ai:first']);
    const state = await client.threads.getState(t.thread_id);
    expect(contents(state.values)).toEqual(['human:first', 'ai:first']);
    expect(state.next).toEqual([]);
    const history = await client.threads.getHistory(t.thread_id);
    expect(history.length).toBeGreaterThanOrEqual(2);

    await client.runs.wait(t.thread_id, 'echo', { input: user('second') });
    expect(contents((await client.threads.getState(t.thread_id)).values)).toEqual(['human:first', 'ai:first', 'human:second', 'ai:second']);
  });

  it('a typed graph: the updates land as the node wrote them', async () => {
    const t = await client.threads.create({
      graphId: 'counter',
      supersteps: [{ updates: [{ values: { count: 5 }, asNode: '__input__' }] }, { updates: [{ values: { count: 7, label: 'x' }, asNode: 'inc' }] }],
    });
    expect((await client.threads.getState(t.thread_id)).values).toEqual({ count: 7, label: 'x' });
  });

  it('a null command means none (the Python client always sends "command": null)', async () => {
    const r = await sendJson(server.url, 'POST', '/threads', {
      metadata: { graph_id: 'counter' },
      supersteps: [
        { updates: [{ values: { count: 5 }, command: null, as_node: '__input__' }] },
        { updates: [{ values: { count: 7, label: 'x' }, command: null, as_node: 'inc' }] },
      ],
    });
    expect(r.status).toBe(200);
    const t = (await r.json()) as { thread_id: string };
    expect((await client.threads.getState(t.thread_id)).values).toEqual({ count: 7, label: 'x' });
  });

  it('refuses supersteps without a known graph, with an unknown node or a command, or values the graph rejects, writing nothing', async () => {
    const before = await threads();
    const checkpoints = () => count('SELECT count(*) AS n FROM agent_server.checkpoints');
    const checkpointsBefore = await checkpoints();
    const bad: [unknown, (string | number)[]][] = [
      [{ supersteps: [{ updates: [{ values: {}, as_node: '__input__' }] }] }, ['body', 'metadata', 'graph_id']],
      [{ metadata: { graph_id: 'nope' }, supersteps: [{ updates: [{ values: {}, as_node: '__input__' }] }] }, ['body', 'metadata', 'graph_id']],
      [{ metadata: { graph_id: 'echo' }, supersteps: [{ updates: [{ values: {}, as_node: 'ghost' }] }] }, ['body', 'supersteps', 0, 'updates', 0, 'as_node']],
      [{ metadata: { graph_id: 'echo' }, supersteps: [{ updates: [{ command: { resume: 1 }, as_node: 'echo' }] }] }, ['body', 'supersteps', 0, 'updates', 0, 'command']],
      [{ metadata: { graph_id: 'echo' }, supersteps: [{ updates: [] }] }, ['body', 'supersteps', 0, 'updates']],
      [{ metadata: { graph_id: 'echo' }, supersteps: [{ updates: [{ values: {}, as_node: 'echo', extra: 1 }] }] }, ['body', 'supersteps', 0, 'updates', 0]],
      // Two writes to the same single-value channel in one superstep: the graph refuses it.
      [{ metadata: { graph_id: 'counter' }, supersteps: [{ updates: [{ values: { count: 1 }, as_node: 'inc' }, { values: { count: 2 }, as_node: '__start__' }] }] }, ['body', 'supersteps']],
    ];
    for (const [body, loc] of bad) {
      const r = await sendJson(server.url, 'POST', '/threads', body);
      if (r.status !== 422) throw new Error(`${JSON.stringify(body)} answered ${r.status}: ${await r.text()}`);
      const d = await detail422(r);
      expect(d.map((x) => x.loc.slice(0, loc.length))).toContainEqual(loc);
    }
    expect(await threads()).toBe(before);
    expect(await checkpoints()).toBe(checkpointsBefore);
  });
});
