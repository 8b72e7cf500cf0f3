import type { Client } from '@langchain/langgraph-sdk';
import type { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { contents, MISSING, statusOf, user, detail422, sendJson } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;

// A short tick, so that a cron made due in the database fires within a few hundred milliseconds.
useAgentServer((f) => ({ server, client, pg } = f), { CRON_TICK_MS: '100' });

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const count = async (sql: string, params: unknown[] = []) => Number((await pg.query<{ n: string }>(sql, params)).rows[0].n);
const cronRows = () => count('SELECT count(*) AS n FROM agent_server.crons');
const nextRunDate = async (cronId: string) => (await pg.query<{ d: Date }>('SELECT next_run_date AS d FROM agent_server.crons WHERE cron_id = $1', [cronId])).rows[0]!.d;
/** Makes a cron due now, as if its minute had come. */
const makeDue = (cronId: string) => pg.query(`UPDATE agent_server.crons SET next_run_date = now() - interval '1 minute' WHERE cron_id = $1`, [cronId]);
const send = (method: string, path: string, body: unknown) => sendJson(server.url, method, path, body);
/** Polls `probe` every 50 ms until it answers something other than undefined, for at most `ms`. */
async function waitFor<T>(what: string, probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}
/** The next 1 January 00:00 UTC after now: the next firing of "0 0 1 1 *". */
const nextNewYear = () => new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1)).toISOString();
const newAssistant = async () => (await client.assistants.create({ graphId: 'agent' })).assistant_id;

describe('crons through the published client', () => {
  it('creates a cron for a thread: the fields the client reads, next_run_date the next matching minute', async () => {
    const agent = await client.assistants.get('agent');
    const thread = await client.threads.create();
    const before = Date.now();
    const cron = await client.crons.createForThread(thread.thread_id, 'agent', {
      schedule: '*/5 * * * *',
      input: user('tick'),
      metadata: { owner: 'ops' },
      config: { configurable: { tone: 'dry' } },
      multitaskStrategy: 'enqueue',
    });
    const after = Date.now();
    expect(cron.cron_id).toMatch(UUID);
    expect(cron).toMatchObject({ assistant_id: agent.assistant_id, thread_id: thread.thread_id, schedule: '*/5 * * * *', end_time: null, user_id: null, metadata: { owner: 'ops' } });
    expect((cron as unknown as { enabled: boolean }).enabled).toBe(true);
    expect(cron.payload).toMatchObject({ assistant_id: agent.assistant_id, input: user('tick'), metadata: { owner: 'ops' }, config: { configurable: { tone: 'dry' } }, multitask_strategy: 'enqueue' });
    // the next whole five minutes after creation
    const fiveAfter = (t: number) => new Date(Math.floor(t / 300_000) * 300_000 + 300_000).toISOString();
    expect([fiveAfter(before), fiveAfter(after)]).toContain(cron.next_run_date);
    expect(Date.parse(cron.created_at)).toBeGreaterThanOrEqual(before - 1000);
    expect(cron.updated_at).toBe(cron.created_at);
    expect((await nextRunDate(cron.cron_id)).toISOString()).toBe(cron.next_run_date);
  });

  it('creates a stateless cron: no thread, on_run_completed kept, named weekdays in UTC', async () => {
    const cron = await client.crons.create('agent', { schedule: '0 9 * * MON', input: user('weekly'), onRunCompleted: 'keep' });
    expect(cron.thread_id).toBeNull();
    expect((cron as unknown as { on_run_completed: string }).on_run_completed).toBe('keep');
    const next = new Date(cron.next_run_date);
    expect([next.getUTCDay(), next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([1, 9, 0, 0]);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect(next.getTime()).toBeLessThanOrEqual(Date.now() + 7 * 86_400_000);
    // stateless crons drop their runs' threads by default
    const dropping = await client.crons.create('agent', { schedule: '@daily' });
    expect((dropping as unknown as { on_run_completed: string }).on_run_completed).toBe('delete');
    expect(dropping.next_run_date).toBe(new Date(Math.floor(Date.now() / 86_400_000) * 86_400_000 + 86_400_000).toISOString());
  });

  it('searches and counts by assistant and thread, with paging, sorting and select', async () => {
    const assistantId = await newAssistant();
    const [t1, t2] = [await client.threads.create(), await client.threads.create()];
    // Daily schedules 1 to 4 hours after the current UTC hour: their next runs come in that order
    // whatever the time of day (fixed hours did not, between 01:00 and 04:00 UTC).
    const hour = new Date().getUTCHours();
    const daily = (k: number) => `0 ${(hour + k) % 24} * * *`;
    const a = await client.crons.createForThread(t1.thread_id, assistantId, { schedule: daily(3) });
    const b = await client.crons.createForThread(t1.thread_id, assistantId, { schedule: daily(1) });
    const c = await client.crons.createForThread(t2.thread_id, assistantId, { schedule: daily(2) });
    const d = await client.crons.create(assistantId, { schedule: daily(4) });

    const all = await client.crons.search({ assistantId, sortBy: 'created_at', sortOrder: 'asc' });
    expect(all.map((x) => x.cron_id)).toEqual([a, b, c, d].map((x) => x.cron_id));
    expect((await client.crons.search({ assistantId })).map((x) => x.cron_id)).toEqual([d, c, b, a].map((x) => x.cron_id)); // newest first by default
    expect((await client.crons.search({ assistantId, threadId: t1.thread_id, sortBy: 'created_at', sortOrder: 'asc' })).map((x) => x.cron_id)).toEqual([a.cron_id, b.cron_id]);
    const page = await client.crons.search({ assistantId, sortBy: 'created_at', sortOrder: 'asc', limit: 2, offset: 1 });
    expect(page.map((x) => x.cron_id)).toEqual([b.cron_id, c.cron_id]);
    expect(await client.crons.search({ assistantId, limit: 2, offset: 4 })).toEqual([]);
    expect((await client.crons.search({ assistantId, sortBy: 'next_run_date', sortOrder: 'asc' })).map((x) => x.schedule)).toEqual([daily(1), daily(2), daily(3), daily(4)]);
    const selected = await client.crons.search({ assistantId, select: ['cron_id', 'schedule'], sortBy: 'cron_id', sortOrder: 'asc' });
    expect(selected).toHaveLength(4);
    for (const s of selected) expect(Object.keys(s).sort()).toEqual(['cron_id', 'schedule']);
    expect(selected.map((s) => s.cron_id)).toEqual([a, b, c, d].map((x) => x.cron_id).sort());

    expect(await client.crons.count({ assistantId })).toBe(4);
    expect(await client.crons.count({ assistantId, threadId: t1.thread_id })).toBe(2);
    expect(await client.crons.count({ threadId: t2.thread_id })).toBe(1);
    expect(await client.crons.count({ assistantId: MISSING })).toBe(0);
    await detail422(await send('POST', '/runs/crons/search', { sort_by: 'schedule' }));
    await detail422(await send('POST', '/runs/crons/count', { thread_id: 'not-a-uuid' }));
  });

  it('updates a cron: schedule and next run, payload, merged metadata, end time, enabled', async () => {
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 0 1 1 *', input: user('old'), metadata: { a: 1 } });
    await sleep(20); // timestamps are answered in milliseconds
    const endTime = '2099-01-01T00:00:00.000Z';
    const updated = await client.crons.update(cron.cron_id, { schedule: '30 2 * * *', input: user('new'), metadata: { b: 2 }, endTime, enabled: false });
    expect(updated).toMatchObject({ cron_id: cron.cron_id, schedule: '30 2 * * *', end_time: endTime, metadata: { a: 1, b: 2 }, enabled: false, created_at: cron.created_at });
    expect(updated.payload).toMatchObject({ input: user('new'), metadata: { a: 1, b: 2 } });
    expect(Date.parse(updated.updated_at)).toBeGreaterThan(Date.parse(cron.updated_at));
    const next = new Date(updated.next_run_date!);
    expect([next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()]).toEqual([2, 30, 0]);
    expect(next.getTime() - Date.now()).toBeLessThanOrEqual(86_400_000);
    expect((await client.crons.search({ threadId: thread.thread_id }))[0]).toMatchObject({ schedule: '30 2 * * *', enabled: false });

    expect(await statusOf(client.crons.update(MISSING, { schedule: '* * * * *' }))).toBe(404);
    expect((await detail422(await send('PATCH', `/runs/crons/${cron.cron_id}`, { schedule: '0 0 31 2 *' })))[0]!.loc).toEqual(['body', 'schedule']);
    expect((await detail422(await send('PATCH', `/runs/crons/${cron.cron_id}`, { on_run_completed: 'keep' })))[0]!.loc).toEqual(['body', 'on_run_completed']);
    expect((await client.crons.search({ threadId: thread.thread_id }))[0]!.schedule).toBe('30 2 * * *');
  });

  it('deletes a cron (then 404), and a thread takes its crons with it', async () => {
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 0 1 1 *' });
    const other = await client.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 0 2 1 *' });
    expect(await client.crons.delete(cron.cron_id)).toBeUndefined();
    expect((await client.crons.search({ threadId: thread.thread_id })).map((c) => c.cron_id)).toEqual([other.cron_id]);
    expect(await count('SELECT count(*) AS n FROM agent_server.crons WHERE cron_id = $1', [cron.cron_id])).toBe(0);
    expect(await statusOf(client.crons.delete(cron.cron_id))).toBe(404);
    expect((await send('DELETE', '/runs/crons/not-a-uuid', undefined)).status).toBe(422);
    await client.threads.delete(thread.thread_id);
    expect(await client.crons.count({ threadId: thread.thread_id })).toBe(0);
  });

  it('refuses an invalid schedule or body with 422, an unknown thread or assistant with 404, writing nothing', async () => {
    const thread = await client.threads.create();
    const rows = await cronRows();
    expect(await statusOf(client.crons.createForThread(thread.thread_id, 'agent', { schedule: '61 * * * *' }))).toBe(422);
    expect(await statusOf(client.crons.create('agent', { schedule: 'every day' }))).toBe(422);
    const bad = await detail422(await send('POST', '/runs/crons', { assistant_id: 'agent', schedule: '* * * * * *' }));
    expect(bad).toEqual([{ loc: ['body', 'schedule'], msg: expect.stringMatching(/5 fields/), type: 'value_error' }]);
    expect((await detail422(await send('POST', '/runs/crons', { assistant_id: 'agent' })))[0]!.loc).toEqual(['body', 'schedule']);
    expect((await detail422(await send('POST', '/runs/crons', { assistant_id: 'agent', schedule: '* * * * *', nope: 1 })))[0]!.type).toBe('extra_forbidden');
    expect((await detail422(await send('POST', `/threads/${thread.thread_id}/runs/crons`, { assistant_id: 'agent', schedule: '* * * * *', on_run_completed: 'keep' })))[0]!.loc).toEqual([
      'body',
      'on_run_completed',
    ]);
    // the graph's input schema, checked when the cron is made rather than at each firing
    expect((await detail422(await send('POST', '/runs/crons', { assistant_id: 'counter', schedule: '* * * * *', input: { count: 'x' } })))[0]!.loc).toEqual(['body', 'input', 'count']);
    expect((await send('POST', '/threads/not-a-uuid/runs/crons', { assistant_id: 'agent', schedule: '* * * * *' })).status).toBe(422);

    expect(await statusOf(client.crons.createForThread(MISSING, 'agent', { schedule: '* * * * *' }))).toBe(404);
    expect(await statusOf(client.crons.create(MISSING, { schedule: '* * * * *' }))).toBe(404);
    expect(await statusOf(client.crons.createForThread(thread.thread_id, 'no-such-graph', { schedule: '* * * * *' }))).toBe(404);
    expect(await cronRows()).toBe(rows);
  });
});

describe('the cron scheduler', () => {
  it('fires a due thread cron: a run with its input on the thread, next_run_date moved to the next matching minute', async () => {
    const thread = await client.threads.create();
    const cron = await client.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 0 1 1 *', input: user('from cron'), metadata: { via: 'cron' } });
    expect(cron.next_run_date).toBe(nextNewYear());
    await makeDue(cron.cron_id);
    const run = await waitFor('the cron run to succeed', async () => {
      const runs = await client.runs.list(thread.thread_id);
      return runs.length === 1 && runs[0]!.status === 'success' ? runs[0] : undefined;
    });
    expect(run).toMatchObject({ thread_id: thread.thread_id, assistant_id: cron.assistant_id, metadata: { via: 'cron' } });
    expect(contents((await client.threads.getState(thread.thread_id)).values)).toEqual(['human:from cron', 'ai:thought: from cron', 'ai:echo: from cron']);
    expect((await nextRunDate(cron.cron_id)).toISOString()).toBe(nextNewYear());
    expect((await client.crons.search({ threadId: thread.thread_id }))[0]!.next_run_date).toBe(nextNewYear());
    // fired once: the cron is not due again
    await sleep(500);
    expect(await client.runs.list(thread.thread_id)).toHaveLength(1);
  });

  it('fires a stateless cron kept on a new thread of its own', async () => {
    const assistantId = await newAssistant();
    const cron = await client.crons.create(assistantId, { schedule: '0 0 1 1 *', input: user('stateless'), onRunCompleted: 'keep' });
    await makeDue(cron.cron_id);
    const threadId = await waitFor('a run of the stateless cron', async () => {
      const r = await pg.query<{ thread_id: string }>(`SELECT thread_id FROM agent_server.runs WHERE assistant_id = $1 AND status = 'success'`, [assistantId]);
      return r.rows[0]?.thread_id;
    });
    const thread = await client.threads.get(threadId);
    expect(contents(thread.values)).toEqual(['human:stateless', 'ai:thought: stateless', 'ai:echo: stateless']);
    expect((await nextRunDate(cron.cron_id)).toISOString()).toBe(nextNewYear());
  });

  it('drops a stateless cron run’s thread once the run has ended (on_run_completed "delete")', async () => {
    const assistantId = await newAssistant();
    const cron = await client.crons.create(assistantId, { schedule: '0 0 1 1 *', input: user('sleep:600 bye') });
    await makeDue(cron.cron_id);
    const threadId = await waitFor('the stateless cron run to start', async () => {
      const r = await pg.query<{ thread_id: string }>(`SELECT thread_id FROM agent_server.runs WHERE assistant_id = $1`, [assistantId]);
      return r.rows[0]?.thread_id;
    });
    expect(await statusOf(client.threads.get(threadId))).toBe(404); // a stateless run's thread is never listed
    await waitFor('the thread to be dropped', async () => ((await count('SELECT count(*) AS n FROM agent_server.threads WHERE thread_id = $1', [threadId])) === 0 ? true : undefined));
    expect(await count('SELECT count(*) AS n FROM agent_server.runs WHERE assistant_id = $1', [assistantId])).toBe(0);
    expect((await nextRunDate(cron.cron_id)).toISOString()).toBe(nextNewYear());
  });

  it('does not fire a cron past its end_time, nor a disabled one', async () => {
    const thread = await client.threads.create();
    const ended = await client.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 0 1 1 *', input: user('too late') });
    await client.crons.update(ended.cron_id, { endTime: new Date(Date.now() - 60_000).toISOString() });
    const disabled = await client.crons.createForThread(thread.thread_id, 'agent', { schedule: '0 0 1 1 *', input: user('off'), enabled: false });
    await makeDue(ended.cron_id);
    await makeDue(disabled.cron_id);
    const due = [(await nextRunDate(ended.cron_id)).toISOString(), (await nextRunDate(disabled.cron_id)).toISOString()];
    // a live cron made due alongside them fires: the scheduler did run a round meanwhile
    const live = await client.crons.createForThread((await client.threads.create()).thread_id, 'agent', { schedule: '0 0 1 1 *', input: user('live') });
    await makeDue(live.cron_id);
    await waitFor('the live cron to fire', async () => ((await nextRunDate(live.cron_id)).toISOString() === nextNewYear() ? true : undefined));
    await sleep(300); // a few more rounds
    expect(await client.runs.list(thread.thread_id)).toEqual([]);
    expect([(await nextRunDate(ended.cron_id)).toISOString(), (await nextRunDate(disabled.cron_id)).toISOString()]).toEqual(due);
  });
});
