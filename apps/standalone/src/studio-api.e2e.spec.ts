import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { Langsmith } from 'langsmith/client.js';
import type { ProjectDashboard } from '@th/contracts';
import { IdentityService } from '@th/gateway';
import { dottedSegment as seg } from '@th/ingest';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

describe('Studio APIs: the monitoring dashboard (POST /sessions/{id}/dashboard) and saved filters', () => {
  let svc: TestStandalone;
  let sdk: Langsmith;
  let projectId: string;
  const roots: string[] = [];

  beforeAll(async () => {
    svc = await startTestStandalone();
    sdk = new Langsmith({ baseURL: svc.url, apiKey: svc.apiKey, maxRetries: 0 });
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, autoBatchTracing: false });
    projectId = (await client.createProject({ projectName: `mon-${randomUUID().slice(0, 8)}` })).id;
    // Hour 10: 3 traces (one fails), hour 11: nothing, hour 12: 1 trace; each root has an llm child with tokens and cost.
    const post: Json[] = [];
    const hours = [10, 10, 10, 12];
    hours.forEach((h, i) => {
      const root = randomUUID();
      const child = randomUUID();
      roots.push(root);
      const t = `2026-11-20T${h}:0${i}:00.000001Z`;
      const tc = `2026-11-20T${h}:0${i}:00.500001Z`;
      const end = `2026-11-20T${h}:0${i}:0${i + 1}.000001Z`;
      post.push({ id: root, name: 'agent', run_type: 'chain', start_time: t, end_time: end, trace_id: root, dotted_order: seg(t, root), session_id: projectId, error: i === 1 ? 'boom' : undefined });
      post.push({
        id: child,
        name: 'llm',
        run_type: 'llm',
        start_time: tc,
        end_time: end,
        trace_id: root,
        parent_run_id: root,
        dotted_order: `${seg(t, root)}.${seg(tc, child)}`,
        session_id: projectId,
        outputs: { usage_metadata: { input_tokens: 10, output_tokens: 2, total_tokens: 12, input_cost: 0.01, output_cost: 0.02 } },
      });
    });
    expect((await svc.api('/runs/batch', { method: 'POST', json: { post } })).status).toBe(202);
    await client.createFeedback(roots[0], 'correctness', { score: 1, sessionId: projectId, traceId: roots[0] });
    await client.createFeedback(roots[1], 'correctness', { score: 0, sessionId: projectId, traceId: roots[1] });
    await client.createFeedback(roots[3], 'correctness', { score: 1, sessionId: projectId, traceId: roots[3] });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const series = (d: ProjectDashboard, id: string) =>
    d.charts.flatMap((c) => c.data).filter((p) => p.series_id === id).map((p) => p.value);

  it("answers LangSmith's CustomChartsSection through the published SDK's client, one point per bucket", async () => {
    const body = { start_time: '2026-11-20T10:00:00Z', end_time: '2026-11-20T13:00:00Z', stride: { hours: 1 } };
    const d = (await sdk.sessions.dashboard(projectId, body)) as unknown as ProjectDashboard;
    expect(d.session_id).toBe(projectId);
    expect(d.metadata).toMatchObject({ buckets: 3, stride: { days: 0, hours: 1, minutes: 0 }, timezone: 'UTC' });
    expect(d.charts.map((c) => c.id)).toEqual(['run_count', 'error_rate', 'latency', 'tokens', 'cost', 'feedback']);
    const stamps = d.charts[0].data.map((p) => p.timestamp);
    expect(stamps).toEqual(['2026-11-20T10:00:00.000Z', '2026-11-20T11:00:00.000Z', '2026-11-20T12:00:00.000Z']);
    expect(series(d, 'run_count')).toEqual([3, 0, 1]);
    expect(series(d, 'error_rate')).toEqual([1 / 3, null, 0]);
    expect(series(d, 'total_tokens')).toEqual([36, 0, 12]);
    expect(series(d, 'prompt_tokens')).toEqual([30, 0, 10]);
    const cost = series(d, 'total_cost');
    expect(cost[0]).toBeCloseTo(0.09, 6);
    expect(cost[1]).toBeNull();
    expect(cost[2]).toBeCloseTo(0.03, 6);
    const p50 = series(d, 'latency_p50');
    expect(p50[0]).toBeGreaterThan(1);
    expect(p50[1]).toBeNull();
    expect(p50[2]).toBeCloseTo(4, 1);
    expect(d.charts[5].series).toEqual([{ id: 'feedback:correctness', name: 'correctness', metric: 'feedback_score_avg', feedback_key: 'correctness' }]);
    expect(series(d, 'feedback:correctness')).toEqual([0.5, null, 1]);
  });

  it('defaults the range to the last day in about 60 buckets, aligns a daily stride to midnight in the time zone, and omits data on request', async () => {
    const d = (await (await svc.api(`/api/v1/sessions/${projectId}/dashboard`, { method: 'POST', json: {} })).json()) as ProjectDashboard;
    expect(d.metadata.buckets).toBeGreaterThanOrEqual(60);
    expect(d.metadata.buckets).toBeLessThanOrEqual(61);
    expect(series(d, 'run_count').every((v) => v === 0)).toBe(true);
    const tz = await svc.api(`/api/v1/sessions/${projectId}/dashboard`, {
      method: 'POST',
      json: { start_time: '2026-11-20T05:00:00Z', end_time: '2026-11-21T00:00:00Z', stride: { days: 1 }, timezone: 'America/New_York' },
    });
    expect(tz.status).toBe(200);
    const daily = (await tz.json()) as ProjectDashboard;
    expect(daily.metadata.start_time).toBe('2026-11-20T05:00:00.000Z'); // midnight in New York (EST)
    expect(series(daily, 'run_count')).toEqual([4]);
    const omitted = (await (await svc.api(`/api/v1/sessions/${projectId}/dashboard`, { method: 'POST', json: { omit_data: true } })).json()) as ProjectDashboard;
    expect(omitted.charts.every((c) => c.data.length === 0)).toBe(true);
    expect(omitted.charts[0].series[0].id).toBe('run_count');
  });

  it('refuses bad input with 422 and names the field, and an unknown project with 404', async () => {
    const post = (json: unknown, id = projectId) => svc.api(`/api/v1/sessions/${id}/dashboard`, { method: 'POST', json });
    const cases: [unknown, string][] = [
      [{ stride: { minutes: 0 } }, 'stride'],
      [{ stride: { hours: -1 } }, 'stride'],
      [{ stride: { minutes: 1 }, start_time: '2026-01-01T00:00:00Z', end_time: '2026-11-01T00:00:00Z' }, 'stride'],
      [{ start_time: '2026-11-20T10:00:00Z', end_time: '2026-11-20T09:00:00Z' }, 'end_time'],
      [{ start_time: 'not a time' }, 'start_time'],
      [{ timezone: 'Mars/Olympus' }, 'timezone'],
      [{ group_by: { attribute: 'name' } }, 'group_by'],
      [{ omit_data: 'yes' }, 'omit_data'],
    ];
    for (const [json, field] of cases) {
      const res = await post(json);
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: { loc: (string | number)[]; msg: string; type: string }[] };
      expect(body.detail[0].loc.slice(0, 2)).toEqual(['body', field]);
      expect(typeof body.detail[0].msg).toBe('string');
    }
    expect((await post({}, 'not-a-uuid')).status).toBe(422);
    expect((await post({}, randomUUID())).status).toBe(404);
  });

  it("hides another workspace's project", async () => {
    const other = await svc.app.get(IdentityService).createOrganization({ name: 'other-mon' });
    const res = await svc.api(`/api/v1/sessions/${projectId}/dashboard`, { method: 'POST', json: {}, headers: { 'x-api-key': other.api_key } });
    expect(res.status).toBe(404);
  });

  it("a filter's syntax error carries its position (ctx.position) for the editor", async () => {
    const res = await svc.api('/api/v1/runs/query', { method: 'POST', json: { session: [projectId], filter: 'eq(name, "a"' } });
    expect(res.status).toBe(422);
    const body = (await res.json()) as { detail: { loc: string[]; ctx?: { position?: number } }[] };
    expect(body.detail[0].loc).toEqual(['body', 'filter']);
    expect(body.detail[0].ctx?.position).toBe(12);
  });
  it('saved filters: saved per project, listed by name, checked by the parser, unique by name, deleted; not seen by another workspace', async () => {
    const base = `/api/v1/sessions/${projectId}/filters`;
    const save = (json: unknown, path = base) => svc.api(path, { method: 'POST', json });
    const errors = await save({ name: 'errors', filter: 'eq(status, "error")' });
    expect(errors.status).toBe(200);
    const saved = (await errors.json()) as { id: string; name: string; filter: string; session_id: string };
    expect(saved).toMatchObject({ name: 'errors', filter: 'eq(status, "error")', session_id: projectId });
    expect((await save({ name: 'agents', filter: 'eq(name, "agent")' })).status).toBe(200);
    const list = (await (await svc.api(base)).json()) as { name: string }[];
    expect(list.map((f) => f.name)).toEqual(['agents', 'errors']);
    expect((await save({ name: 'errors', filter: 'eq(status, "success")' })).status).toBe(409);
    // Bad input: 422 naming the field; a filter's syntax error carries its position.
    const bad = await save({ name: 'broken', filter: 'eq(status, "error"' });
    expect(bad.status).toBe(422);
    const detail = ((await bad.json()) as { detail: { loc: string[]; ctx?: { position?: number } }[] }).detail[0];
    expect(detail.loc).toEqual(['body', 'filter']);
    expect(detail.ctx?.position).toBe(18);
    for (const body of [{ name: '', filter: 'eq(a, 1)' }, { name: 'x' }, { name: 'x'.repeat(201), filter: 'eq(name, "a")' }, { name: 'x', filter: 42 }]) {
      const res = await save(body);
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: { loc: string[] }[] }).detail[0].loc[0]).toBe('body');
    }
    expect((await save({ name: 'x', filter: 'eq(name, "a")' }, `/api/v1/sessions/${randomUUID()}/filters`)).status).toBe(404);
    expect((await svc.api(`${base}/not-a-uuid`, { method: 'DELETE' })).status).toBe(422);
    // Nothing was written by the refused requests.
    expect(((await (await svc.api(base)).json()) as unknown[]).length).toBe(2);
    // Another workspace sees neither the project's filters nor can it delete them.
    const other = await svc.app.get(IdentityService).createOrganization({ name: 'other-filters' });
    const as = { 'x-api-key': other.api_key };
    expect((await svc.api(base, { headers: as })).status).toBe(404);
    expect((await svc.api(`${base}/${saved.id}`, { method: 'DELETE', headers: as })).status).toBe(404);
    expect((await svc.api(`${base}/${saved.id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await svc.api(`${base}/${saved.id}`, { method: 'DELETE' })).status).toBe(404);
    expect(((await (await svc.api(base)).json()) as { name: string }[]).map((f) => f.name)).toEqual(['agents']);
  });
});
