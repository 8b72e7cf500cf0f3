import { useAgentServer, type AgentServerFixture } from './testing/harness';

jest.setTimeout(60_000);

/**
 * POST /threads, POST /threads/{id}/runs and GET .../join are answered in front of Nest (fast-path.ts).
 * The same request with a query string goes through the full Nest/Express pipeline (which ignores the
 * query on these routes): both must answer alike, errors included.
 */
let f: AgentServerFixture;
useAgentServer((x) => (f = x));

interface Answer {
  status: number;
  type: string | null;
  location: string | null;
  body: unknown;
}

async function call(method: string, path: string, body?: string, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<Answer> {
  const r = await fetch(`${f.server.url}${path}`, { method, headers: body === undefined ? {} : headers, body });
  const text = await r.text();
  return { status: r.status, type: r.headers.get('content-type'), location: r.headers.get('content-location'), body: text === '' ? null : JSON.parse(text) };
}

/** The fast path's answer and the full pipeline's (same request plus `?via=nest`). */
async function both(method: string, path: string, body?: string, headers?: Record<string, string>): Promise<[Answer, Answer]> {
  return [await call(method, path, body, headers), await call(method, `${path}?via=nest`, body, headers)];
}

const user = (content: string) => ({ input: { messages: [{ role: 'user', content }] } });
const masked = (v: unknown): unknown => JSON.parse(JSON.stringify(v).replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID').replace(/"\d{4}-\d\d-\d\dT[^"]+"/g, '"TIME"'));

describe('fast path for the hot run routes', () => {
  it('creates threads and runs and joins them like the full pipeline, /api prefixes included', async () => {
    for (const prefix of ['', '/api', '/api/v1']) {
      const [t1, t2] = await both('POST', `${prefix}/threads`, JSON.stringify({ metadata: { k: prefix } }));
      expect(t1.status).toBe(200);
      expect(t1.type).toBe('application/json; charset=utf-8');
      expect([t2.status, t2.type]).toEqual([t1.status, t1.type]);
      expect(masked(t1.body)).toEqual(masked(t2.body));
      const [a, b] = [t1.body as { thread_id: string }, t2.body as { thread_id: string }];
      const r1 = await call('POST', `${prefix}/threads/${a.thread_id}/runs`, JSON.stringify({ assistant_id: 'echo', ...user('one') }));
      const r2 = await call('POST', `${prefix}/threads/${b.thread_id}/runs?via=nest`, JSON.stringify({ assistant_id: 'echo', ...user('one') }));
      expect(r1.status).toBe(200);
      expect(r1.type).toBe(r2.type);
      const run1 = r1.body as { run_id: string };
      expect(r1.location).toBe(`/threads/${a.thread_id}/runs/${run1.run_id}`);
      expect(masked(r1.location)).toEqual(masked(r2.location));
      expect(masked(r1.body)).toEqual(masked(r2.body));
      const j1 = await call('GET', `${prefix}/threads/${a.thread_id}/runs/${run1.run_id}/join`);
      const j2 = await call('GET', `${prefix}/threads/${a.thread_id}/runs/${run1.run_id}/join?via=nest`);
      expect(j1.status).toBe(200);
      expect(j1).toEqual(j2);
      expect((j1.body as { messages: { content: string }[] }).messages.map((m) => m.content)).toEqual(['one', 'one']);
    }
  });

  it('answers an empty body, and a body without content type, like the full pipeline', async () => {
    const [a, b] = await both('POST', '/threads');
    expect(a.status).toBe(200);
    expect(masked(a.body)).toEqual(masked(b.body));
    const [c, d] = await both('POST', '/threads', '{}', {});
    expect(c.status).toBe(200);
    expect(masked(c.body)).toEqual(masked(d.body));
  });

  it('refuses bad input with the same statuses and error shapes', async () => {
    const thread = (await call('POST', '/threads', '{}')).body as { thread_id: string };
    const cases: [string, string, string | undefined, number][] = [
      ['POST', '/threads', '{"metadata": ', 422], // JSON decode error at its position
      ['POST', '/threads', '{"metadata": 5}', 422],
      ['POST', '/threads', '[1]', 422],
      ['POST', `/threads/${thread.thread_id}/runs`, '{"assistant_id": "nope"}', 404],
      ['POST', `/threads/${thread.thread_id}/runs`, '{"input": 1}', 422],
      ['POST', `/threads/${thread.thread_id}/runs`, 'not json', 422],
      ['POST', `/threads/${thread.thread_id}/runs`, `{"assistant_id": "echo", "input": ${'['.repeat(5_000)}${']'.repeat(5_000)}}`, 422], // json_too_deep
      ['POST', '/threads/not-a-uuid/runs', '{"assistant_id": "echo"}', 422],
      ['POST', '/threads/00000000-0000-4000-8000-000000000000/runs', '{"assistant_id": "echo"}', 404],
      ['GET', `/threads/${thread.thread_id}/runs/00000000-0000-4000-8000-000000000000/join`, undefined, 404],
      ['GET', `/threads/${thread.thread_id}/runs/not-a-uuid/join`, undefined, 422],
    ];
    for (const [method, path, body, status] of cases) {
      const [fast, nest] = await both(method, path, body);
      expect([path, body, fast.status]).toEqual([path, body, status]);
      expect(fast).toEqual(nest);
    }
    const bad = (await call('POST', '/threads', '{"metadata": ')).body as { detail: { loc: unknown[]; type: string }[] };
    expect(bad.detail[0]!.type).toBe('json_invalid');
    expect(bad.detail[0]!.loc[0]).toBe('body');
  });

  it('leaves other methods and paths to the full pipeline', async () => {
    const thread = (await call('POST', '/threads', '{}')).body as { thread_id: string };
    expect((await call('GET', `/threads/${thread.thread_id}`)).status).toBe(200);
    expect((await call('GET', `/threads/${thread.thread_id}/runs`)).body).toEqual([]);
    expect((await call('PUT', '/threads', '{}')).status).toBe(404);
  });
});
