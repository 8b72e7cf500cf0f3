import { randomUUID } from 'node:crypto';
import { Langsmith } from 'langsmith';
import { dottedSegment as seg } from '@th/ingest';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

/** The SDKs' generated (v2) REST client's routes and run sharing, through HTTP and through the JS generated client. */
describe('v2 REST: runs, traces, threads, sharing', () => {
  let svc: TestStandalone;
  let other: { key: string; tenant: string };
  let projectId: string;
  const roots: string[] = [];
  let child: string;
  const t0 = new Date(Date.now() - 60_000);
  const at = (s: number) => new Date(t0.getTime() + s * 1000).toISOString().replace('Z', '001Z');

  beforeAll(async () => {
    svc = await startTestStandalone();
    const ws = (await (await svc.api('/api/v1/workspaces', { method: 'POST', json: { name: 'Other tenant' } })).json()) as Json;
    const sk = (await (await svc.api('/api/v1/service-keys', { method: 'POST', json: { workspace_id: null, description: 'other' } })).json()) as Json;
    other = { key: sk.key as string, tenant: ws.id as string };
    projectId = ((await (await svc.api('/api/v1/sessions', { method: 'POST', json: { name: 'v2-proj' } })).json()) as Json).id as string;
    // Three traces: two turns of thread "conv-a" (by metadata thread_id; session_id null as the SDK sends it), one of "conv-b".
    const post: Json[] = [];
    const meta = [{ thread_id: 'conv-a', session_id: null }, { conversation_id: 'conv-b' }, { thread_id: 'conv-a' }];
    for (let i = 0; i < 3; i++) {
      const id = randomUUID();
      roots.push(id);
      post.push({ id, name: `root-${i}`, run_type: 'chain', start_time: at(i * 2), end_time: at(i * 2 + 1), trace_id: id, dotted_order: seg(at(i * 2), id), session_id: projectId, inputs: { q: i }, outputs: { a: i }, extra: { metadata: meta[i] } });
    }
    child = randomUUID();
    post.push({
      id: child, name: 'llm', run_type: 'llm', start_time: at(0.5), end_time: at(0.9), trace_id: roots[0], parent_run_id: roots[0],
      dotted_order: `${seg(at(0), roots[0])}.${seg(at(0.5), child)}`, session_id: projectId, inputs: {},
      outputs: { usage_metadata: { input_tokens: 7, output_tokens: 3, total_tokens: 10 } },
    });
    expect((await svc.api('/runs/batch', { method: 'POST', json: { post } })).status).toBe(202);
  });
  afterAll(async () => {
    await svc?.close();
  });

  const call = async (path: string, init: RequestInit & { json?: unknown } = {}, status = 200): Promise<Json> => {
    const res = await svc.api(path, init);
    const text = await res.text();
    if (res.status !== status) throw new Error(`${path}: expected ${status}, got ${res.status}: ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : null) as Json;
  };
  const asOther = (path: string, init: RequestInit & { json?: unknown } = {}) => svc.api(path, { ...init, headers: { 'x-api-key': other.key, 'x-tenant-id': other.tenant } });
  const post = (path: string, json: unknown, status = 200) => call(path, { method: 'POST', json }, status);

  it('queries runs with selects and pages them by cursor', async () => {
    const page = await post('/api/v2/runs/query', { project_ids: [projectId], is_root: true, selects: ['NAME', 'THREAD_ID', 'METADATA', 'PROJECT_ID'], page_size: 2 });
    expect(page.items).toEqual([
      { id: roots[2], name: 'root-2', thread_id: 'conv-a', metadata: { thread_id: 'conv-a' }, project_id: projectId },
      { id: roots[1], name: 'root-1', thread_id: 'conv-b', metadata: { conversation_id: 'conv-b' }, project_id: projectId },
    ]);
    const next = await post('/api/v2/runs/query', { project_ids: [projectId], is_root: true, page_size: 2, cursor: page.next_cursor });
    expect(next).toEqual({ items: [{ id: roots[0] }], next_cursor: '' });
    // Only the id without selects; the v1 query selects and filters thread_id too.
    const v1 = await post('/api/v1/runs/query', { session: [projectId], filter: 'eq(thread_id, "conv-a")', select: ['thread_id'] });
    expect((v1.runs as Json[]).map((r) => [r.id, r.thread_id])).toEqual([[roots[2], 'conv-a'], [roots[0], 'conv-a']]);
  });

  it('reads one run, its URL, a trace with its aggregates and runs', async () => {
    expect(await call(`/api/v2/runs/${child}?project_id=${projectId}&selects=TOTAL_TOKENS&selects=IS_ROOT`)).toEqual({ id: child, total_tokens: 10, is_root: false });
    const url = await call(`/api/v2/runs/${child}/url?project_id=${projectId}&trace_id=${roots[0]}`);
    expect(url.url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/o/[0-9a-f-]+/projects/p/${projectId}/r/${child}\\?trace_id=${roots[0]}$`));
    const traces = await post('/api/v2/traces/query', { project_id: projectId, trace_ids: [roots[0]], selects: ['NAME'] });
    expect(traces.items).toEqual([{ root_run: { id: roots[0], name: 'root-0' }, trace_aggregates: { total_tokens: 10 } }]);
    const runs = await call(`/api/v2/traces/${roots[0]}/runs?project_id=${projectId}&selects=NAME`);
    expect(runs.items).toEqual([{ id: roots[0], name: 'root-0' }, { id: child, name: 'llm' }]);
  });

  it('lists threads, a thread’s traces by turn and its stats', async () => {
    const threads = await post('/api/v2/threads/query', { project_id: projectId, page_size: 1 });
    expect(threads.items).toEqual([expect.objectContaining({ thread_id: 'conv-a', count: 2, first_trace_id: roots[0], last_trace_id: roots[2] })]);
    const rest = await post('/api/v2/threads/query', { project_id: projectId, page_size: 1, cursor: threads.next_cursor });
    expect(rest).toEqual({ items: [expect.objectContaining({ thread_id: 'conv-b', count: 1 })], next_cursor: '' });
    const turns = await call(`/api/v2/threads/conv-a/traces?project_id=${projectId}&selects=NAME&page_size=1`);
    expect(turns.items).toEqual([{ trace_id: roots[0], name: 'root-0', turn_number: 1 }]);
    const second = await call(`/api/v2/threads/conv-a/traces?project_id=${projectId}&selects=NAME&page_size=1&cursor=${turns.next_cursor as string}`);
    expect(second.items).toEqual([{ trace_id: roots[2], name: 'root-2', turn_number: 2 }]);
    expect(await call(`/api/v2/threads/conv-a/stats?session_id=${projectId}&selects=TURNS&selects=TOTAL_TOKENS`)).toEqual({ turns: 2, total_tokens: 0 });
    expect(await post('/api/v2/threads/stats', { project_id: projectId, select: ['THREAD_COUNT', 'TRACE_COUNT'] })).toEqual({ thread_count: 2, trace_count: 3 });
  });

  it('shares a run: public reads without a key, only what was shared, revoked at once', async () => {
    const share = await post(`/api/v2/runs/${child}/share`, { session_id: projectId, trace_id: roots[0] });
    const token = share.share_token as string;
    expect(await post(`/api/v2/runs/${child}/share`, { session_id: projectId, trace_id: roots[0] })).toEqual({ share_token: token });
    const pub = (path: string, init: RequestInit = {}) => fetch(`${svc.url}${path}`, init);
    const q = await pub(`/api/v2/public/${token}/runs/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ selects: ['NAME'] }) });
    expect(await q.json()).toEqual({ items: [{ id: roots[0], name: 'root-0' }, { id: child, name: 'llm' }] });
    expect(await (await pub(`/api/v2/public/${token}/run/${child}?selects=NAME`)).json()).toEqual({ id: child, name: 'llm' });
    // Another trace of the same project, a malformed and an unknown token: 404 alike.
    for (const path of [`/api/v2/public/${token}/run/${roots[1]}`, `/api/v2/public/not-a-token/run/${child}`, `/api/v2/public/${randomUUID()}/run/${child}`, `/public/${randomUUID()}/run`]) {
      expect((await pub(path)).status).toBe(404);
    }
    await call(`/api/v2/runs/${roots[0]}/share`, { method: 'DELETE', json: { session_id: projectId } }, 204);
    await call(`/api/v2/runs/${roots[0]}/share`, { method: 'DELETE', json: { session_id: projectId } }, 204);
    expect((await pub(`/api/v2/public/${token}/run/${child}`)).status).toBe(404);
  });

  it('classic sharing: share_run of a child reaches its subtree only; read and list shared runs', async () => {
    const shared = await call(`/runs/${child}/share`, { method: 'PUT', json: { run_id: child, share_token: randomUUID() } });
    expect(await call(`/runs/${child}/share`)).toEqual(shared);
    const token = shared.share_token as string;
    const run = (await (await fetch(`${svc.url}/public/${token}/run`)).json()) as Json;
    expect([run.id, run.name, run.tenant_id]).toEqual([child, 'llm', undefined]);
    expect((await fetch(`${svc.url}/public/${token}/run/${roots[0]}`)).status).toBe(404);
    const list = (await (await fetch(`${svc.url}/public/${token}/runs/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json()) as Json;
    expect((list.runs as Json[]).map((r) => r.id)).toEqual([child]);
    expect(await call(`/runs/${child}/share`, { method: 'DELETE' })).toEqual({});
    expect(await call(`/runs/${child}/share`)).toBeNull();
    expect((await fetch(`${svc.url}/public/${token}/run`)).status).toBe(404);
  });

  it('keeps tenants apart: another workspace sees other ids as free ones', async () => {
    expect((await asOther(`/api/v2/runs/${child}?project_id=${projectId}`)).status).toBe(404);
    const res = await svc.api(`/api/v2/runs/${child}/share`, { method: 'POST', headers: { 'x-api-key': other.key, 'x-tenant-id': other.tenant }, json: { session_id: projectId, trace_id: roots[0] } });
    expect(res.status).toBe(404);
    const q = await svc.api('/api/v2/runs/query', { method: 'POST', headers: { 'x-api-key': other.key, 'x-tenant-id': other.tenant }, json: { project_ids: [projectId] } });
    expect(await q.json()).toEqual({ items: [], next_cursor: '' });
    expect((await svc.api(`/runs/${child}/share`, { method: 'PUT', headers: { 'x-api-key': other.key, 'x-tenant-id': other.tenant }, json: {} })).status).toBe(404);
  });

  it('refuses bad input with 422 in the spec shape and writes nothing', async () => {
    const bad = async (path: string, init: RequestInit & { json?: unknown }, loc: (string | number)[]) => {
      const res = await svc.api(path, init);
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: { loc: unknown }[] }).detail[0].loc).toEqual(loc);
    };
    await bad('/api/v2/runs/query', { method: 'POST', json: {} }, ['body', 'project_ids']);
    await bad('/api/v2/runs/query', { method: 'POST', json: { project_ids: ['x'] } }, ['body', 'project_ids', 0]);
    await bad('/api/v2/runs/query', { method: 'POST', json: { project_ids: [projectId], selects: ['NOPE'] } }, ['body', 'selects', 0]);
    await bad('/api/v2/runs/query', { method: 'POST', json: { project_ids: [projectId], cursor: 'garbage' } }, ['body', 'cursor']);
    await bad('/api/v2/runs/query', { method: 'POST', json: { project_ids: [projectId], filter: 'eq(' } }, ['body', 'filter']);
    await bad(`/api/v2/runs/not-a-uuid?project_id=${projectId}`, {}, ['path', 'run_id']);
    await bad(`/api/v2/runs/${child}`, {}, ['query', 'project_id']);
    await bad('/api/v2/threads/query', { method: 'POST', json: { project_id: projectId, cursor: 'x' } }, ['body', 'cursor']);
    await bad(`/api/v2/threads/conv-a/stats?session_id=${projectId}`, {}, ['query', 'selects']);
    await bad(`/api/v2/runs/${child}/share`, { method: 'POST', json: { session_id: projectId } }, ['body', 'trace_id']);
    await bad(`/runs/${child}/share`, { method: 'PUT', json: { share_token: 'short' } }, ['body', 'share_token']);
    expect(await call(`/runs/${child}/share`)).toBeNull();
    expect((await fetch(`${svc.url}/api/v2/runs/query`, { method: 'POST', body: '{}' })).status).toBe(401);
  });

  it('the JS SDK’s generated client pages runs, traces and threads', async () => {
    const client = new Langsmith({ apiKey: svc.apiKey, baseURL: svc.url });
    const ids: string[] = [];
    for await (const run of client.runs.query({ project_ids: [projectId], page_size: 1 })) ids.push(String(run.id));
    expect(ids.sort()).toEqual([...roots, child].sort());
    const traces = await client.traces.query({ project_id: projectId, selects: ['NAME'] });
    expect(traces.items.map((t) => t.root_run?.name)).toEqual(['root-2', 'root-1', 'root-0']);
    const threads: string[] = [];
    for await (const t of client.threads.query({ project_id: projectId, page_size: 1 })) threads.push(String(t.thread_id));
    expect(threads).toEqual(['conv-a', 'conv-b']);
    const { share_token } = await client.runs.share.create(roots[1], { session_id: projectId, trace_id: roots[1] });
    expect((await client.public.runs.query(String(share_token), { selects: ['NAME'] })).items).toEqual([{ id: roots[1], name: 'root-1' }]);
  });

  it('thread feedback: FEEDBACK_STATS of a thread and THREAD_FEEDBACK_STATS of a project through the generated client; ai_search refused', async () => {
    const client = new Langsmith({ apiKey: svc.apiKey, baseURL: svc.url });
    // Feedback on a child run of conv-a's first trace and on conv-b's root.
    for (const [run_id, score] of [[child, 1], [roots[1], 0]] as const) expect((await svc.api('/feedback', { method: 'POST', json: { run_id, key: 'helpful', score } })).status).toBe(200);
    let stats: Json = {};
    for (let i = 0; i < 50; i++) {
      stats = (await client.threads.stats('conv-a', { session_id: projectId, selects: ['TURNS', 'FEEDBACK_STATS'] })) as unknown as Json;
      if (stats.feedback_stats && Object.keys(stats.feedback_stats).length > 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(stats).toEqual({ turns: 2, feedback_stats: { helpful: expect.objectContaining({ n: 1, avg: 1 }) } });
    // A thread without feedback answers an empty map, as a run without feedback would.
    expect(await client.threads.stats('conv-none', { session_id: projectId, selects: ['FEEDBACK_STATS'] })).toEqual({ feedback_stats: {} });
    const all = (await client.threads.aggregateStats({ project_id: projectId, select: ['THREAD_COUNT', 'THREAD_FEEDBACK_STATS'] })) as unknown as Json;
    expect(all).toEqual({ thread_count: 2, thread_feedback_stats: { helpful: expect.objectContaining({ n: 2, avg: 0.5 }) } });
    // Another workspace sees none of it.
    const foreign = await asOther(`/api/v2/threads/conv-a/stats?session_id=${projectId}&selects=FEEDBACK_STATS`);
    expect(await foreign.json()).toEqual({ feedback_stats: {} });

    await expect(client.runs.query({ project_ids: [projectId], ai_search: 'runs that failed' })).rejects.toMatchObject({ status: 422 });
    const res = await svc.api('/api/v2/runs/query', { method: 'POST', json: { project_ids: [projectId], ai_search: 'runs that failed' } });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: Json[] }).detail[0]).toEqual({ loc: ['body', 'ai_search'], msg: expect.stringMatching(/not supported/), type: expect.any(String) });
  });

  it('min_/max_feedback_modified_at bound the feedback conditions of runs and traces queries; without one they are a 422', async () => {
    const client = new Langsmith({ apiKey: svc.apiKey, baseURL: svc.url });
    expect((await svc.api('/feedback', { method: 'POST', json: { run_id: child, key: 'early', score: 1 } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1100));
    const before = new Date(Date.now() - 100).toISOString();
    expect((await svc.api('/feedback', { method: 'POST', json: { run_id: roots[2], key: 'fresh', score: 1 } })).status).toBe(200);
    const later = new Date(Date.now() + 60_000).toISOString();
    const traces = async (body: Json) => ((await post('/api/v2/traces/query', { project_id: projectId, min_start_time: at(-10), ...body })).items as { root_run: Json }[]).map((t) => t.root_run.id);
    for (let i = 0; i < 50 && (await traces({ trace_filter: 'eq(feedback_key, "fresh")' })).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await traces({ trace_filter: 'eq(feedback_key, "fresh")', min_feedback_modified_at: before })).toEqual([roots[2]]);
    expect(await traces({ trace_filter: 'eq(feedback_key, "fresh")', min_feedback_modified_at: later })).toEqual([]);
    expect(await traces({ trace_filter: 'eq(feedback_key, "fresh")', max_feedback_modified_at: before })).toEqual([]);
    // Older feedback (on the child of roots[0]) is out of a window that starts after it.
    expect(await traces({ tree_filter: 'eq(feedback_key, "early")' })).toEqual([roots[0]]);
    expect(await traces({ tree_filter: 'eq(feedback_key, "early")', min_feedback_modified_at: before })).toEqual([]);
    // The runs query through the generated client, with a feedback score condition.
    const runs = await client.runs.query({ project_ids: [projectId], filter: 'and(eq(feedback_key, "fresh"), eq(feedback_score, 1))', min_start_time: at(-10), min_feedback_modified_at: before, max_feedback_modified_at: later });
    expect(runs.items.map((r) => r.id)).toEqual([roots[2]]);
    // Bounds with no feedback condition to apply to, or not a timestamp: 422 in the spec's shape.
    for (const [body, field] of [
      [{ project_id: projectId, min_feedback_modified_at: before }, 'min_feedback_modified_at'],
      [{ project_id: projectId, trace_filter: 'eq(name, "root-1")', max_feedback_modified_at: later }, 'max_feedback_modified_at'],
      [{ project_id: projectId, trace_filter: 'eq(feedback_key, "fresh")', min_feedback_modified_at: 'yesterday' }, 'min_feedback_modified_at'],
    ] as const) {
      const res = await svc.api('/api/v2/traces/query', { method: 'POST', json: body });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: Json[] }).detail[0]).toEqual({ loc: ['body', field], msg: expect.any(String), type: expect.any(String) });
    }
    const res = await svc.api('/api/v2/runs/query', { method: 'POST', json: { project_ids: [projectId], filter: 'eq(name, "llm")', min_feedback_modified_at: before } });
    expect(res.status).toBe(422);
  });

  it('experiment runs through the generated client: filters per experiment, sort by feedback, comparative feedback; bad inputs 422', async () => {
    const client = new Langsmith({ apiKey: svc.apiKey, baseURL: svc.url });
    const dataset = await post('/api/v1/datasets', { name: `v2-ds-${randomUUID()}` });
    const dsId = String(dataset.id);
    const exIds: string[] = [randomUUID(), randomUUID(), randomUUID()];
    expect((await svc.api('/api/v1/examples/bulk', { method: 'POST', json: exIds.map((id, i) => ({ id, dataset_id: dsId, inputs: { q: i }, outputs: { a: i } })) })).status).toBe(200);
    const exps = [
      String((await post('/api/v1/sessions', { name: `exp-a-${randomUUID()}`, reference_dataset_id: dsId })).id),
      String((await post('/api/v1/sessions', { name: `exp-b-${randomUUID()}`, reference_dataset_id: dsId })).id),
    ];
    // Experiment A: example i's run is named "a-i", scores 0.2 / 0.9 / none; run on example 1 has an error.
    const runOf: Record<string, string> = {};
    const runs: Json[] = [];
    exps.forEach((session_id, e) =>
      exIds.forEach((ex, i) => {
        const id = randomUUID();
        runOf[`${e}-${i}`] = id;
        const start = at(10 + e * 5 + i);
        runs.push({ id, name: `${'ab'[e]}-${i}`, run_type: 'chain', start_time: start, end_time: start, trace_id: id, dotted_order: seg(start, id), session_id, reference_example_id: ex, inputs: { q: i }, outputs: { a: i }, ...(e === 0 && i === 1 ? { error: 'boom' } : {}) });
      }),
    );
    expect((await svc.api('/runs/batch', { method: 'POST', json: { post: runs } })).status).toBe(202);
    for (const [run, score] of [[runOf['0-0'], 0.2], [runOf['0-1'], 0.9]] as const) expect((await svc.api('/feedback', { method: 'POST', json: { run_id: run, key: 'correctness', score } })).status).toBe(200);
    const comparative = await post('/api/v1/datasets/comparative', { experiment_ids: exps, reference_dataset_id: dsId, name: 'a vs b' });
    const cmpId = String(comparative.id);
    expect((await svc.api('/feedback', { method: 'POST', json: { run_id: runOf['0-2'], key: 'preference', score: 1, comparative_experiment_id: cmpId } })).status).toBe(200);

    const collect = async (body: Parameters<typeof client.datasets.experimentRuns.query>[1]) => {
      const out: { id: string; runs: Json[] }[] = [];
      for await (const ex of client.datasets.experimentRuns.query(dsId, { page_size: 1, ...body })) out.push({ id: String(ex.id), runs: (ex.runs ?? []) as unknown as Json[] });
      return out;
    };
    // Wait until the runs and both feedback keys are queryable.
    for (let i = 0; i < 100; i++) {
      const sorted = await collect({ experiment_ids: [exps[0]], sort: { by: 'feedback.correctness' } });
      if (sorted.length === 3 && sorted[0].id === exIds[1]) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    // Unfiltered: every example (created together, so in no set order) with both experiments' runs, in the experiments' order.
    const all = await collect({ experiment_ids: exps, selects: ['NAME'] });
    expect(all.map((e) => e.id).sort()).toEqual([...exIds].sort());
    expect(all.find((e) => e.id === exIds[0])?.runs).toEqual([{ id: runOf['0-0'], name: 'a-0' }, { id: runOf['1-0'], name: 'b-0' }]);
    // Filters: only the examples whose run in experiment A matches every expression.
    expect((await collect({ experiment_ids: exps, filters: { [exps[0]]: ['eq(status, "error")'] } })).map((e) => e.id)).toEqual([exIds[1]]);
    expect((await collect({ experiment_ids: exps, filters: { [exps[0]]: ['neq(status, "error")', 'eq(name, "a-2")'] } })).map((e) => e.id)).toEqual([exIds[2]]);
    expect(await collect({ experiment_ids: exps, filters: { [exps[0]]: ['eq(name, "b-0")'] } })).toEqual([]);
    // Sort by feedback score, nulls last, both orders.
    expect((await collect({ experiment_ids: [exps[0]], sort: { by: 'feedback.correctness', order: 'DESC' } })).map((e) => e.id)).toEqual([exIds[1], exIds[0], exIds[2]]);
    expect((await collect({ experiment_ids: [exps[0]], sort: { by: 'correctness', order: 'asc' } })).map((e) => e.id)).toEqual([exIds[0], exIds[1], exIds[2]]);
    // Comparative: FEEDBACK_STATS holds that comparative experiment's pairwise feedback only.
    let cmp: { id: string; runs: Json[] }[] = [];
    for (let i = 0; i < 50; i++) {
      cmp = await collect({ experiment_ids: [exps[0]], comparative_experiment_id: cmpId, example_ids: [exIds[2], exIds[0]], selects: ['FEEDBACK_STATS'] });
      if (cmp.find((e) => e.id === exIds[2])?.runs[0]?.feedback_stats) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(cmp.sort((a, b) => exIds.indexOf(a.id) - exIds.indexOf(b.id))).toEqual([
      { id: exIds[0], runs: [{ id: runOf['0-0'], feedback_stats: null }] },
      { id: exIds[2], runs: [{ id: runOf['0-2'], feedback_stats: { preference: expect.objectContaining({ n: 1, avg: 1 }) } }] },
    ]);

    const bad = async (json: Json, loc: (string | number)[], status = 422) => {
      await expect(client.datasets.experimentRuns.query(dsId, json as never)).rejects.toMatchObject({ status });
      const res = await svc.api(`/api/v2/datasets/${dsId}/experiment-runs`, { method: 'POST', json });
      expect(res.status).toBe(status);
      if (status === 422) expect(((await res.json()) as { detail: { loc: unknown }[] }).detail[0].loc).toEqual(loc);
    };
    await bad({ experiment_ids: exps, filters: { [randomUUID()]: ['eq(name, "x")'] } }, ['body', 'filters', expect.any(String)]);
    await bad({ experiment_ids: exps, filters: { [exps[1]]: ['eq(name, "x")', 'eq('] } }, ['body', 'filters', exps[1], 1]);
    await bad({ experiment_ids: exps, filters: { [exps[1]]: [] } }, ['body', 'filters', exps[1]]);
    await bad({ experiment_ids: exps, sort: { by: 'correctness' } }, ['body', 'sort']);
    await bad({ experiment_ids: [exps[0]], sort: { by: 'correctness', order: 'sideways' } }, ['body', 'sort', 'order']);
    await bad({ experiment_ids: [exps[0]], sort: { order: 'ASC' } }, ['body', 'sort', 'by']);
    await bad({ experiment_ids: [exps[0]], comparative_experiment_id: 'nope' }, ['body', 'comparative_experiment_id']);
    await bad({ experiment_ids: [exps[0]], comparative_experiment_id: randomUUID() }, [], 404);
    // Another workspace sees neither the dataset nor the comparative experiment.
    expect((await asOther(`/api/v2/datasets/${dsId}/experiment-runs`, { method: 'POST', json: { experiment_ids: [exps[0]], comparative_experiment_id: cmpId } })).status).toBe(404);
  });

  it('include_subtree_usage: tokens summed over each run’s subtree, through the generated client, whatever the filters', async () => {
    const client = new Langsmith({ apiKey: svc.apiKey, baseURL: svc.url });
    // root → mid → (leaf1 5/1, leaf2 2/2); root → leaf3 1/0.
    const [root, mid, leaf1, leaf2, leaf3] = [randomUUID(), randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const d = (s: number, id: string) => seg(at(20 + s), id);
    const usage = (input_tokens: number, output_tokens: number) => ({ usage_metadata: { input_tokens, output_tokens, total_tokens: input_tokens + output_tokens } });
    const run = (id: string, parent: string | undefined, dotted: string, s: number, outputs: Json) => ({
      id, name: id === root ? 'sub-root' : 'sub', run_type: 'llm', start_time: at(20 + s), end_time: at(20 + s + 0.5), trace_id: root, parent_run_id: parent,
      dotted_order: dotted, session_id: projectId, inputs: {}, outputs,
    });
    const dr = d(0, root);
    const dm = `${dr}.${d(0.1, mid)}`;
    const post = [
      run(root, undefined, dr, 0, {}),
      run(mid, root, dm, 0.1, {}),
      run(leaf1, mid, `${dm}.${d(0.2, leaf1)}`, 0.2, usage(5, 1)),
      run(leaf2, mid, `${dm}.${d(0.3, leaf2)}`, 0.3, usage(2, 2)),
      run(leaf3, root, `${dr}.${d(0.4, leaf3)}`, 0.4, usage(1, 0)),
    ];
    expect((await svc.api('/runs/batch', { method: 'POST', json: { post } })).status).toBe(202);
    const selects = ['PROMPT_TOKENS', 'COMPLETION_TOKENS', 'TOTAL_TOKENS'] as const;
    const tokens = async (ids: string[], extra: Json = {}) => {
      const page = await client.runs.query({ project_ids: [projectId], ids, selects: [...selects], include_subtree_usage: true, ...extra });
      return Object.fromEntries(page.items.map((r) => [String(r.id), [r.prompt_tokens, r.completion_tokens, r.total_tokens]]));
    };
    let got: Record<string, unknown> = {};
    for (let i = 0; i < 50; i++) {
      got = await tokens([root, mid, leaf1, leaf2, leaf3]);
      if (Object.keys(got).length === 5) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(got).toEqual({ [root]: [8, 3, 11], [mid]: [7, 3, 10], [leaf1]: [5, 1, 6], [leaf2]: [2, 2, 4], [leaf3]: [1, 0, 1] });
    // Descendants count even when the query's filters leave them out; without the flag a run keeps its own figures.
    expect(await tokens([root, mid], { filter: 'eq(name, "sub-root")' })).toEqual({ [root]: [8, 3, 11] });
    expect(await tokens([mid], { is_root: false, min_start_time: at(20.15) })).toEqual({});
    expect(await tokens([mid], { is_root: false, min_start_time: at(20.05) })).toEqual({ [mid]: [7, 3, 10] });
    const plain = await client.runs.query({ project_ids: [projectId], ids: [root], selects: [...selects] });
    expect(plain.items).toEqual([{ id: root, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }]);
    // The earlier trace: its root gains its llm child's 7/3; another workspace sees nothing.
    expect(await tokens([roots[0]])).toEqual({ [roots[0]]: [7, 3, 10] });
    const foreign = await asOther('/api/v2/runs/query', { method: 'POST', json: { project_ids: [projectId], include_subtree_usage: true, selects: ['TOTAL_TOKENS'] } });
    expect(await foreign.json()).toEqual({ items: [], next_cursor: '' });

    await expect(client.runs.query({ project_ids: [projectId], include_subtree_usage: 'yes' as unknown as boolean })).rejects.toMatchObject({ status: 422 });
    const res = await svc.api('/api/v2/runs/query', { method: 'POST', json: { project_ids: [projectId], include_subtree_usage: 1 } });
    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: { loc: unknown }[] }).detail[0].loc).toEqual(['body', 'include_subtree_usage']);
  });

  it('thread stats *_DETAILS: the turns’ usage breakdowns summed per category, through the generated client', async () => {
    const client = new Langsmith({ apiKey: svc.apiKey, baseURL: svc.url });
    const usage = [
      { input_tokens: 10, output_tokens: 4, total_tokens: 14, input_token_details: { cache_read: 3, audio: 1 }, output_token_details: { reasoning: 2 }, input_cost_details: { cache_read: 0.5 } },
      { input_tokens: 5, output_tokens: 1, total_tokens: 6, input_token_details: { cache_read: 2 }, output_cost_details: { reasoning: 0.25 } },
    ];
    const post = usage.map((usage_metadata, i) => {
      const id = randomUUID();
      return { id, name: `turn-${i}`, run_type: 'llm', start_time: at(30 + i), end_time: at(30 + i + 0.5), trace_id: id, dotted_order: seg(at(30 + i), id), session_id: projectId, inputs: {}, outputs: { usage_metadata }, extra: { metadata: { thread_id: 'conv-d' } } };
    });
    expect((await svc.api('/runs/batch', { method: 'POST', json: { post } })).status).toBe(202);
    const selects = ['TURNS', 'PROMPT_TOKENS', 'PROMPT_TOKEN_DETAILS', 'COMPLETION_TOKEN_DETAILS', 'PROMPT_COST_DETAILS', 'COMPLETION_COST_DETAILS'] as const;
    let stats: Json = {};
    for (let i = 0; i < 50; i++) {
      stats = (await client.threads.stats('conv-d', { session_id: projectId, selects: [...selects] })) as unknown as Json;
      if (stats.turns === 2) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(stats).toEqual({
      turns: 2,
      prompt_tokens: 15,
      prompt_token_details: { raw: { cache_read: 5, audio: 1 } },
      completion_token_details: { raw: { reasoning: 2 } },
      prompt_cost_details: { raw: { cache_read: 0.5 } },
      completion_cost_details: { raw: { reasoning: 0.25 } },
    });
    // A filter narrows the turns summed; an unknown thread and another workspace sum nothing.
    expect(await client.threads.stats('conv-d', { session_id: projectId, selects: ['PROMPT_TOKEN_DETAILS'], filter: 'eq(name, "turn-1")' })).toEqual({ prompt_token_details: { raw: { cache_read: 2 } } });
    expect(await client.threads.stats('conv-none', { session_id: projectId, selects: ['COMPLETION_COST_DETAILS'] })).toEqual({ completion_cost_details: { raw: {} } });
    // The project's aggregate sums every thread's turns (conv-a and conv-b have no breakdowns).
    expect(await client.threads.aggregateStats({ project_id: projectId, select: ['THREAD_COUNT', 'PROMPT_TOKEN_DETAILS', 'COMPLETION_COST_DETAILS'] })).toEqual({
      thread_count: 3,
      prompt_token_details: { raw: { cache_read: 5, audio: 1 } },
      completion_cost_details: { raw: { reasoning: 0.25 } },
    });
    const foreign = await asOther(`/api/v2/threads/conv-d/stats?session_id=${projectId}&selects=PROMPT_TOKEN_DETAILS`);
    expect(await foreign.json()).toEqual({ prompt_token_details: { raw: {} } });
    const bad = await svc.api(`/api/v2/threads/conv-d/stats?session_id=${projectId}&selects=PROMPT_TOKEN_DETAIL`);
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: unknown }[] }).detail[0].loc).toEqual(['query', 'selects']);
  });
});
