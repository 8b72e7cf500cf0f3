import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_SERVICE_VERSION } from '@th/config';
import { IdentityService, buildOpenApiDocument } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';
import { dottedSegment as seg } from '@th/ingest';

type Json = Record<string, unknown>;


describe('query: runs, stats and projects through HTTP', () => {
  let svc: TestStandalone;
  let projectId: string;
  const traceIds: string[] = [];
  const childIds: string[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone();
    const created = await svc.api('/api/v1/sessions', { method: 'POST', json: { name: 'q-proj', description: 'for queries' } });
    expect(created.status).toBe(200);
    projectId = ((await created.json()) as Json).id as string;
    // 5 traces of one root + one llm child; the 3rd errors; tags and metadata differ
    const post: Json[] = [];
    for (let i = 0; i < 5; i++) {
      const root = randomUUID();
      const child = randomUUID();
      traceIds.push(root);
      childIds.push(child);
      const t = `2026-11-20T10:0${i}:00.000001Z`;
      const tc = `2026-11-20T10:0${i}:00.500001Z`;
      const end = `2026-11-20T10:0${i}:0${i + 1}.000001Z`;
      post.push({
        id: root,
        name: `root-${i}`,
        run_type: 'chain',
        start_time: t,
        end_time: end,
        trace_id: root,
        dotted_order: seg(t, root),
        session_id: projectId,
        inputs: { question: `q${i}` },
        outputs: { answer: `a${i}` },
        error: i === 2 ? 'failed hard' : undefined,
        tags: i % 2 === 0 ? ['even', 'all'] : ['odd', 'all'],
        extra: { metadata: { user: `u${i % 2}`, idx: i } },
      });
      post.push({
        id: child,
        name: 'ChatModel',
        run_type: 'llm',
        start_time: tc,
        end_time: end,
        trace_id: root,
        parent_run_id: root,
        dotted_order: `${seg(t, root)}.${seg(tc, child)}`,
        session_id: projectId,
        inputs: {},
        outputs: { usage_metadata: { input_tokens: 10 * (i + 1), output_tokens: i + 1, input_cost: 0.001, output_cost: 0.002 } },
        events: [{ name: 'new_token', time: `2026-11-20T10:0${i}:00.700001Z` }],
      });
    }
    expect((await svc.api('/runs/batch', { method: 'POST', json: { post } })).status).toBe(202);
  });
  afterAll(async () => {
    await svc?.close();
  });

  const query = async (body: Json): Promise<{ runs: Json[]; cursors: { next: string | null } }> => {
    const res = await svc.api('/api/v1/runs/query', { method: 'POST', json: body });
    expect(res.status).toBe(200);
    return (await res.json()) as { runs: Json[]; cursors: { next: string | null } };
  };

  it('filters by project, root, run type, error, trace, parent, ids, time and tags', async () => {
    expect((await query({ session: [projectId] })).runs).toHaveLength(10);
    const roots = await query({ session: [projectId], is_root: true });
    expect(roots.runs.map((r) => r.name)).toEqual(['root-4', 'root-3', 'root-2', 'root-1', 'root-0']);
    expect((await query({ session: [projectId], run_type: 'llm' })).runs).toHaveLength(5);
    expect((await query({ session: [projectId], error: true })).runs.map((r) => r.name)).toEqual(['root-2']);
    expect((await query({ session: [projectId], error: false })).runs).toHaveLength(9);
    expect((await query({ trace: traceIds[1] })).runs.map((r) => r.id).sort()).toEqual([traceIds[1], childIds[1]].sort());
    expect((await query({ parent_run: traceIds[3] })).runs.map((r) => r.id)).toEqual([childIds[3]]);
    expect((await query({ id: [childIds[0], traceIds[4]] })).runs).toHaveLength(2);
    const timed = await query({ session: [projectId], is_root: true, start_time: '2026-11-20T10:02:00Z', end_time: '2026-11-20T10:04:00Z' });
    expect(timed.runs.map((r) => r.name)).toEqual(['root-3', 'root-2']);
    expect((await query({ session: [projectId], tags: ['even'] })).runs.map((r) => r.name)).toEqual(['root-4', 'root-2', 'root-0']);
    expect((await query({ session: [projectId], metadata: { user: 'u1' } })).runs.map((r) => r.name)).toEqual(['root-3', 'root-1']);
  });

  it('runs named by id: in order, with the other conditions, paged, newest versions only, nothing unknown', async () => {
    const named = [traceIds[0], childIds[1], traceIds[2], childIds[3], traceIds[4]];
    const all = await query({ id: [...named, randomUUID()] });
    // newest first by start time, the unknown id ignored
    expect(all.runs.map((r) => r.id)).toEqual([traceIds[4], childIds[3], traceIds[2], childIds[1], traceIds[0]]);
    expect(all.runs[0]).toMatchObject({ name: 'root-4', status: 'success', inputs: { question: 'q4' }, outputs: { answer: 'a4' } });
    // ids with other conditions, and an order
    expect((await query({ id: named, run_type: 'llm', order: 'asc' })).runs.map((r) => r.id)).toEqual([childIds[1], childIds[3]]);
    expect((await query({ id: named, filter: 'eq(error, "failed hard")' })).runs.map((r) => r.id)).toEqual([traceIds[2]]);
    // paged with the cursor
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 5; i++) {
      const page = await query({ id: named, limit: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...page.runs.map((r) => r.id as string));
      cursor = page.cursors.next;
      if (!cursor) break;
    }
    expect(seen).toEqual(all.runs.map((r) => r.id));
    // a patched run is listed once, as its newest version
    const id = randomUUID();
    const t = '2026-11-20T12:00:00.000001Z';
    const order = seg(t, id);
    expect((await svc.api('/runs', { method: 'POST', json: { id, name: 'named', run_type: 'tool', start_time: t, trace_id: id, dotted_order: order, session_name: 'named-runs' } })).status).toBe(202);
    // The Python SDK's update_run sends name: null and run_type: null: nulls mean no change.
    const patch = { trace_id: id, dotted_order: order, end_time: '2026-11-20T12:00:01.000001Z', outputs: { v: 2 }, name: null, run_type: null, start_time: null };
    expect((await svc.api(`/runs/${id}`, { method: 'PATCH', json: patch })).status).toBe(202);
    const patched = await query({ id: [id], select: ['status', 'outputs'] });
    expect(patched.runs).toEqual([{ id, name: 'named', run_type: 'tool', start_time: t, trace_id: id, status: 'success', outputs: { v: 2 } }]);
    // unknown ids only: an empty page
    expect(await query({ id: [randomUUID(), randomUUID()] })).toEqual({ runs: [], cursors: { next: null, prev: null } });
    // more ids than are located first: the general path answers the same
    const many = await query({ id: [...named, ...Array.from({ length: 1_000 }, () => randomUUID())] });
    expect(many.runs.map((r) => r.id)).toEqual(all.runs.map((r) => r.id));
    // an id that is not a UUID: 422 naming it, nothing read
    const bad = await svc.api('/runs/query', { method: 'POST', json: { id: [traceIds[0], 'not-a-uuid'] } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc)).toEqual([['body', 'id', 1]]);
  });

  it('lists only the newest version of each run, even before ClickHouse merges old versions away', async () => {
    const id = randomUUID();
    const t = '2026-11-20T11:00:00.000001Z';
    const post = { id, name: 'versioned', run_type: 'chain', start_time: t, trace_id: id, dotted_order: seg(t, id), session_name: 'versions' };
    expect((await svc.api('/runs', { method: 'POST', json: post })).status).toBe(202);
    const pid = ((await (await svc.api('/sessions?name=versions')).json()) as Json[])[0].id as string;
    expect((await query({ session: [pid], filter: 'eq(status, "pending")' })).runs.map((r) => r.id)).toEqual([id]);
    const patch = { trace_id: id, dotted_order: seg(t, id), end_time: '2026-11-20T11:00:02.000001Z', outputs: { done: true } };
    expect((await svc.api(`/runs/${id}`, { method: 'PATCH', json: patch })).status).toBe(202);
    expect((await query({ session: [pid], filter: 'eq(status, "pending")' })).runs.map((r) => r.id)).toEqual([]);
    const done = await query({ session: [pid] });
    expect(done.runs).toHaveLength(1);
    expect(done.runs[0]).toMatchObject({ id, status: 'success', outputs: { done: true } });
    expect((await (await svc.api('/runs/stats', { method: 'POST', json: { session: [pid] } })).json()) as Json).toMatchObject({ run_count: 1 });
  });

  it('GET /runs/{id} of a run that moved to another sorting key answers its row under the new key', async () => {
    const id = randomUUID();
    const t = '2026-11-19T08:00:00.000001Z';
    // The PATCH comes first, without a start time: the run is stored under the time it was received,
    // then its POST moves it to its own start time (the old key keeps a delete marker).
    expect((await svc.api(`/runs/${id}`, { method: 'PATCH', json: { end_time: '2026-11-19T08:00:03.000001Z', outputs: { moved: true }, session_name: 'moves' } })).status).toBe(202);
    const before = (await (await svc.api(`/runs/${id}`)).json()) as Json;
    expect(before.start_time).not.toBe(t);
    const post = { id, name: 'moved', run_type: 'chain', start_time: t, trace_id: id, dotted_order: seg(t, id), inputs: { q: 1 }, session_name: 'moves' };
    expect((await svc.api('/runs', { method: 'POST', json: post })).status).toBe(202);
    const res = await svc.api(`/runs/${id}`);
    expect(res.status).toBe(200);
    expect((await res.json()) as Json).toMatchObject({ id, name: 'moved', start_time: t, status: 'success', inputs: { q: 1 }, outputs: { moved: true } });
    expect((await query({ id: [id] })).runs.map((r) => r.start_time)).toEqual([t]);
    expect((await svc.api(`/runs/${randomUUID()}`)).status).toBe(404);
  });

  it('evaluates filter, trace_filter and tree_filter expressions', async () => {
    const f = await query({ session: [projectId], filter: 'and(eq(run_type, "chain"), has(tags, "odd"))' });
    expect(f.runs.map((r) => r.name)).toEqual(['root-3', 'root-1']);
    const lat = await query({ session: [projectId], is_root: true, filter: 'gt(latency, 2.5)' });
    expect(lat.runs.map((r) => r.name)).toEqual(['root-4', 'root-3', 'root-2']);
    const md = await query({ session: [projectId], filter: 'and(eq(metadata_key, "user"), eq(metadata_value, "u0"))' });
    expect(md.runs.map((r) => r.name)).toEqual(['root-4', 'root-2', 'root-0']);
    const tf = await query({ session: [projectId], run_type: 'llm', trace_filter: 'eq(name, "root-1")' });
    expect(tf.runs.map((r) => r.id)).toEqual([childIds[1]]);
    const tree = await query({ session: [projectId], is_root: true, tree_filter: 'gte(total_tokens, 44)' });
    expect(tree.runs.map((r) => r.name)).toEqual(['root-4', 'root-3']);
    const bad = await svc.api('/runs/query', { method: 'POST', json: { filter: 'eq(nope, 1)' } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: unknown[] }[] }).detail[0].loc).toEqual(['body', 'filter']);
  });

  it('selects fields and pages with a cursor in either order', async () => {
    const sel = await query({ session: [projectId], select: ['name', 'total_tokens'], is_root: false, limit: 2 });
    // The selected fields, plus those the SDKs' Run needs whatever the select.
    expect(Object.keys(sel.runs[0]).sort()).toEqual(['id', 'name', 'run_type', 'start_time', 'total_tokens', 'trace_id']);
    const seen: string[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const page = await query({ session: [projectId], limit: 3, order: 'asc', ...(cursor ? { cursor } : {}) });
      seen.push(...page.runs.map((r) => r.id as string));
      cursor = page.cursors.next;
      if (!cursor) break;
    }
    expect(seen).toHaveLength(10);
    expect(new Set(seen).size).toBe(10);
    const badCursor = await svc.api('/runs/query', { method: 'POST', json: { cursor: 'garbage' } });
    expect(badCursor.status).toBe(422);
    const badBody = await svc.api('/runs/query', { method: 'POST', json: { limit: 0, session: ['x'], select: ['nope'] } });
    expect(badBody.status).toBe(422);
    const locs = ((await badBody.json()) as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.limit', 'body.session.0', 'body.select.0']));
  });

  it("reads a trace's tree in one page of up to 10,000 runs when the select names light fields only", async () => {
    const created = await svc.api('/api/v1/sessions', { method: 'POST', json: { name: `q-tree-${randomUUID().slice(0, 8)}` } });
    const treeProject = ((await created.json()) as Json).id as string;
    const root = randomUUID();
    const t0 = Date.parse('2026-11-21T08:00:00.000001Z');
    const at = (ms: number) => new Date(t0 + ms).toISOString().replace('Z', '001Z');
    const post: Json[] = [{ id: root, name: 'big-root', run_type: 'chain', start_time: at(0), trace_id: root, dotted_order: seg(at(0), root), session_id: treeProject, inputs: { q: 1 } }];
    for (let i = 1; i < 1_200; i++) {
      const id = randomUUID();
      post.push({ id, name: `child-${i}`, run_type: 'tool', start_time: at(i), end_time: at(i + 1), trace_id: root, parent_run_id: root, dotted_order: `${seg(at(0), root)}.${seg(at(i), id)}`, session_id: treeProject, inputs: { i }, outputs: { i } });
    }
    for (let i = 0; i < post.length; i += 200) expect((await svc.api('/runs/batch', { method: 'POST', json: { post: post.slice(i, i + 200) } })).status).toBe(202);
    for (let i = 0; i < 60; i++) {
      const stats = (await (await svc.api('/api/v1/runs/stats', { method: 'POST', json: { trace: root, session: [treeProject] } })).json()) as { run_count: number };
      if (stats.run_count >= post.length) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const light = ['id', 'name', 'status', 'dotted_order', 'parent_run_id', 'latency', 'total_tokens', 'end_time'];
    const tree = await query({ trace: root, session: [treeProject], select: light, limit: 10_000, order: 'asc' });
    expect(tree.runs).toHaveLength(1_200);
    expect(tree.cursors.next).toBeNull();
    expect(tree.runs[0]).not.toHaveProperty('inputs');
    expect(new Set(tree.runs.map((r) => r.id)).size).toBe(1_200);
    // A smaller limit still pages with a cursor.
    expect((await query({ trace: root, session: [treeProject], select: light, limit: 1_100, order: 'asc' })).cursors.next).not.toBeNull();
    // Past 1,000: only for one trace, only with light fields selected; beyond 10,000 never.
    for (const body of [
      { trace: root, select: [...light, 'inputs'], limit: 1_001 },
      { trace: root, select: ['id', 'error'], limit: 2_000 },
      { trace: root, limit: 2_000 },
      { session: [treeProject], select: light, limit: 2_000 },
      { trace: root, select: light, limit: 10_001 },
    ]) {
      const res = await svc.api('/api/v1/runs/query', { method: 'POST', json: body });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail.map((d) => d.loc.join('.'))).toEqual(['body.limit']);
    }
  });

  it('computes stats: counts, latency percentiles, error rate, tokens, costs, first token', async () => {
    const res = await svc.api('/runs/stats', { method: 'POST', json: { session: [projectId], run_type: 'llm' } });
    expect(res.status).toBe(200);
    const s = (await res.json()) as Json;
    expect(s).toMatchObject({ run_count: 5, error_count: 0, error_rate: 0, prompt_tokens: 150, completion_tokens: 15, total_tokens: 165 });
    expect(s.total_cost as number).toBeCloseTo(0.015, 6);
    expect(s.first_token_p50 as number).toBeCloseTo(0.2, 3);
    expect(s.streaming_rate).toBe(1);
    const roots = (await (await svc.api('/runs/stats', { method: 'POST', json: { session: [projectId], is_root: true } })).json()) as Json;
    expect(roots).toMatchObject({ run_count: 5, error_count: 1, error_rate: 0.2 });
    expect(roots.latency_p50 as number).toBeCloseTo(3, 1);
    expect(roots.latency_p99 as number).toBeGreaterThan(4.9);
    const bad = await svc.api('/runs/stats', { method: 'POST', json: { session: 'nope' } });
    expect(bad.status).toBe(422);
  });

  it('projects: create, conflict, upsert, get with stats, list by name, update, delete with its runs', async () => {
    const dup = await svc.api('/sessions', { method: 'POST', json: { name: 'q-proj' } });
    expect(dup.status).toBe(409);
    const up = await svc.api('/sessions?upsert=true', { method: 'POST', json: { name: 'q-proj' } });
    expect(((await up.json()) as Json).id).toBe(projectId);
    const got = (await (await svc.api(`/sessions/${projectId}?include_stats=true`)).json()) as Json;
    expect(got).toMatchObject({ id: projectId, name: 'q-proj', description: 'for queries', run_count: 10, error_rate: 0.1 });
    const byName = (await (await svc.api('/sessions?name=q-proj')).json()) as Json[];
    expect(byName.map((p) => p.id)).toEqual([projectId]);
    // Booleans as the Python SDK writes them (str(False) is "False"), and as others do.
    for (const no of ['False', 'false', '0', 'FALSE']) {
      const res = await svc.api(`/sessions?name=q-proj&include_stats=${no}`);
      expect(res.status).toBe(200);
      expect(((await res.json()) as Json[])[0].run_count ?? null).toBeNull();
    }
    const withStats = await svc.api(`/sessions/${projectId}?include_stats=True`);
    expect(((await withStats.json()) as Json).run_count).toBe(10);
    const notBool = await svc.api('/sessions?include_stats=maybe');
    expect(notBool.status).toBe(422);
    expect(((await notBool.json()) as { detail: { loc: string[] }[] }).detail[0].loc).toEqual(['query', 'include_stats']);
    const patched = await svc.api(`/sessions/${projectId}`, { method: 'PATCH', json: { name: null, description: 'changed', end_time: null, extra: null } });
    expect(((await patched.json()) as Json).description).toBe('changed');
    expect((await svc.api('/sessions', { method: 'POST', json: { name: '' } })).status).toBe(422);
    expect((await svc.api(`/sessions/${randomUUID()}`)).status).toBe(404);
    expect((await svc.api('/sessions/not-a-uuid')).status).toBe(422);

    const doomed = (await (await svc.api('/sessions', { method: 'POST', json: { name: 'doomed' } })).json()) as Json;
    const runId = randomUUID();
    await svc.api('/runs', { method: 'POST', json: { id: runId, name: 'x', run_type: 'chain', session_id: doomed.id } });
    expect((await svc.api(`/runs/${runId}`)).status).toBe(200);
    expect((await svc.api(`/sessions/${String(doomed.id)}`, { method: 'DELETE' })).status).toBe(202);
    expect((await svc.api(`/sessions/${String(doomed.id)}`)).status).toBe(404);
    expect((await svc.api(`/runs/${runId}`)).status).toBe(404);
  });

  it('answers the token and cost breakdowns of usage_metadata as the SDKs read them (prompt/completion_token_details, *_cost_details)', async () => {
    const id = randomUUID();
    const t = '2026-11-20T13:00:00.000001Z';
    const usage = {
      input_tokens: 10, output_tokens: 20, total_tokens: 30,
      input_token_details: { audio: 1, foo: 2 }, output_token_details: { reasoning: 3, foo: 4 },
      input_cost_details: { audio: 1e-7, foo: 2e-7 }, output_cost_details: { reasoning: 3e-7, foo: 4e-7 },
    };
    // As run_tree.set(usage_metadata=...) sends it: in extra.metadata.
    const run = { id, name: 'llm', run_type: 'llm', start_time: t, end_time: t, trace_id: id, dotted_order: seg(t, id), session_id: projectId, extra: { metadata: { usage_metadata: usage } }, outputs: { text: 'hi' } };
    expect((await svc.api('/runs', { method: 'POST', json: run })).status).toBe(202);
    const got = (await (await svc.api(`/runs/${id}`)).json()) as Json;
    expect(got).toMatchObject({
      prompt_token_details: { audio: 1, foo: 2 },
      completion_token_details: { reasoning: 3, foo: 4 },
      prompt_cost_details: { audio: 1e-7, foo: 2e-7 },
      completion_cost_details: { reasoning: 3e-7, foo: 4e-7 },
    });
    const listed = await query({ id: [id], select: ['outputs', 'extra'] });
    expect(listed.runs[0].completion_token_details).toEqual({ reasoning: 3, foo: 4 });
    // Without usage_metadata the breakdowns are null.
    expect(((await (await svc.api(`/runs/${traceIds[0]}`)).json()) as Json).prompt_token_details).toBeNull();
  });

  it('keeps workspaces apart: another workspace sees none of these runs or projects', async () => {

    const other = await svc.app.get(IdentityService).createOrganization({ name: 'other' });
    const as = (path: string, init: RequestInit & { json?: unknown } = {}) =>
      svc.api(path, { ...init, headers: { 'x-api-key': other.api_key } });
    expect((await as(`/runs/${traceIds[0]}`)).status).toBe(404);
    const q = await as('/runs/query', { method: 'POST', json: { session: [projectId] }, headers: { 'content-type': 'application/json' } });
    const qb = await svc.api('/runs/query', { method: 'POST', json: { session: [projectId] }, headers: { 'x-api-key': other.api_key } });
    expect(((await qb.json()) as { runs: unknown[] }).runs).toEqual([]);
    void q;
    // naming this workspace's runs by id finds nothing either
    const byId = await svc.api('/runs/query', { method: 'POST', json: { id: [traceIds[0], childIds[1]] }, headers: { 'x-api-key': other.api_key } });
    expect(((await byId.json()) as { runs: unknown[] }).runs).toEqual([]);
    expect((await as(`/sessions/${projectId}`)).status).toBe(404);
    const st = await svc.api('/runs/stats', { method: 'POST', json: { session: [projectId] }, headers: { 'x-api-key': other.api_key } });
    expect(((await st.json()) as Json).run_count).toBe(0);
    // and a key cannot name another workspace
    const cross = await svc.api(`/runs/${traceIds[0]}`, { headers: { 'x-api-key': other.api_key, 'x-tenant-id': svc.workspaceId } });
    expect(cross.status).toBe(403);
  });

  it('serves /info, /ok, health, and the committed OpenAPI document without drift', async () => {
    const info = (await (await fetch(`${svc.url}/info`)).json()) as Json;
    expect(info).toMatchObject({
      batch_ingest_config: { use_multipart_endpoint: true, size_limit: 100 },
      instance_flags: { dataset_examples_multipart_enabled: true, gzip_body_enabled: true, zstd_compression_enabled: true },
    });
    expect(typeof info.version).toBe('string');
    expect((await fetch(`${svc.url}/api/v1/info`)).status).toBe(200);
    expect(await (await fetch(`${svc.url}/ok`)).json()).toEqual({ ok: true });
    expect((await fetch(`${svc.url}/health/live`)).status).toBe(200);
    const ready = (await (await fetch(`${svc.url}/health/ready`)).json()) as Json;
    expect(ready).toEqual({ status: 'ok', checks: { clickhouse: 'ok', bus: 'ok', postgres: 'ok' } });
    const served = (await (await fetch(`${svc.url}/openapi.json`)).json()) as Json;
    const committed = JSON.parse(readFileSync(join(__dirname, '..', '..', 'gateway', 'openapi.json'), 'utf8')) as Json;
    expect(served).toEqual(committed);
    expect(buildOpenApiDocument(DEFAULT_SERVICE_VERSION)).toEqual(committed);
  });

});
