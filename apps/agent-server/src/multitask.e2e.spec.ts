import { Client } from '@langchain/langgraph-sdk';
import { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { contents, statusOf, user } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;


/** Starts a slow run and returns once it is executing (its first `values` event, the input, has been streamed). */
async function startRunning(threadId: string, text: string): Promise<string> {
  const run = await client.runs.create(threadId, 'agent', { input: user(text), streamMode: ['values'] });
  // A client of its own: the SDK runs at most 4 requests at once per client, and this stream stays open.
  const watcher = new Client({ apiUrl: server.url, apiKey: null });
  for await (const e of watcher.runs.joinStream(threadId, run.run_id)) {
    if (e.event === 'values') break;
  }
  expect((await client.runs.get(threadId, run.run_id)).status).toBe('running');
  return run.run_id;
}

useAgentServer((f) => ({ server, client, pg } = f));

describe('multitask strategies', () => {
  it('reject: 409 while a run is active; the active run completes and its results stay', async () => {
    const t = await client.threads.create();
    const first = await startRunning(t.thread_id, 'sleep:500 one');
    expect(await statusOf(client.runs.create(t.thread_id, 'agent', { input: user('two'), multitaskStrategy: 'reject' }))).toBe(409);
    expect(await statusOf(client.runs.wait(t.thread_id, 'agent', { input: user('two'), multitaskStrategy: 'reject' }))).toBe(409);
    const values = await client.runs.join(t.thread_id, first);
    expect(contents(values)).toEqual(['human:sleep:500 one', 'ai:thought: one', 'ai:echo: one']);
    expect((await client.runs.list(t.thread_id)).map((r) => r.run_id)).toEqual([first]);
    expect(contents((await client.threads.getState(t.thread_id)).values)).toEqual(['human:sleep:500 one', 'ai:thought: one', 'ai:echo: one']);
    // idle again: reject lets a run through
    expect(contents(await client.runs.wait(t.thread_id, 'agent', { input: user('two'), multitaskStrategy: 'reject' }))).toHaveLength(6);
  });

  it('rollback: the active run is interrupted and deleted with what it wrote; the state holds only the second run', async () => {
    const t = await client.threads.create();
    const first = await startRunning(t.thread_id, 'sleep:5000 one');
    const second = await client.runs.create(t.thread_id, 'agent', { input: user('two'), multitaskStrategy: 'rollback' });
    const values = await client.runs.join(t.thread_id, second.run_id);
    expect(contents(values)).toEqual(['human:two', 'ai:thought: two', 'ai:echo: two']);
    expect(await statusOf(client.runs.get(t.thread_id, first))).toBe(404);
    expect(await statusOf(client.runs.join(t.thread_id, first))).toBe(404);
    expect(contents((await client.threads.getState(t.thread_id)).values)).toEqual(['human:two', 'ai:thought: two', 'ai:echo: two']);
    for (const s of await client.threads.getHistory(t.thread_id, { limit: 50 })) expect(contents(s.values)).not.toContain('human:sleep:5000 one');
    expect((await client.runs.list(t.thread_id)).map((r) => r.run_id)).toEqual([second.run_id]);
    expect(Number((await pg.query(`SELECT count(*) AS n FROM agent_server.run_events WHERE run_id = $1`, [first])).rows[0].n)).toBe(0);
  });

  it('interrupt: the active run stops as interrupted and is kept; the new run starts', async () => {
    const t = await client.threads.create();
    const first = await startRunning(t.thread_id, 'sleep:5000 one');
    const second = await client.runs.create(t.thread_id, 'agent', { input: user('two'), multitaskStrategy: 'interrupt' });
    const values = await client.runs.join(t.thread_id, second.run_id);
    expect((await client.runs.get(t.thread_id, first)).status).toBe('interrupted');
    expect((await client.runs.get(t.thread_id, second.run_id)).status).toBe('success');
    // the first run's input was checkpointed before it was interrupted, and is kept
    expect(contents(values)).toEqual(['human:sleep:5000 one', 'human:two', 'ai:thought: two', 'ai:echo: two']);
    expect((await client.runs.list(t.thread_id)).map((r) => r.run_id).sort()).toEqual([first, second.run_id].sort());
    expect((await client.threads.get(t.thread_id)).status).toBe('idle');
  });

  it('enqueue (the default): the new run waits and starts when the active one ends', async () => {
    const t = await client.threads.create();
    const first = await startRunning(t.thread_id, 'sleep:400 one');
    const second = await client.runs.create(t.thread_id, 'agent', { input: user('two') });
    expect(second.multitask_strategy).toBe('enqueue');
    expect((await client.runs.get(t.thread_id, second.run_id)).status).toBe('pending');
    expect((await client.threads.get(t.thread_id)).status).toBe('busy');
    const values = await client.runs.join(t.thread_id, second.run_id);
    expect((await client.runs.get(t.thread_id, first)).status).toBe('success');
    expect(contents(values)).toEqual(['human:sleep:400 one', 'ai:thought: one', 'ai:echo: one', 'human:two', 'ai:thought: two', 'ai:echo: two']);
  });

  it('holds under concurrent requests: two rejects at the same instant on an idle thread, exactly one starts', async () => {
    const t = await client.threads.create();
    const results = await Promise.all([0, 1].map((i) => client.runs.create(t.thread_id, 'agent', { input: user(`sleep:200 r${i}`), multitaskStrategy: 'reject' }).then(
      (r) => ({ ok: r.run_id }),
      (e: { status?: number }) => ({ status: e.status }),
    )));
    expect(results.filter((r) => 'ok' in r)).toHaveLength(1);
    expect(results.filter((r) => 'status' in r && r.status === 409)).toHaveLength(1);
    const winner = results.find((r) => 'ok' in r) as { ok: string };
    expect(contents(await client.runs.join(t.thread_id, winner.ok))).toHaveLength(3);
    expect(await client.runs.list(t.thread_id)).toHaveLength(1);
  });

  it('holds under concurrent requests: enqueued runs never run at once (their messages never interleave)', async () => {
    const t = await client.threads.create();
    const runs = await Promise.all([0, 1, 2, 3, 4].map((i) => client.runs.create(t.thread_id, 'agent', { input: user(`sleep:30 q${i}`) })));
    for (const r of runs) await client.runs.join(t.thread_id, r.run_id);
    const got = contents((await client.threads.getState(t.thread_id)).values);
    expect(got).toHaveLength(15);
    for (let i = 0; i < 15; i += 3) {
      const tag = /q\d$/.exec(got[i])![0];
      expect(got.slice(i, i + 3)).toEqual([`human:sleep:30 ${tag}`, `ai:thought: ${tag}`, `ai:echo: ${tag}`]);
    }
    expect(new Set(got.filter((m) => m.startsWith('human')))).toEqual(new Set([0, 1, 2, 3, 4].map((i) => `human:sleep:30 q${i}`)));
  });

  it('holds under concurrent requests: interrupts at the same instant leave one success and the others interrupted', async () => {
    const t = await client.threads.create();
    const runs = await Promise.all([0, 1, 2].map((i) => client.runs.create(t.thread_id, 'agent', { input: user(`sleep:300 i${i}`), multitaskStrategy: 'interrupt' })));
    for (const r of runs) await client.runs.join(t.thread_id, r.run_id);
    const statuses = await Promise.all(runs.map(async (r) => (await client.runs.get(t.thread_id, r.run_id)).status));
    expect(statuses.filter((s) => s === 'success')).toHaveLength(1);
    expect(statuses.filter((s) => s === 'interrupted')).toHaveLength(2);
    // the run created last is the one that completes
    const last = (await client.runs.list(t.thread_id))[0];
    expect(last.status).toBe('success');
  });
});

describe('cancel and delete', () => {
  it('cancels a running run (interrupt, waiting), a pending one, and deletes finished runs only', async () => {
    const t = await client.threads.create();
    const running = await startRunning(t.thread_id, 'sleep:5000 long');
    const queued = await client.runs.create(t.thread_id, 'agent', { input: user('queued') });
    await client.runs.cancel(t.thread_id, queued.run_id);
    expect((await client.runs.get(t.thread_id, queued.run_id)).status).toBe('interrupted');
    expect(await statusOf(client.runs.delete(t.thread_id, running))).toBe(409);
    await client.runs.cancel(t.thread_id, running, true);
    expect((await client.runs.get(t.thread_id, running)).status).toBe('interrupted');
    expect((await client.threads.get(t.thread_id)).status).toBe('idle');
    await client.runs.delete(t.thread_id, running);
    expect(await statusOf(client.runs.get(t.thread_id, running))).toBe(404);
    expect(await statusOf(client.runs.delete(t.thread_id, running))).toBe(404);
    expect(await statusOf(client.runs.cancel(t.thread_id, '00000000-0000-4000-8000-000000000000'))).toBe(404);
    const bad = await fetch(`${server.url}/threads/${t.thread_id}/runs/${queued.run_id}/cancel?action=explode`, { method: 'POST' });
    expect(bad.status).toBe(422);
  });

  it('rollback by cancel removes the run and its checkpoints', async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'agent', { input: user('kept') });
    const running = await startRunning(t.thread_id, 'sleep:5000 gone');
    await client.runs.cancel(t.thread_id, running, true, 'rollback');
    expect(await statusOf(client.runs.get(t.thread_id, running))).toBe(404);
    expect(contents((await client.threads.getState(t.thread_id)).values)).toEqual(['human:kept', 'ai:thought: kept', 'ai:echo: kept']);
    expect(contents((await client.threads.get(t.thread_id)).values)).toEqual(['human:kept', 'ai:thought: kept', 'ai:echo: kept']);
  });

  it('deleting a thread deletes its runs and checkpoints', async () => {
    const t = await client.threads.create();
    const r = await client.runs.create(t.thread_id, 'agent', { input: user('x') });
    await client.runs.join(t.thread_id, r.run_id);
    await client.threads.delete(t.thread_id);
    expect(Number((await pg.query(`SELECT count(*) AS n FROM agent_server.runs WHERE thread_id = $1`, [t.thread_id])).rows[0].n)).toBe(0);
    expect(Number((await pg.query(`SELECT count(*) AS n FROM agent_server.checkpoints WHERE thread_id = $1`, [t.thread_id])).rows[0].n)).toBe(0);
  });
});
