import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { EventBus } from '@th/bus';
import { TOPICS, feedbackEventFromCreate, feedbackCreateSchema, type FeedbackEvent } from '@th/contracts';
import { multipartBody } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
type Stats = Record<string, { n: number; avg: number | null; count: number; mean: number | null; stdev: number | null; values: Record<string, number> }>;

const T0 = '2026-11-22T04:04:29.623001Z';

/** Feedback through the real HTTP path of the standalone service: writes go over the bus to ClickHouse. */
describe('feedback through the standalone service', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone();
  });
  afterAll(async () => {
    await svc?.close();
  });

  const json = async <T = Json>(res: Response): Promise<T> => (await res.json()) as T;
  const post = (path: string, body: unknown) => svc.api(path, { method: 'POST', json: body });

  async function createRun(opts: { id?: string; project?: string; parent?: string; trace?: string; name?: string } = {}): Promise<string> {
    const id = opts.id ?? randomUUID();
    const res = await post('/api/v1/runs', {
      id,
      name: opts.name ?? 'r',
      run_type: 'chain',
      start_time: T0,
      inputs: { q: 1 },
      session_name: opts.project ?? 'fb-default',
      ...(opts.parent ? { parent_run_id: opts.parent } : {}),
    });
    expect(res.status).toBe(202);
    return id;
  }

  async function listFeedback(query: string): Promise<Json[]> {
    const res = await svc.api(`/api/v1/feedback?${query}`);
    expect(res.status).toBe(200);
    return json<Json[]>(res);
  }

  async function runStats(runId: string): Promise<Stats | null> {
    const res = await svc.api(`/api/v1/runs/${runId}`);
    expect(res.status).toBe(200);
    return (await json(res)).feedback_stats as Stats | null;
  }

  it('creates feedback with every field of the spec object and reads it back', async () => {
    const runId = await createRun();
    const id = randomUUID();
    const body = {
      id,
      run_id: runId,
      key: 'correctness',
      score: 0.75,
      value: 'mostly right',
      comment: 'one slip',
      correction: { answer: 42 },
      feedback_source: { type: 'api', metadata: { who: 'test' } },
      feedback_config: { type: 'continuous', min: 0, max: 1 },
      created_at: '2026-11-22T05:00:00.000001Z',
      modified_at: '2026-11-22T05:00:00.000001Z',
    };
    const res = await post('/api/v1/feedback', body);
    expect(res.status).toBe(200);
    const created = await json(res);
    expect(created).toMatchObject({ ...body, score: 0.75, session_id: expect.any(String), trace_id: runId });

    const got = await svc.api(`/api/v1/feedback/${id}`);
    expect(got.status).toBe(200);
    expect(await json(got)).toEqual(created);
    expect(await runStats(runId)).toEqual({ correctness: { n: 1, count: 1, avg: 0.75, mean: 0.75, stdev: 0, values: { 'mostly right': 1 } } });
  });

  it('accepts the SDK form: feedbackConfig in camelCase, boolean scores, project feedback with run_id null', async () => {
    const runId = await createRun();
    const id = randomUUID();
    const res = await post('/api/v1/feedback', {
      id,
      run_id: runId,
      key: 'thumbs',
      score: true,
      feedbackConfig: { type: 'categorical', categories: [{ value: 0, label: 'down' }, { value: 1, label: 'up' }] },
      start_time: '2026-11-22T04:04:29.623001Z',
      feedback_source: { type: 'model', metadata: { __run: { run_id: randomUUID() } } },
    });
    expect(res.status).toBe(200);
    const f = await json(res);
    expect(f).toMatchObject({ score: 1, feedback_config: { type: 'categorical', categories: [{ value: 0, label: 'down' }, { value: 1, label: 'up' }] } });

    const project = await json(await post('/api/v1/sessions', { name: `fb-proj-${randomUUID().slice(0, 8)}` }));
    const projectFeedback = await post('/api/v1/feedback', { run_id: null, session_id: project.id, key: 'summary', score: 0.5 });
    expect(projectFeedback.status).toBe(200);
    expect(await json(projectFeedback)).toMatchObject({ run_id: null, session_id: project.id, key: 'summary', score: 0.5, feedback_source: { type: 'api' } });
  });

  it('lists feedback filtered by run, trace, session, key and source, with offset and limit', async () => {
    const project = `fb-list-${randomUUID().slice(0, 8)}`;
    const root = await createRun({ project });
    const child = await createRun({ project, parent: root });
    const other = await createRun();
    const mk = (run: string, key: string, source: string) => post('/api/v1/feedback', { run_id: run, key, score: 1, feedback_source: { type: source } });
    for (const r of await Promise.all([mk(root, 'a', 'api'), mk(child, 'b', 'model'), mk(child, 'a', 'api'), mk(other, 'a', 'api')])) expect(r.status).toBe(200);

    expect((await listFeedback(`run=${root}`)).map((f) => f.key)).toEqual(['a']);
    expect((await listFeedback(`run=${root}&run=${child}`)).length).toBe(3);
    expect((await listFeedback(`trace=${root}`)).length).toBe(3);
    const session = (await json<Json[]>(await svc.api(`/api/v1/sessions?name=${project}`)))[0].id as string;
    expect((await listFeedback(`session=${session}`)).length).toBe(3);
    expect((await listFeedback(`trace=${root}&key=b`)).map((f) => f.run_id)).toEqual([child]);
    expect((await listFeedback(`trace=${root}&source=model`)).map((f) => f.key)).toEqual(['b']);
    expect((await listFeedback(`trace=${root}&source=api&source=model`)).length).toBe(3);
    const page1 = await listFeedback(`trace=${root}&limit=2&offset=0`);
    const page2 = await listFeedback(`trace=${root}&limit=2&offset=2`);
    expect(page1.length).toBe(2);
    expect(page2.length).toBe(1);
    expect(new Set([...page1, ...page2].map((f) => f.id)).size).toBe(3);
  });

  it('PATCH updates fields and modified_at; the stats follow without counting twice; DELETE removes it', async () => {
    const runId = await createRun();
    const created = await json(await post('/api/v1/feedback', { run_id: runId, key: 'quality', score: 0.2, comment: 'meh' }));
    const id = created.id as string;
    const patched = await svc.api(`/api/v1/feedback/${id}`, { method: 'PATCH', json: { score: 0.9, comment: 'better', correction: 'fixed text' } });
    expect(patched.status).toBe(200);
    const after = await json(await svc.api(`/api/v1/feedback/${id}`));
    expect(after).toMatchObject({ id, score: 0.9, comment: 'better', correction: 'fixed text', created_at: created.created_at });
    expect(String(after.modified_at) > String(created.modified_at)).toBe(true);
    expect(await runStats(runId)).toMatchObject({ quality: { n: 1, avg: 0.9 } });

    // null clears a field; an absent field stays
    await svc.api(`/api/v1/feedback/${id}`, { method: 'PATCH', json: { comment: null } });
    expect(await json(await svc.api(`/api/v1/feedback/${id}`))).toMatchObject({ comment: null, score: 0.9 });

    const del = await svc.api(`/api/v1/feedback/${id}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect((await svc.api(`/api/v1/feedback/${id}`)).status).toBe(404);
    expect(await listFeedback(`run=${runId}`)).toEqual([]);
    expect(await runStats(runId)).toBeNull();
    expect((await svc.api(`/api/v1/feedback/${id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await svc.api(`/api/v1/feedback/${id}`, { method: 'PATCH', json: { score: 1 } })).status).toBe(404);
  });

  it('feedback_stats per key: count, mean and value counts for categorical feedback', async () => {
    const runId = await createRun();
    const config = { type: 'categorical', categories: [{ value: 1, label: 'good' }, { value: 0, label: 'bad' }] };
    for (const [score, value] of [[1, 'good'], [1, 'good'], [0, 'bad']] as const) {
      expect((await post('/api/v1/feedback', { run_id: runId, key: 'verdict', score, value, feedback_config: config })).status).toBe(200);
    }
    expect((await post('/api/v1/feedback', { run_id: runId, key: 'relevance', score: 0.5 })).status).toBe(200);
    expect((await post('/api/v1/feedback', { run_id: runId, key: 'relevance', score: 1 })).status).toBe(200);
    const stats = await runStats(runId);
    expect(stats?.verdict).toMatchObject({ n: 3, count: 3, values: { good: 2, bad: 1 } });
    expect(stats?.verdict.avg).toBeCloseTo(2 / 3, 10);
    expect(stats?.relevance).toMatchObject({ n: 2, avg: 0.75, mean: 0.75, values: {} });
  });

  it('feedback_stats on run queries, trace stats and projects, and feedback filters on POST /runs/query', async () => {
    const project = `fb-agg-${randomUUID().slice(0, 8)}`;
    const root = await createRun({ project, name: 'root' });
    const good = await createRun({ project, parent: root, name: 'good' });
    const bad = await createRun({ project, parent: root, name: 'bad' });
    await createRun({ project, parent: root, name: 'none' });
    for (const [run, score] of [[good, 0.9], [bad, 0.1], [root, 0.6]] as const) {
      expect((await post('/api/v1/feedback', { run_id: run, key: 'correctness', score })).status).toBe(200);
    }
    expect((await post('/api/v1/feedback', { run_id: good, key: 'style', value: 'terse' })).status).toBe(200);
    const session = (await json<Json[]>(await svc.api(`/api/v1/sessions?name=${project}`)))[0].id as string;

    const q = async (filter: string) => {
      const res = await post('/api/v1/runs/query', { session: [session], filter, select: ['name', 'feedback_stats'] });
      expect(res.status).toBe(200);
      return (await json<{ runs: Json[] }>(res)).runs;
    };
    expect((await q('and(eq(feedback_key, "correctness"), gte(feedback_score, 0.5))')).map((r) => r.name).sort()).toEqual(['good', 'root']);
    expect((await q('and(eq(feedback_key, "correctness"), lt(feedback_score, 0.5))')).map((r) => r.name)).toEqual(['bad']);
    expect((await q('eq(feedback_value, "terse")')).map((r) => r.name)).toEqual(['good']);
    const [goodRun] = await q('eq(name, "good")');
    expect(goodRun.feedback_stats).toMatchObject({ correctness: { n: 1, avg: 0.9 }, style: { n: 1, avg: null, values: { terse: 1 } } });
    expect((await q('eq(name, "none")'))[0].feedback_stats).toBeNull();

    const traceStats = await json(await post('/api/v1/runs/stats', { trace: root }));
    expect((traceStats.feedback_stats as Stats).correctness).toMatchObject({ n: 3 });
    expect((traceStats.feedback_stats as Stats).correctness.avg).toBeCloseTo((0.9 + 0.1 + 0.6) / 3, 10);

    expect((await post('/api/v1/feedback', { run_id: null, session_id: session, key: 'summary', score: 0.25 })).status).toBe(200);
    const p = await json(await svc.api(`/api/v1/sessions/${session}?include_stats=true`));
    expect((p.feedback_stats as Stats).correctness.n).toBe(3);
    expect((p.feedback_stats as Stats).style).toMatchObject({ n: 1, values: { terse: 1 } });
    expect(p.session_feedback_stats).toMatchObject({ summary: { n: 1, avg: 0.25 } });
    const listed = await json<Json[]>(await svc.api(`/api/v1/sessions?name=${project}&include_stats=true`));
    expect((listed[0].feedback_stats as Stats).correctness.n).toBe(3);
  });

  it('feedback that arrives before its run counts once the run is stored', async () => {
    const runId = randomUUID();
    const res = await post('/api/v1/feedback', { run_id: runId, key: 'early', score: 1 });
    expect(res.status).toBe(200);
    expect((await json(res)).session_id).toBeNull();
    expect((await svc.api(`/api/v1/runs/${runId}`)).status).toBe(404);
    await createRun({ id: runId, project: 'fb-early' });
    expect(await runStats(runId)).toMatchObject({ early: { n: 1, avg: 1 } });
    const session = (await json<Json[]>(await svc.api('/api/v1/sessions?name=fb-early')))[0].id as string;
    expect((await listFeedback(`session=${session}&key=early`)).map((f) => f.run_id)).toEqual([runId]);
    const found = await post('/api/v1/runs/query', { session: [session], filter: 'eq(feedback_key, "early")' });
    expect((await json<{ runs: Json[] }>(found)).runs.map((r) => r.id)).toEqual([runId]);
  });

  it('a re-delivered or out-of-order feedback event is never counted twice', async () => {
    const runId = await createRun();
    const bus = svc.app.get(EventBus);
    const create = feedbackCreateSchema.parse({ id: randomUUID(), run_id: runId, key: 'redelivered', score: 0.3 });
    const now = Date.now() * 1000;
    const v1 = feedbackEventFromCreate(svc.workspaceId, { ...create, id: create.id! }, now, now);
    const v2: FeedbackEvent = { ...v1, score: 0.8, version: now + 10 };
    // newest first, then the older version and duplicates of both, in one batch and in separate ones
    await bus.publish(TOPICS.feedback, [{ key: runId, value: v2 }]);
    await bus.publish(TOPICS.feedback, [{ key: runId, value: v1 }, { key: runId, value: v1 }, { key: runId, value: v2 }]);
    await bus.publish(TOPICS.feedback, [{ key: runId, value: v1 }]);
    expect(await runStats(runId)).toMatchObject({ redelivered: { n: 1, avg: 0.8 } });
    expect((await listFeedback(`run=${runId}`)).length).toBe(1);
    // a deletion re-delivered, and the create re-delivered after it, leave it deleted
    const del: FeedbackEvent = { ...v2, is_deleted: true, version: now + 20 };
    await bus.publish(TOPICS.feedback, [{ key: runId, value: del }, { key: runId, value: del }]);
    await bus.publish(TOPICS.feedback, [{ key: runId, value: v1 }]);
    expect(await runStats(runId)).toBeNull();
  });

  it('feedback.<id> parts of POST /runs/multipart are stored with the runs of the request', async () => {
    const runId = randomUUID();
    const fbId = randomUUID();
    const { body, contentType } = multipartBody([
      { name: `post.${runId}`, data: { id: runId, name: 'mp', run_type: 'llm', start_time: T0, trace_id: runId, dotted_order: `20261122T040429623001Z${runId}`, session_name: 'fb-mp' } },
      { name: `post.${runId}.inputs`, data: { prompt: 'x' } },
      {
        name: `feedback.${fbId}`,
        data: { id: fbId, run_id: runId, trace_id: runId, key: 'mp-score', score: 4, feedbackConfig: { type: 'continuous', min: 0, max: 5 }, feedback_source: { type: 'model' }, start_time: T0 },
      },
    ]);
    const res = await svc.api('/api/v1/runs/multipart', { method: 'POST', body, headers: { 'content-type': contentType } });
    expect(res.status).toBe(202);
    expect(await json(await svc.api(`/api/v1/feedback/${fbId}`))).toMatchObject({ id: fbId, run_id: runId, trace_id: runId, key: 'mp-score', score: 4 });
    expect(await runStats(runId)).toMatchObject({ 'mp-score': { n: 1, avg: 4 } });

    // feedback alone in a multipart request
    const alone = randomUUID();
    const only = multipartBody([{ name: `feedback.${alone}`, data: { run_id: runId, trace_id: runId, key: 'mp-alone', value: 'ok' } }]);
    expect((await svc.api('/api/v1/runs/multipart', { method: 'POST', body: only.body, headers: { 'content-type': only.contentType } })).status).toBe(202);
    expect(await json(await svc.api(`/api/v1/feedback/${alone}`))).toMatchObject({ id: alone, value: 'ok' });
  });

  it('a bad feedback part rejects the whole multipart request, runs included', async () => {
    const runId = randomUUID();
    const fbId = randomUUID();
    const cases: { data: unknown; loc: (string | number)[] }[] = [
      { data: { run_id: runId, key: 'k', score: 9, feedbackConfig: { type: 'continuous', min: 0, max: 5 } }, loc: ['body', `feedback.${fbId}`, 'score'] },
      { data: { run_id: runId, score: 1 }, loc: ['body', `feedback.${fbId}`, 'key'] },
      { data: '{not json', loc: ['body', `feedback.${fbId}`] },
      { data: { id: randomUUID(), run_id: runId, key: 'k' }, loc: ['body', `feedback.${fbId}`, 'id'] },
    ];
    for (const c of cases) {
      const { body, contentType } = multipartBody([
        { name: `post.${runId}`, data: { id: runId, name: 'mp-bad', run_type: 'chain', start_time: T0, session_name: 'fb-mp-bad' } },
        { name: `feedback.${fbId}`, data: c.data as string },
      ]);
      const res = await svc.api('/api/v1/runs/multipart', { method: 'POST', body, headers: { 'content-type': contentType } });
      expect(res.status).toBe(422);
      const detail = (await json<{ detail: { loc: (string | number)[]; msg: string; type: string }[] }>(res)).detail;
      expect(detail.map((d) => d.loc)).toContainEqual(c.loc);
    }
    expect((await svc.api(`/api/v1/runs/${runId}`)).status).toBe(404);
    expect((await svc.api(`/api/v1/feedback/${fbId}`)).status).toBe(404);
  });

  describe('bad inputs get a clear 4xx and write nothing', () => {
    let runId: string;
    beforeAll(async () => {
      runId = await createRun();
    });

    const cases: [string, unknown, (string | number)[], RegExp][] = [
      ['score above a continuous max', { key: 'k', score: 1.5, feedback_config: { type: 'continuous', min: 0, max: 1 } }, ['body', 'score'], /above the feedback_config maximum 1/],
      ['score below a continuous min', { key: 'k', score: -1, feedback_config: { type: 'continuous', min: 0, max: 1 } }, ['body', 'score'], /below the feedback_config minimum 0/],
      ['categorical value not a category', { key: 'k', value: 'maybe', feedback_config: { type: 'categorical', categories: [{ value: 1, label: 'yes' }, { value: 0, label: 'no' }] } }, ['body', 'value'], /not one of the categories/],
      ['categorical score not a category value', { key: 'k', score: 0.5, feedback_config: { type: 'categorical', categories: [{ value: 1, label: 'yes' }, { value: 0, label: 'no' }] } }, ['body', 'score'], /not one of the categories/],
      ['categorical config without categories', { key: 'k', score: 1, feedback_config: { type: 'categorical' } }, ['body', 'feedback_config'], /at least one category/],
      ['config with min above max', { key: 'k', score: 1, feedback_config: { type: 'continuous', min: 2, max: 1 } }, ['body', 'feedback_config'], /greater than/],
      ['unknown config type', { key: 'k', score: 1, feedback_config: { type: 'ranking' } }, ['body', 'feedback_config', 'type'], /./],
      ['score of the wrong type', { key: 'k', score: 'high' }, ['body', 'score'], /./],
      ['missing key', { score: 1 }, ['body', 'key'], /./],
      ['empty key', { key: '', score: 1 }, ['body', 'key'], /./],
      ['run_id that is not a UUID', { key: 'k', score: 1, run_id: 'nope' }, ['body', 'run_id'], /UUID/],
      ['neither run nor project', { key: 'k', score: 1, run_id: null }, ['body', 'run_id'], /run_id, or a session_id/],
      ['feedback_source without type', { key: 'k', score: 1, feedback_source: { metadata: {} } }, ['body', 'feedback_source', 'type'], /./],
      ['bad created_at', { key: 'k', score: 1, created_at: 'yesterday' }, ['body', 'created_at'], /datetime/],
    ];
    it.each(cases)('%s', async (_name, body, loc, msg) => {
      const withRun = { run_id: runId, ...(body as Json) };
      const res = await post('/api/v1/feedback', withRun);
      expect(res.status).toBe(422);
      const detail = (await json<{ detail: { loc: (string | number)[]; msg: string; type: string }[] }>(res)).detail;
      const item = detail.find((d) => JSON.stringify(d.loc) === JSON.stringify(loc));
      expect(item).toBeDefined();
      expect(item!.msg).toMatch(msg);
      expect(typeof item!.type).toBe('string');
      expect(await listFeedback(`run=${runId}`)).toEqual([]);
    });

    it('invalid JSON, bad ids and unknown feedback', async () => {
      const raw = await svc.api('/api/v1/feedback', { method: 'POST', body: '{"key":', headers: { 'content-type': 'application/json' } });
      expect(raw.status).toBe(422);
      expect((await svc.api('/api/v1/feedback/not-a-uuid')).status).toBe(422);
      expect((await svc.api(`/api/v1/feedback/${randomUUID()}`)).status).toBe(404);
      expect((await svc.api(`/api/v1/feedback?run=nope`)).status).toBe(422);
      expect((await svc.api(`/api/v1/feedback?limit=0`)).status).toBe(422);
      expect((await svc.api(`/api/v1/feedback/${randomUUID()}`, { method: 'PATCH', json: { score: 1 } })).status).toBe(404);
      expect((await svc.api(`/api/v1/feedback`, { headers: { 'x-api-key': 'th_wrong' } })).status).toBe(401);
      expect(await listFeedback(`run=${runId}`)).toEqual([]);
    });

    it('PATCH outside the stored config is refused and changes nothing', async () => {
      const f = await json(await post('/api/v1/feedback', { run_id: runId, key: 'bounded', score: 3, feedback_config: { type: 'continuous', min: 0, max: 5 } }));
      const res = await svc.api(`/api/v1/feedback/${String(f.id)}`, { method: 'PATCH', json: { score: 7 } });
      expect(res.status).toBe(422);
      expect((await json<{ detail: { loc: unknown[] }[] }>(res)).detail[0].loc).toEqual(['body', 'score']);
      expect((await svc.api(`/api/v1/feedback/${String(f.id)}`, { method: 'PATCH', json: { score: 'x' } })).status).toBe(422);
      expect(await json(await svc.api(`/api/v1/feedback/${String(f.id)}`))).toMatchObject({ score: 3, modified_at: f.modified_at });
      expect((await svc.api(`/api/v1/feedback/${String(f.id)}`, { method: 'DELETE' })).status).toBe(200);
    });

    it('an id already used for another run is a conflict', async () => {
      const id = randomUUID();
      expect((await post('/api/v1/feedback', { id, run_id: runId, key: 'dup', score: 1 })).status).toBe(200);
      const res = await post('/api/v1/feedback', { id, run_id: randomUUID(), key: 'dup', score: 0 });
      expect(res.status).toBe(409);
      expect(await json(await svc.api(`/api/v1/feedback/${id}`))).toMatchObject({ run_id: runId, score: 1 });
      expect((await svc.api(`/api/v1/feedback/${id}`, { method: 'DELETE' })).status).toBe(200);
    });
  });

  it('the published langsmith SDK creates, reads, updates, lists and deletes feedback', async () => {
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, autoBatchTracing: false, timeout_ms: 20_000 });
    const project = `fb-sdk-${randomUUID().slice(0, 8)}`;
    const runId = await createRun({ project });
    const session = (await json<Json[]>(await svc.api(`/api/v1/sessions?name=${project}`)))[0].id as string;
    const created = await client.createFeedback(runId, 'sdk-key', {
      score: 0.123456,
      comment: 'from the sdk',
      sessionId: session,
      feedbackConfig: { type: 'continuous', min: 0, max: 1 },
    });
    const read = await client.readFeedback(created.id);
    expect(read).toMatchObject({ id: created.id, run_id: runId, key: 'sdk-key', score: 0.1235, comment: 'from the sdk', feedback_config: { type: 'continuous', min: 0, max: 1 } });
    await client.updateFeedback(created.id, { score: 0.5 });
    const listed = [];
    for await (const f of client.listFeedback({ runIds: [runId], feedbackKeys: ['sdk-key'], feedbackSourceTypes: ['api'] })) listed.push(f);
    expect(listed.map((f) => [f.id, f.score])).toEqual([[created.id, 0.5]]);
    await expect(client.createFeedback(runId, 'sdk-key', { score: 2, sessionId: session, feedbackConfig: { type: 'continuous', min: 0, max: 1 } })).rejects.toThrow(/422|score/);
    await client.deleteFeedback(created.id);
    expect((await svc.api(`/api/v1/feedback/${created.id}`)).status).toBe(404);
  });

  it('the SDK with auto-batching sends run feedback as a multipart part, and project feedback as JSON', async () => {
    const requests: string[] = [];
    const realFetch = globalThis.fetch;
    globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      requests.push(`${init?.method ?? 'GET'} ${input instanceof Request ? input.url : String(input)}`);
      return realFetch(input, init);
    }) as typeof fetch;
    try {
      const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, autoBatchTracing: true, timeout_ms: 20_000 });
      const project = `fb-sdk-mp-${randomUUID().slice(0, 8)}`;
      const runId = await createRun({ project });
      const session = (await json<Json[]>(await svc.api(`/api/v1/sessions?name=${project}`)))[0].id as string;
      const viaPart = await client.createFeedback(runId, 'sdk-batched', { score: 1, traceId: runId, sessionId: session, feedbackSourceType: 'model' });
      await client.awaitPendingTraceBatches();
      expect(requests.some((r) => r.startsWith('POST') && r.endsWith('/api/v1/runs/multipart'))).toBe(true);
      expect(await json(await svc.api(`/api/v1/feedback/${viaPart.id}`))).toMatchObject({ id: viaPart.id, run_id: runId, trace_id: runId, session_id: session, key: 'sdk-batched', score: 1, feedback_source: { type: 'model' } });

      const summary = await client.createFeedback(null, 'sdk-summary', { score: 0.5, projectId: session });
      expect(await json(await svc.api(`/api/v1/feedback/${summary.id}`))).toMatchObject({ run_id: null, session_id: session, score: 0.5 });
      const p = await json(await svc.api(`/api/v1/sessions/${session}?include_stats=true`));
      expect(p.session_feedback_stats).toMatchObject({ 'sdk-summary': { n: 1, avg: 0.5 } });
      expect(p.feedback_stats).toMatchObject({ 'sdk-batched': { n: 1, avg: 1 } });
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});
