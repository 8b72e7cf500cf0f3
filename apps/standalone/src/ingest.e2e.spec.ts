import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { multipartBody } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';
import { dottedSegment as seg } from '@th/ingest';

type Json = Record<string, unknown>;


describe('ingest: every write path, through HTTP to ClickHouse and back', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone();
  });
  afterAll(async () => {
    await svc?.close();
  });

  async function getRun(id: string): Promise<Json> {
    const res = await svc.api(`/runs/${id}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Json;
  }

  it('batch: posts and patches in one request merge into one run per id', async () => {
    const root = randomUUID();
    const child = randomUUID();
    const t0 = '2026-11-22T04:04:29.623001Z';
    const t1 = '2026-11-22T04:04:29.650002Z';
    const rootOrder = seg(t0, root);
    const childOrder = `${rootOrder}.${seg(t1, child)}`;
    const res = await svc.api('/api/v1/runs/batch', {
      method: 'POST',
      json: {
        post: [
          { id: root, name: 'agent', run_type: 'chain', start_time: t0, trace_id: root, dotted_order: rootOrder, inputs: { q: 1 }, session_name: 'batch-proj' },
          { id: child, name: 'llm', run_type: 'llm', start_time: t1, trace_id: root, parent_run_id: root, dotted_order: childOrder, inputs: { p: 'x' }, session_name: 'batch-proj' },
        ],
        patch: [
          {
            id: child,
            trace_id: root,
            dotted_order: childOrder,
            end_time: Date.parse('2026-11-22T04:04:30.650Z'),
            outputs: { text: 'y', usage_metadata: { input_tokens: 10, output_tokens: 5 } },
            events: [{ name: 'new_token', time: '2026-11-22T04:04:29.950000Z' }],
          },
        ],
      },
    });
    expect(res.status).toBe(202);
    const c = await getRun(child);
    expect(c).toMatchObject({
      id: child,
      trace_id: root,
      parent_run_id: root,
      parent_run_ids: [root],
      is_root: false,
      status: 'success',
      inputs: { p: 'x' },
      outputs: { text: 'y', usage_metadata: { input_tokens: 10, output_tokens: 5 } },
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
      end_time: '2026-11-22T04:04:30.650000Z',
      first_token_time: '2026-11-22T04:04:29.950000Z',
      dotted_order: childOrder,
    });
    const r = await getRun(root);
    expect(r).toMatchObject({ is_root: true, status: 'pending', parent_run_ids: [], session_id: c.session_id });
  });

  it('a PATCH that arrives before its POST, and twice, gives the same run as the normal order', async () => {
    const a = randomUUID();
    const b = randomUUID();
    const t0 = '2026-11-22T05:00:00.000001Z';
    const post = (id: string) => ({ id, name: 'n', run_type: 'tool', start_time: t0, dotted_order: seg(t0, id), trace_id: id, inputs: { x: 1 }, session_name: 'order-proj' });
    const patch = (id: string) => ({ trace_id: id, dotted_order: seg(t0, id), end_time: '2026-11-22T05:00:01Z', outputs: { y: 2 }, error: 'boom', session_name: 'order-proj' });
    // normal order for a; reversed and duplicated for b, each in its own request
    expect((await svc.api('/runs', { method: 'POST', json: post(a) })).status).toBe(202);
    expect((await svc.api(`/runs/${a}`, { method: 'PATCH', json: patch(a) })).status).toBe(202);
    expect((await svc.api(`/runs/${b}`, { method: 'PATCH', json: patch(b) })).status).toBe(202);
    expect((await svc.api(`/runs/${b}`, { method: 'PATCH', json: patch(b) })).status).toBe(202);
    expect((await svc.api('/runs', { method: 'POST', json: post(b) })).status).toBe(202);
    expect((await svc.api('/runs', { method: 'POST', json: post(b) })).status).toBe(202);
    const ra = await getRun(a);
    const rb = await getRun(b);
    const strip = (r: Json) => ({ ...r, id: undefined, trace_id: undefined, dotted_order: undefined, app_path: undefined });
    expect(strip(rb)).toEqual(strip(ra));
    expect(ra).toMatchObject({ status: 'error', error: 'boom', inputs: { x: 1 }, outputs: { y: 2 } });
    const listed = await svc.api('/runs/query', { method: 'POST', json: { id: [b] } });
    expect(((await listed.json()) as { runs: Json[] }).runs).toHaveLength(1);
  });

  it('bare POST /runs without trace_id or dotted_order computes them from the parent', async () => {
    const parent = randomUUID();
    const child = randomUUID();
    expect((await svc.api('/runs', { method: 'POST', json: { id: parent, name: 'p', run_type: 'chain', inputs: {} } })).status).toBe(202);
    expect((await svc.api('/runs', { method: 'POST', json: { id: child, name: 'c', run_type: 'llm', parent_run_id: parent } })).status).toBe(202);
    const p = await getRun(parent);
    const c = await getRun(child);
    expect(c.trace_id).toBe(parent);
    expect(String(c.dotted_order).startsWith(`${String(p.dotted_order)}.`)).toBe(true);
    expect(String(c.dotted_order).endsWith(child)).toBe(true);
    expect(c.parent_run_ids).toEqual([parent]);
  });

  it('multipart: split parts, attachments, gzip and zstd bodies, chunked upload', async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { init, compress } = require('@bokuweb/zstd-wasm') as typeof import('@bokuweb/zstd-wasm');
    await init();
    for (const encoding of ['identity', 'gzip', 'zstd'] as const) {
      const id = randomUUID();
      const t0 = '2026-11-22T06:00:00.100001Z';
      const order = seg(t0, id);
      const mp = multipartBody([
        { name: `post.${id}`, data: { id, name: `mp-${encoding}`, run_type: 'llm', start_time: t0, trace_id: id, dotted_order: order, session_name: 'mp-proj' } },
        { name: `post.${id}.inputs`, data: { messages: [{ role: 'user', content: 'hi' }] } },
        { name: `post.${id}.extra`, data: { metadata: { ls_provider: 'openai', env: 'test' } } },
        { name: `attachment.${id}.image`, contentType: 'image/png; length=4', data: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
        { name: `patch.${id}`, data: { id, trace_id: id, dotted_order: order, end_time: 1795320269670 } },
        { name: `patch.${id}.outputs`, data: { answer: 42 } },
      ]);
      const body = encoding === 'gzip' ? gzipSync(mp.body) : encoding === 'zstd' ? Buffer.from(compress(mp.body, 1)) : mp.body;
      const headers: Record<string, string> = { 'content-type': mp.contentType };
      if (encoding !== 'identity') headers['content-encoding'] = encoding;
      // a ReadableStream body makes fetch send Transfer-Encoding: chunked, like the SDK
      const stream = new ReadableStream({
        start(ctrl) {
          ctrl.enqueue(new Uint8Array(body.subarray(0, 10)));
          ctrl.enqueue(new Uint8Array(body.subarray(10)));
          ctrl.close();
        },
      });
      const res = await svc.api('/runs/multipart', { method: 'POST', headers, body: stream, duplex: 'half' } as RequestInit);
      expect(res.status).toBe(202);
      const run = await getRun(id);
      expect(run).toMatchObject({
        name: `mp-${encoding}`,
        inputs: { messages: [{ role: 'user', content: 'hi' }] },
        outputs: { answer: 42 },
        extra: { metadata: { ls_provider: 'openai', env: 'test' } },
        status: 'success',
        s3_urls: { 'attachment.image': { presigned_url: expect.stringMatching(/^\/public\/run-attachments\//), mime_type: 'image/png' } },
      });
      expect(run).not.toHaveProperty('attachments');
      // The SDKs download it without an API key, from the signed URL.
      const url = (run.s3_urls as Record<string, { presigned_url: string }>)['attachment.image'].presigned_url;
      const file = await fetch(`${svc.url}${url}`);
      expect(file.status).toBe(200);
      expect(file.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await file.arrayBuffer())).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      // list_runs answers the same URLs
      const listed = (await (await svc.api('/runs/query', { method: 'POST', json: { id: [id] } })).json()) as { runs: Json[] };
      expect(Object.keys(listed.runs[0].s3_urls as Json)).toEqual(['attachment.image']);
      // ...whatever the select (the Python SDK's list_runs selects fields without them)
      const selected = (await (await svc.api('/runs/query', { method: 'POST', json: { id: [id], select: ['name', 'outputs'] } })).json()) as { runs: Json[] };
      expect(Object.keys(selected.runs[0].s3_urls as Json)).toEqual(['attachment.image']);
      // A changed signature, another run or an expired URL is refused.
      const tampered = url.replace(/signature=./, (m) => `signature=${m.endsWith('A') ? 'B' : 'A'}`);
      expect((await fetch(`${svc.url}${tampered}`)).status).toBe(403);
      expect((await fetch(`${svc.url}${url.replace(id, randomUUID())}`)).status).toBe(403);
      expect((await fetch(`${svc.url}${url.replace(/expires=\d+/, 'expires=1000')}`)).status).toBe(403);
      expect((await fetch(`${svc.url}${url.replace(/expires=\d+/, 'expires=soon')}`)).status).toBe(422);
    }
  });

  it('rejects bad input with the spec shapes and writes nothing', async () => {
    const id = randomUUID();
    const bad = async (path: string, init: RequestInit & { json?: unknown }, status: number) => {
      const res = await svc.api(path, init);
      expect(res.status).toBe(status);
      return (await res.json()) as { detail: unknown };
    };
    // invalid JSON
    const j = await bad('/runs', { method: 'POST', body: '{"id": ', headers: { 'content-type': 'application/json' } }, 422);
    expect(j.detail).toEqual([expect.objectContaining({ loc: ['body', expect.any(Number)], type: 'json_invalid' })]);
    // wrong types and missing fields
    const w = await bad('/runs', { method: 'POST', json: { id, name: 5, inputs: 'x' } }, 422);
    const locs = (w.detail as { loc: unknown[] }[]).map((d) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.name', 'body.run_type', 'body.inputs']));
    // a run_type outside the published API's (the Python SDK's test expects this 422), also in multipart
    const t = await bad('/runs', { method: 'POST', json: { id, name: 'x', run_type: 'agent' } }, 422);
    expect((t.detail as { loc: unknown[] }[]).map((d) => d.loc.join('.'))).toEqual(['body.run_type']);
    const mpAgent = multipartBody([{ name: `post.${id}`, data: { id, name: 'x', run_type: 'agent', session_name: 'mp-proj' } }]);
    await bad('/runs/multipart', { method: 'POST', body: mpAgent.body, headers: { 'content-type': mpAgent.contentType } }, 422);
    expect((await svc.api(`/runs/${id}`)).status).toBe(404);
    // a batch with one bad item writes none of it
    const good = randomUUID();
    const b = await bad(
      '/runs/batch',
      { method: 'POST', json: { post: [{ id: good, name: 'ok', run_type: 'chain', session_name: 'never-created' }, { id, name: 'bad', run_type: 'chain', start_time: 'yesterday' }] } },
      422,
    );
    expect((b.detail as { loc: unknown[] }[])[0].loc).toEqual(['body', 'post', 1, 'start_time']);
    expect((await svc.api(`/runs/${good}`)).status).toBe(404);
    const projects = (await (await svc.api('/sessions?name=never-created')).json()) as unknown[];
    expect(projects).toEqual([]);
    // a dotted_order that does not end with the run id
    const d = await bad('/runs/batch', { method: 'POST', json: { post: [{ id, name: 'x', run_type: 'chain', dotted_order: seg('2026-11-22T00:00:00.000001Z', good) }] } }, 422);
    expect((d.detail as { loc: unknown[] }[])[0].loc).toEqual(['body', 'post', 0, 'dotted_order']);
    // a malformed multipart body
    const mp = await bad('/runs/multipart', { method: 'POST', body: '--x\r\nbroken', headers: { 'content-type': 'multipart/form-data; boundary=x' } }, 422);
    expect(Array.isArray(mp.detail)).toBe(true);
    // a multipart part with a broken field
    const parts = multipartBody([{ name: `post.${id}`, data: { id, name: 'x', run_type: 7 } }]);
    const pf = await bad('/runs/multipart', { method: 'POST', body: parts.body, headers: { 'content-type': parts.contentType } }, 422);
    expect((pf.detail as { loc: unknown[] }[])[0].loc).toEqual(['body', `post.${id}`, 'run_type']);
    // path parameter that is not a UUID
    const p = await bad('/runs/not-a-uuid', { method: 'PATCH', json: {} }, 422);
    expect((p.detail as { loc: unknown[] }[])[0].loc).toEqual(['path', 'run_id']);
    // unknown project id
    const u = await bad('/runs', { method: 'POST', json: { id, name: 'x', run_type: 'chain', session_id: randomUUID() } }, 422);
    expect((u.detail as { loc: unknown[] }[])[0].loc).toEqual(['body', 'post', 0, 'session_id']);
    expect((await svc.api(`/runs/${id}`)).status).toBe(404);
  });

  it('answers 413 for a body over the limit and 401 without a valid key', async () => {
    const big = 'x'.repeat(26 * 1024 * 1024);
    const res = await svc.api('/runs', { method: 'POST', body: big, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(413);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/limit/);
    const gz = gzipSync(Buffer.from(JSON.stringify({ id: randomUUID(), name: 'a', run_type: 'chain', inputs: { pad: 'y'.repeat(27 * 1024 * 1024) } })));
    const res2 = await svc.api('/runs', { method: 'POST', body: gz, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
    expect(res2.status).toBe(413);
    const noKey = await fetch(`${svc.url}/runs`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(noKey.status).toBe(401);
    const wrongKey = await fetch(`${svc.url}/runs/query`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'x-api-key': 'th_nope' } });
    expect(wrongKey.status).toBe(401);
    expect(await wrongKey.json()).toEqual({ detail: expect.any(String) });
  });
});
