import { Client } from '@langchain/langgraph-sdk';
import { startTestAgentServer, type TestAgentServer } from './testing/harness';
import { contents, type Msg, user } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;


/** Reads a raw SSE response into frames (bounded by the response's end). */
async function frames(res: Response): Promise<{ event: string; data: unknown; id?: string }[]> {
  const text = await res.text();
  return text
    .split('\n\n')
    .filter((b) => b.trim())
    .map((block) => {
      const f: { event: string; data: unknown; id?: string } = { event: '', data: null };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) f.event = line.slice(7);
        else if (line.startsWith('data: ')) f.data = JSON.parse(line.slice(6));
        else if (line.startsWith('id: ')) f.id = line.slice(4);
      }
      return f;
    });
}

beforeAll(async () => {
  server = await startTestAgentServer();
  client = new Client({ apiUrl: server.url, apiKey: null });
});

afterAll(async () => {
  await server?.stop();
  await server?.dropDatabase();
});

describe('streaming', () => {
  it('streams a thread run through the SDK: metadata first, then values and updates', async () => {
    const t = await client.threads.create();
    let created: { run_id: string; thread_id?: string } | undefined;
    const events: { event: string; data: unknown }[] = [];
    for await (const e of client.runs.stream(t.thread_id, 'agent', {
      input: user('hi'),
      streamMode: ['values', 'updates'],
      onRunCreated: (m) => {
        created = m;
      },
    })) {
      events.push(e);
    }
    expect(events[0]).toEqual({ event: 'metadata', data: { run_id: expect.any(String), attempt: 1 } });
    const runId = (events[0].data as { run_id: string }).run_id;
    expect(created).toMatchObject({ run_id: runId, thread_id: t.thread_id });
    expect(events.slice(1).map((e) => e.event)).toEqual(['values', 'updates', 'values', 'updates', 'values']);
    expect(events[2].data).toEqual({ think: { messages: [{ role: 'assistant', content: 'thought: hi' }] } });
    expect(contents(events[events.length - 1].data)).toEqual(['human:hi', 'ai:thought: hi', 'ai:echo: hi']);
    expect((await client.runs.get(t.thread_id, runId)).status).toBe('success');
  });

  it('joins a running run from the start and resumes after a Last-Event-ID', async () => {
    const t = await client.threads.create();
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('sleep:300 slow'), streamMode: ['updates', 'values'] });
    const live: { event: string; data: unknown; id?: string }[] = [];
    for await (const e of client.runs.joinStream(t.thread_id, run.run_id)) live.push(e);
    expect(live.map((e) => e.event)).toEqual(['metadata', 'values', 'updates', 'values', 'updates', 'values']);
    // resume: only what came after event 3
    const res = await fetch(`${server.url}/threads/${t.thread_id}/runs/${run.run_id}/stream`, { headers: { 'Last-Event-ID': '3' } });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const rest = await frames(res);
    expect(rest.map((f) => [f.event, f.id])).toEqual([
      ['updates', '4'],
      ['values', '5'],
    ]);
    const resumed: { event: string }[] = [];
    for await (const e of client.runs.joinStream(t.thread_id, run.run_id, { lastEventId: '4' })) resumed.push(e);
    expect(resumed.map((e) => e.event)).toEqual(['values']);
  });

  it('sets Content-Location and Location on a stream and ids on every event', async () => {
    const t = await client.threads.create();
    const res = await fetch(`${server.url}/threads/${t.thread_id}/runs/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'echo', input: user('x'), stream_mode: 'values' }),
    });
    expect(res.status).toBe(200);
    const loc = res.headers.get('content-location')!;
    expect(loc).toMatch(new RegExp(`^/threads/${t.thread_id}/runs/[0-9a-f-]{36}$`));
    expect(res.headers.get('location')).toBe(`${loc}/stream`);
    const fs = await frames(res);
    expect(fs[0].event).toBe('metadata');
    expect(fs.slice(1).map((f) => f.id)).toEqual(['1', '2']);
    expect(contents(fs[2].data)).toEqual(['human:x', 'ai:x']);
  });

  it('streams statelessly and reports a failure as an error event', async () => {
    const events: { event: string; data: unknown }[] = [];
    for await (const e of client.runs.stream(null, 'agent', { input: user('fail'), streamMode: 'updates' })) events.push(e);
    expect(events[0].event).toBe('metadata');
    expect(events[events.length - 1]).toMatchObject({ event: 'error', data: { error: 'Error', message: 'the graph failed on purpose' } });
    const ok: { event: string; data: unknown }[] = [];
    for await (const e of client.runs.stream(null, 'echo', { input: user('stateless') })) ok.push(e);
    expect(contents(ok[ok.length - 1].data)).toEqual(['human:stateless', 'ai:stateless']);
  });

  it('streams messages as [message, metadata] tuples', async () => {
    const t = await client.threads.create();
    const events: { event: string; data: unknown }[] = [];
    for await (const e of client.runs.stream(t.thread_id, 'echo', { input: user('m'), streamMode: 'messages-tuple' })) events.push(e);
    const msgs = events.filter((e) => e.event === 'messages');
    expect(msgs.length).toBeGreaterThan(0);
    const [message, meta] = msgs[msgs.length - 1].data as [Msg, Record<string, unknown>];
    expect(message).toMatchObject({ type: 'ai', content: 'm' });
    expect(meta).toMatchObject({ langgraph_node: 'echo' });
  });

  it('refuses an unknown stream mode and an unknown run', async () => {
    const t = await client.threads.create();
    const r = await fetch(`${server.url}/threads/${t.thread_id}/runs/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ assistant_id: 'echo', input: user('x'), stream_mode: 'telepathy' }),
    });
    expect(r.status).toBe(422);
    const missing = await fetch(`${server.url}/threads/${t.thread_id}/runs/00000000-0000-4000-8000-000000000000/stream`);
    expect(missing.status).toBe(404);
    expect(await client.runs.list(t.thread_id)).toHaveLength(0);
  });
});
