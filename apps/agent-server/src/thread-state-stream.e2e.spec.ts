import { Client } from '@langchain/langgraph-sdk';
import { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { contents, detail, MISSING, statusOf, user } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;

type Frame = { id?: string; event: string; data: unknown };
const patch = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const metadataRows = async (threadId: string) =>
  (await pg.query<{ checkpoint_id: string; metadata: unknown }>(`SELECT checkpoint_id, metadata FROM agent_server.checkpoints WHERE thread_id = $1 ORDER BY checkpoint_id`, [threadId])).rows;

/** Resolves once `ready()` holds, polling; fails after `ms`. */
async function until(ready: () => boolean, what: string, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ready()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Reads a thread stream through the published client in the background, until `stop()`. */
function follow(threadId: string, lastEventId?: string): { frames: Frame[]; stop(): Promise<void> } {
  const abort = new AbortController();
  const frames: Frame[] = [];
  const reading = (async () => {
    try {
      for await (const e of client.threads.joinStream(threadId, { lastEventId, signal: abort.signal })) frames.push(e as Frame);
    } catch (err) {
      if (!abort.signal.aborted) throw err;
    }
  })();
  return {
    frames,
    stop: async () => {
      abort.abort();
      await reading;
    },
  };
}

const runOf = (id: string | undefined) => id?.split(':')[0];

useAgentServer((f) => ({ server, client, pg } = f));

describe('PATCH /threads/{id}/state (client.threads.patchState)', () => {
  it("merges metadata into the latest checkpoint's metadata, as getState and getHistory show", async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'agent', { input: user('hi') });
    const before = await client.threads.getHistory(t.thread_id);
    const latest = before[0]!;
    expect(latest.metadata).toMatchObject({ source: 'loop' });

    await expect(client.threads.patchState(t.thread_id, { reviewed: true, reviewer: 'ana' })).resolves.toBeUndefined();
    let state = await client.threads.getState(t.thread_id);
    expect(state.checkpoint.checkpoint_id).toBe(latest.checkpoint.checkpoint_id);
    expect(state.metadata).toEqual({ ...latest.metadata, reviewed: true, reviewer: 'ana' });
    expect(state.values).toEqual(latest.values);

    // a second patch (the client's config form) merges over the first: later keys win, others stay
    await client.threads.patchState({ configurable: { thread_id: t.thread_id } }, { reviewer: 'bo' });
    state = await client.threads.getState(t.thread_id);
    expect(state.metadata).toEqual({ ...latest.metadata, reviewed: true, reviewer: 'bo' });

    const after = await client.threads.getHistory(t.thread_id);
    expect(after.map((s) => s.checkpoint.checkpoint_id)).toEqual(before.map((s) => s.checkpoint.checkpoint_id));
    expect(after[0]!.metadata).toMatchObject({ reviewed: true, reviewer: 'bo' });
    // only the latest checkpoint changed
    expect(after.slice(1).map((s) => s.metadata)).toEqual(before.slice(1).map((s) => s.metadata));
  });

  it('patches the checkpoint named in the body (the published client sends no checkpoint: a plain request does)', async () => {
    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'agent', { input: user('hi') });
    const before = await client.threads.getHistory(t.thread_id);
    const older = before[1]!;
    const r = await patch(`/threads/${t.thread_id}/state`, { metadata: { flagged: 'yes' }, checkpoint: { checkpoint_id: older.checkpoint.checkpoint_id } });
    expect(r.status).toBe(204);
    expect(await r.text()).toBe('');
    const after = await client.threads.getHistory(t.thread_id);
    expect(after[1]!.metadata).toEqual({ ...older.metadata, flagged: 'yes' });
    expect(after[0]!.metadata).toEqual(before[0]!.metadata);
    expect((await client.threads.getState(t.thread_id, older.checkpoint.checkpoint_id!)).metadata).toMatchObject({ flagged: 'yes' });

    const gone = await patch(`/threads/${t.thread_id}/state`, { metadata: { x: 1 }, checkpoint_id: '1f000000-0000-6000-8000-000000000000' });
    expect(gone.status).toBe(404);
  });

  it('answers 404 for an unknown thread and 422 with the detail shape for a bad body, writing nothing', async () => {
    expect(await statusOf(client.threads.patchState(MISSING, { a: 1 }))).toBe(404);

    const t = await client.threads.create();
    await client.runs.wait(t.thread_id, 'agent', { input: user('hi') });
    const rows = await metadataRows(t.thread_id);
    const bad = await patch(`/threads/${t.thread_id}/state`, { metadata: ['not', 'an', 'object'] });
    expect(bad.status).toBe(422);
    expect(await detail(bad)).toEqual([{ loc: ['body', 'metadata'], msg: expect.any(String), type: expect.any(String) }]);
    const missing = await patch(`/threads/${t.thread_id}/state`, {});
    expect(missing.status).toBe(422);
    expect((await detail(missing)).map((d) => d.loc)).toEqual([['body', 'metadata']]);
    // the published client, handed a string, is refused the same way
    expect(await statusOf(client.threads.patchState(t.thread_id, 'oops' as unknown as Record<string, unknown>))).toBe(422);
    expect(await metadataRows(t.thread_id)).toEqual(rows);
  });

  it('refuses a thread that has no checkpoint yet (409)', async () => {
    const t = await client.threads.create();
    expect(await statusOf(client.threads.patchState(t.thread_id, { a: 1 }))).toBe(409);
  });
});

describe('GET /threads/{id}/stream (client.threads.joinStream)', () => {
  it("streams the events of a run started after it connected, then of a later run, and resumes after a Last-Event-ID", async () => {
    const t = await client.threads.create();
    const live = follow(t.thread_id);
    try {
      // the client gives no sign of being connected before the first event: a pause, and a first run long
      // enough (1.5 s) that a late connection on a busy machine still finds it under way (and streams it
      // from its start)
      await new Promise((r) => setTimeout(r, 200));
      const first = await client.runs.create(t.thread_id, 'agent', { input: user('sleep:1500 one'), streamMode: ['values'] });
      await client.runs.join(t.thread_id, first.run_id);
      await until(() => live.frames.length >= 4, 'the first run on the thread stream');
      const second = await client.runs.create(t.thread_id, 'agent', { input: user('two'), streamMode: ['values'] });
      await client.runs.join(t.thread_id, second.run_id);
      await until(() => live.frames.length >= 8, 'the second run on the thread stream');

      expect(live.frames.map((f) => [f.event, f.id])).toEqual([
        ['metadata', `${first.run_id}:0`],
        ['values', `${first.run_id}:1`],
        ['values', `${first.run_id}:2`],
        ['values', `${first.run_id}:3`],
        ['metadata', `${second.run_id}:0`],
        ['values', `${second.run_id}:1`],
        ['values', `${second.run_id}:2`],
        ['values', `${second.run_id}:3`],
      ]);
      expect(live.frames[0]!.data).toEqual({ run_id: first.run_id, attempt: 1 });
      expect(contents(live.frames[3]!.data)).toEqual(['human:sleep:1500 one', 'ai:thought: one', 'ai:echo: one']);
      expect(contents(live.frames[7]!.data)).toEqual(['human:sleep:1500 one', 'ai:thought: one', 'ai:echo: one', 'human:two', 'ai:thought: two', 'ai:echo: two']);

      // resumed after the first run's second event: the rest of it, then the second run, each once
      const resumed = follow(t.thread_id, `${first.run_id}:2`);
      try {
        await until(() => resumed.frames.length >= 5, 'the resumed stream');
        await new Promise((r) => setTimeout(r, 300)); // nothing more comes: both runs have ended
        expect(resumed.frames.map((f) => f.id)).toEqual([`${first.run_id}:3`, `${second.run_id}:0`, `${second.run_id}:1`, `${second.run_id}:2`, `${second.run_id}:3`]);
        expect(resumed.frames.map((f) => f.data)).toEqual(live.frames.slice(3).map((f) => f.data));
      } finally {
        await resumed.stop();
      }

      // the live stream stays open between runs and keeps following the thread
      const third = await client.runs.create(t.thread_id, 'agent', { input: user('three'), streamMode: ['values'] });
      await client.runs.join(t.thread_id, third.run_id);
      await until(() => live.frames.length >= 12, 'the third run on the still open thread stream');
      expect(live.frames.slice(8).map((f) => runOf(f.id))).toEqual([third.run_id, third.run_id, third.run_id, third.run_id]);
    } finally {
      await live.stop();
    }
  });

  it('starts with the run already running when it connects, from that run\'s first event', async () => {
    const t = await client.threads.create();
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('sleep:1500 slow'), streamMode: ['values'] });
    let status = '';
    const end = Date.now() + 5_000;
    while (status !== 'running' && Date.now() < end) status = (await client.runs.get(t.thread_id, run.run_id)).status;
    expect(status).toBe('running');
    const live = follow(t.thread_id);
    try {
      await until(() => live.frames.length >= 4, 'the running run on the thread stream');
      expect(live.frames.map((f) => f.id)).toEqual([0, 1, 2, 3].map((n) => `${run.run_id}:${n}`));
    } finally {
      await live.stop();
    }
  });

  it('gives the end state of a run that kept no events', async () => {
    const t = await client.threads.create();
    const live = follow(t.thread_id);
    try {
      await new Promise((r) => setTimeout(r, 200)); // most likely connected before the run exists
      // 1.5 s long: a connection that comes late still finds it under way (a run that has ended is not replayed)
      const ended = await client.runs.wait(t.thread_id, 'agent', { input: user('sleep:1500 quiet') });
      await until(() => live.frames.length >= 2, 'the end state on the thread stream');
      const runId = live.frames[0]!.id!.split(':')[0]!;
      expect(live.frames.map((f) => [f.event, f.id])).toEqual([
        ['metadata', `${runId}:0`],
        ['values', `${runId}:1`],
      ]);
      expect(live.frames[1]!.data).toEqual(ended);
    } finally {
      await live.stop();
    }
  });

  it('answers 404 for an unknown thread and 422 for a stream mode or Last-Event-ID it does not serve', async () => {
    const drain = async (lastEventId?: string, streamMode?: 'lifecycle') => {
      for await (const e of client.threads.joinStream(MISSING, { lastEventId, streamMode })) void e;
    };
    expect(await statusOf(drain())).toBe(404);
    const t = await client.threads.create();
    const bad = await fetch(`${server.url}/threads/${t.thread_id}/stream?stream_mode=lifecycle`);
    expect(bad.status).toBe(422);
    expect((await detail(bad))[0]!.loc).toEqual(['query', 'stream_mode']);
    const badId = await fetch(`${server.url}/threads/${t.thread_id}/stream`, { headers: { 'Last-Event-ID': '7' } });
    expect(badId.status).toBe(422);
    expect((await detail(badId))[0]!.loc).toEqual(['header', 'last-event-id']);
  });
});
