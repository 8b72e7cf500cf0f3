import { randomUUID } from 'node:crypto';
import { EXPERIMENT_STAT_FIELDS, experimentSchema, datasetSchema } from '@th/contracts';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

const START = '2026-11-22T04:00:00.000000Z';
const END = '2026-11-22T05:00:00.000000Z';
const at = (minute: number, ms = 0) => new Date(Date.parse(START) + minute * 60_000 + ms).toISOString();

const EXPERIMENT_FIELDS = [
  'start_time', 'end_time', 'extra', 'name', 'description', 'default_dataset_id', 'reference_dataset_id', 'trace_tier', 'id', 'run_count',
  'latency_p50', 'latency_p99', 'first_token_p50', 'first_token_p99', 'total_tokens', 'prompt_tokens', 'completion_tokens', 'total_cost',
  'prompt_cost', 'completion_cost', 'tenant_id', 'last_run_start_time', 'last_run_start_time_live', 'feedback_stats', 'session_feedback_stats',
  'run_facets', 'error_rate', 'streaming_rate', 'test_run_number',
];
const DATASET_FIELDS = [
  'name', 'description', 'created_at', 'data_type', 'inputs_schema_definition', 'outputs_schema_definition', 'externally_managed', 'id',
  'tenant_id', 'example_count', 'session_count', 'modified_at', 'last_session_start_time',
];

/** Experiment upload, experiment reads and comparison through the real HTTP path of the standalone service. */
describe('experiments through the standalone service', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone({ DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'true' });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const json = async <T = Json>(res: Response): Promise<T> => (await res.json()) as T;
  const post = (path: string, body: unknown) => svc.api(path, { method: 'POST', json: body });
  const upload = (body: unknown) => post('/api/v1/datasets/upload-experiment', body);

  function row(i: number, extra: Json = {}): Json {
    return {
      row_id: randomUUID(),
      inputs: { question: `q${i}` },
      expected_outputs: { answer: `a${i}` },
      actual_outputs: { answer: i % 2 === 0 ? `a${i}` : 'wrong' },
      evaluation_scores: [
        { key: 'correctness', score: i % 2 === 0 ? 1 : 0, comment: `row ${i}`, feedback_config: { type: 'continuous', min: 0, max: 1 } },
        { key: 'verdict', value: i % 2 === 0 ? 'pass' : 'fail' },
      ],
      start_time: at(i),
      end_time: at(i, 1000 * (i + 1)),
      run_name: 'my-target',
      run_metadata: { model: 'm1', row: i },
      ...extra,
    };
  }

  function body(overrides: Json = {}, rows: Json[] = [row(0), row(1), row(2)]): Json {
    return {
      experiment_name: `exp-${randomUUID().slice(0, 8)}`,
      experiment_description: 'an uploaded experiment',
      experiment_start_time: START,
      experiment_end_time: END,
      dataset_name: `ds-${randomUUID().slice(0, 8)}`,
      dataset_description: 'uploaded rows',
      experiment_metadata: { team: 'evals', round: 1 },
      summary_experiment_scores: [{ key: 'overall_f1', score: 0.66, feedback_source: { type: 'api' } }],
      results: rows,
      ...overrides,
    };
  }

  async function experiment(id: string): Promise<Json> {
    const res = await svc.api(`/api/v1/sessions/${id}?include_stats=true`);
    expect(res.status).toBe(200);
    return json(res);
  }

  /** Polls (bounded) until the experiment's run statistics cover `runs` runs. */
  async function experimentWithStats(id: string, runs: number): Promise<Json> {
    for (let i = 0; i < 100; i++) {
      const e = await experiment(id);
      if (e.run_count === runs && e.feedback_stats !== null) return e;
      await new Promise((r) => setTimeout(r, 100));
    }
    return experiment(id);
  }

  /** Runs and feedback in ClickHouse that reference these examples (rows) or this experiment name's project. */
  async function storedRunsFor(rowIds: string[]): Promise<number> {
    const rows = await svc.ch.query<{ n: string }>(
      'SELECT count() AS n FROM runs FINAL WHERE tenant_id = {t:UUID} AND reference_example_id IN {ids:Array(UUID)}',
      { t: svc.workspaceId, ids: rowIds },
    );
    return Number(rows[0].n);
  }

  async function runsOf(sessionId: string): Promise<Json[]> {
    const res = await post('/api/v1/runs/query', { session: [sessionId], limit: 100 });
    expect(res.status).toBe(200);
    return (await json<{ runs: Json[] }>(res)).runs;
  }

  async function datasetsNamed(name: string): Promise<Json[]> {
    const res = await svc.api(`/api/v1/datasets?name=${encodeURIComponent(name)}`);
    expect(res.status).toBe(200);
    return json<Json[]>(res);
  }

  it('upload: rows become examples and runs, scores become feedback; the response holds every field; statistics fill in on a later read', async () => {
    const rows = [row(0), row(1, { error: 'boom' }), row(2)];
    const req = body({}, rows);
    const res = await upload(req);
    expect(res.status).toBe(200);
    const out = await json<{ experiment: Json; dataset: Json }>(res);
    expect(Object.keys(out).sort()).toEqual(['dataset', 'experiment']);
    expect(experimentSchema.safeParse(out.experiment).success).toBe(true);
    expect(datasetSchema.safeParse(out.dataset).success).toBe(true);
    for (const f of EXPERIMENT_FIELDS) expect(out.experiment).toHaveProperty(f);
    for (const f of DATASET_FIELDS) expect(out.dataset).toHaveProperty(f);
    // The immediate response: statistics null, the runs are not read yet.
    for (const f of EXPERIMENT_STAT_FIELDS) expect(out.experiment[f]).toBeNull();
    expect(out.experiment).toMatchObject({
      name: req.experiment_name,
      description: 'an uploaded experiment',
      start_time: '2026-11-22T04:00:00.000Z',
      end_time: '2026-11-22T05:00:00.000Z',
      reference_dataset_id: out.dataset.id,
      extra: { metadata: { team: 'evals', round: 1 } },
      test_run_number: 1,
    });
    expect(out.dataset).toMatchObject({
      name: req.dataset_name,
      description: 'uploaded rows',
      data_type: 'kv',
      externally_managed: true,
      example_count: 3,
      session_count: 1,
      inputs_schema_definition: null,
      outputs_schema_definition: null,
    });

    // Read again: the statistics are there, tokens and costs stay null.
    const e = await experimentWithStats(String(out.experiment.id), 3);
    expect(e).toMatchObject({ run_count: 3, error_rate: 1 / 3, streaming_rate: 0, first_token_p50: null, first_token_p99: null, test_run_number: 1 });
    for (const f of ['total_tokens', 'prompt_tokens', 'completion_tokens', 'total_cost', 'prompt_cost', 'completion_cost']) expect(e[f]).toBeNull();
    expect(e.latency_p50).toBeCloseTo(2, 1);
    expect(e.latency_p99).toBeGreaterThan(2.9);
    expect(e.last_run_start_time).toBe(e.last_run_start_time_live);
    expect(String(e.last_run_start_time)).toMatch(/^2026-11-22T04:02:00/);
    expect(e.feedback_stats).toMatchObject({ correctness: { n: 3, avg: 2 / 3 }, verdict: { n: 3, values: { pass: 2, fail: 1 } } });
    expect(e.session_feedback_stats).toMatchObject({ overall_f1: { n: 1, avg: 0.66 } });
    for (const f of EXPERIMENT_FIELDS) expect(e).toHaveProperty(f);

    // Each row: one example (id = row_id, inputs, expected outputs) and one run referencing it.
    const examples = await json<Json[]>(await svc.api(`/api/v1/examples?dataset=${String(out.dataset.id)}`));
    expect(examples.map((x) => x.id).sort()).toEqual(rows.map((r) => r.row_id).sort());
    for (const r of rows) expect(examples.find((x) => x.id === r.row_id)).toMatchObject({ inputs: r.inputs, outputs: r.expected_outputs });
    const runs = await runsOf(String(out.experiment.id));
    expect(runs).toHaveLength(3);
    for (const r of rows) {
      const run = runs.find((x) => x.reference_example_id === r.row_id) as Json;
      expect(run).toMatchObject({ name: 'my-target', inputs: r.inputs, outputs: r.actual_outputs, error: (r.error as string | undefined) ?? null, parent_run_id: null });
      expect(run.extra).toMatchObject({ metadata: r.run_metadata });
      expect(run.trace_id).toBe(run.id);
      const fb = await json<Json[]>(await svc.api(`/api/v1/feedback?run=${String(run.id)}`));
      expect(fb.map((f) => f.key).sort()).toEqual(['correctness', 'verdict']);
      expect(fb.find((f) => f.key === 'correctness')).toMatchObject({ session_id: out.experiment.id, feedback_config: { type: 'continuous', min: 0, max: 1 } });
    }
    const summary = await json<Json[]>(await svc.api(`/api/v1/feedback?session=${String(out.experiment.id)}&key=overall_f1`));
    expect(summary).toEqual([expect.objectContaining({ run_id: null, score: 0.66, session_id: out.experiment.id })]);

    // The experiment is listed among the dataset's experiments with its statistics.
    const listed = await json<Json[]>(await svc.api(`/api/v1/sessions?reference_dataset=${String(out.dataset.id)}&include_stats=true`));
    expect(listed).toEqual([expect.objectContaining({ id: out.experiment.id, run_count: 3, test_run_number: 1 })]);
  });

  it('rule 2: a dataset_id alone that does not exist gets a generated name; a name alone gets a generated id', async () => {
    const id = randomUUID();
    const res = await upload(body({ dataset_name: undefined, dataset_id: id }));
    expect(res.status).toBe(200);
    const out = await json<{ experiment: Json; dataset: Json }>(res);
    expect(out.dataset.id).toBe(id);
    expect(typeof out.dataset.name).toBe('string');
    expect(String(out.dataset.name)).toContain(id);

    const name = `named-${randomUUID().slice(0, 8)}`;
    const res2 = await upload(body({ dataset_name: name }));
    expect(res2.status).toBe(200);
    const out2 = await json<{ experiment: Json; dataset: Json }>(res2);
    expect(out2.dataset.name).toBe(name);
    expect(out2.dataset.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('rule 4: repeated uploads with the same dataset name or id group the experiments under one dataset, and compare side by side', async () => {
    const rows = [row(0), row(1), row(2)];
    const first = await json<{ experiment: Json; dataset: Json }>(await upload(body({}, rows)));
    const datasetName = String(first.dataset.name);
    const second = body({ dataset_name: datasetName }, rows.map((r, i) => ({ ...r, actual_outputs: { answer: `a${i}` }, evaluation_scores: [{ key: 'correctness', score: 1 }] })));
    const res2 = await upload(second);
    expect(res2.status).toBe(200);
    const out2 = await json<{ experiment: Json; dataset: Json }>(res2);
    expect(out2.dataset.id).toBe(first.dataset.id);
    expect(out2.dataset).toMatchObject({ example_count: 3, session_count: 2 });
    expect(out2.experiment.test_run_number).toBe(2);
    // By id as well.
    const res3 = await upload(body({ dataset_name: undefined, dataset_id: first.dataset.id }, rows.slice(0, 1)));
    expect(res3.status).toBe(200);
    const out3 = await json<{ experiment: Json; dataset: Json }>(res3);
    expect(out3.dataset).toMatchObject({ id: first.dataset.id, example_count: 3, session_count: 3 });
    expect(await datasetsNamed(datasetName)).toHaveLength(1);

    const ids = [String(first.experiment.id), String(out2.experiment.id)];
    await experimentWithStats(ids[0], 3);
    await experimentWithStats(ids[1], 3);
    const cmp = await post(`/api/v1/datasets/${String(first.dataset.id)}/compare`, { session_ids: ids });
    expect(cmp.status).toBe(200);
    const c = await json<{ experiments: Json[]; examples: Json[] }>(cmp);
    expect(c.experiments.map((e) => e.id)).toEqual(ids);
    expect(c.experiments[0].feedback_stats).toMatchObject({ correctness: { n: 3, avg: 2 / 3 } });
    expect(c.experiments[1].feedback_stats).toMatchObject({ correctness: { n: 3, avg: 1 } });
    // Examples in the dataset's order (created_at, then id), the same order as GET /examples.
    const listed = await json<Json[]>(await svc.api(`/api/v1/examples?dataset=${String(first.dataset.id)}`));
    expect(c.examples.map((e) => e.id)).toEqual(listed.map((e) => e.id));
    expect(c.examples.map((e) => e.id).sort()).toEqual(rows.map((r) => String(r.row_id)).sort());
    for (const ex of c.examples) {
      const i = rows.findIndex((r) => r.row_id === ex.id);
      expect(ex).toMatchObject({ inputs: rows[i].inputs, outputs: rows[i].expected_outputs });
      const runs = ex.runs as Json[];
      expect(runs.map((r) => r.session_id)).toEqual(ids);
      expect(runs.map((r) => (r.outputs as Json).answer)).toEqual([i % 2 === 0 ? `a${i}` : 'wrong', `a${i}`]);
      expect((runs[1].feedback as Json[]).map((f) => [f.key, f.score])).toEqual([['correctness', 1]]);
      expect(runs[0].feedback_stats).toMatchObject({ correctness: { n: 1 } });
    }
    // LangSmith's form, paged and filtered by example.
    const page = await post(`/api/v1/datasets/${String(first.dataset.id)}/runs`, { session_ids: ids, limit: 2, offset: 1 });
    expect(page.status).toBe(200);
    expect((await json<Json[]>(page)).map((e) => e.id)).toEqual(listed.slice(1).map((e) => e.id));
    const one = await post(`/api/v1/datasets/${String(first.dataset.id)}/runs`, { session_ids: ids, example_ids: [rows[2].row_id] });
    const oneBody = await json<Json[]>(one);
    expect(oneBody).toHaveLength(1);
    expect((oneBody[0].runs as Json[]).length).toBe(2);
  });

  it('comparison: unknown dataset or experiment, an experiment of another dataset, and an invalid body get clear 4xx', async () => {
    const a = await json<{ experiment: Json; dataset: Json }>(await upload(body()));
    const b = await json<{ experiment: Json; dataset: Json }>(await upload(body()));
    const path = `/api/v1/datasets/${String(a.dataset.id)}/compare`;
    expect((await post(`/api/v1/datasets/${randomUUID()}/compare`, { session_ids: [a.experiment.id] })).status).toBe(404);
    const missing = await post(path, { session_ids: [a.experiment.id, randomUUID()] });
    expect(missing.status).toBe(404);
    const foreign = await post(path, { session_ids: [a.experiment.id, b.experiment.id] });
    expect(foreign.status).toBe(400);
    expect((await json(foreign)).detail).toContain(String(b.experiment.id));
    const bad = await post(path, { session_ids: [] });
    expect(bad.status).toBe(422);
    expect((await json<{ detail: Json[] }>(bad)).detail[0]).toMatchObject({ loc: ['body', 'session_ids'] });
    expect((await post(`/api/v1/datasets/not-a-uuid/runs`, { session_ids: [a.experiment.id] })).status).toBe(422);
  });

  describe('broken rules: a 4xx naming the rule, and nothing of the upload written', () => {
    async function expectNothingWritten(req: Json): Promise<void> {
      const sessions = await json<Json[]>(await svc.api(`/api/v1/sessions?name=${encodeURIComponent(String(req.experiment_name))}`));
      expect(sessions).toEqual([]);
      const rowIds = (req.results as Json[]).map((r) => String(r.row_id));
      for (const id of rowIds) {
        const res = await svc.api(`/api/v1/examples/${id}`);
        expect(res.status).toBe(404);
      }
      if (rowIds.length > 0) expect(await storedRunsFor(rowIds)).toBe(0);
    }

    it('rule 1: a row start or end outside the experiment times → 422 naming rule 1 and the row', async () => {
      const req = body({}, [row(0), row(1, { start_time: '2026-11-22T03:59:59.000000Z' }), row(2, { end_time: '2026-11-22T05:00:00.500000Z' })]);
      const res = await upload(req);
      expect(res.status).toBe(422);
      const detail = (await json<{ detail: Json[] }>(res)).detail;
      expect(detail).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ loc: ['body', 'results', 1, 'start_time'], msg: expect.stringContaining('Rule 1') }),
          expect.objectContaining({ loc: ['body', 'results', 2, 'end_time'], msg: expect.stringContaining('Rule 1') }),
        ]),
      );
      await expectNothingWritten(req);
      expect(await datasetsNamed(String(req.dataset_name))).toEqual([]);
    });

    it('rule 2: neither dataset_id nor dataset_name → 422 naming rule 2', async () => {
      const req = body({ dataset_name: undefined });
      const res = await upload(req);
      expect(res.status).toBe(422);
      expect((await json<{ detail: Json[] }>(res)).detail).toEqual([expect.objectContaining({ loc: ['body', 'dataset_id'], msg: expect.stringContaining('Rule 2') })]);
      await expectNothingWritten(req);
    });

    it('rule 3: a dataset not created by upload (by name or by id) → 400 naming rule 3', async () => {
      const name = `plain-${randomUUID().slice(0, 8)}`;
      const created = await post('/api/v1/datasets', { name, description: 'made by hand' });
      expect(created.status).toBe(200);
      const ds = await json(created);
      for (const ref of [{ dataset_name: name }, { dataset_name: undefined, dataset_id: ds.id }]) {
        const req = body(ref);
        const res = await upload(req);
        expect(res.status).toBe(400);
        expect((await json(res)).detail).toContain('Rule 3');
        await expectNothingWritten(req);
      }
      const after = await json(await svc.api(`/api/v1/datasets/${String(ds.id)}`));
      expect(after).toMatchObject({ example_count: 0, session_count: 0 });
    });

    it('rule 2: dataset_id and dataset_name naming different datasets → 409', async () => {
      const a = await json<{ dataset: Json }>(await upload(body()));
      const b = await json<{ dataset: Json }>(await upload(body()));
      const req = body({ dataset_id: a.dataset.id, dataset_name: b.dataset.name });
      const res = await upload(req);
      expect(res.status).toBe(409);
      expect((await json(res)).detail).toContain('Rule 2');
      await expectNothingWritten(req);
    });

    it('an experiment name already taken → 409, and the dataset is not created', async () => {
      const first = body();
      expect((await upload(first)).status).toBe(200);
      const req = body({ experiment_name: first.experiment_name });
      const res = await upload(req);
      expect(res.status).toBe(409);
      expect((await json(res)).detail).toContain(String(first.experiment_name));
      expect(await datasetsNamed(String(req.dataset_name))).toEqual([]);
      for (const r of req.results as Json[]) expect((await svc.api(`/api/v1/examples/${String(r.row_id)}`)).status).toBe(404);
    });

    it('a row_id that is an example of another dataset → 409, nothing written', async () => {
      const first = body();
      expect((await upload(first)).status).toBe(200);
      const taken = (first.results as Json[])[0];
      const req = body({}, [row(5), { ...row(6), row_id: taken.row_id }]);
      const res = await upload(req);
      expect(res.status).toBe(409);
      expect((await json(res)).detail).toContain(String(taken.row_id));
      const sessions = await json<Json[]>(await svc.api(`/api/v1/sessions?name=${encodeURIComponent(String(req.experiment_name))}`));
      expect(sessions).toEqual([]);
      expect((await svc.api(`/api/v1/examples/${String((req.results as Json[])[0].row_id)}`)).status).toBe(404);
      expect(await datasetsNamed(String(req.dataset_name))).toEqual([]);
    });

    it('a failure after the experiment was created (concurrent uploads creating one new dataset) leaves nothing of the failed upload', async () => {
      const datasetName = `race-${randomUUID().slice(0, 8)}`;
      const reqs = [0, 1, 2].map(() => body({ dataset_name: datasetName }, [row(0), row(1)]));
      const responses = await Promise.all(reqs.map((r) => upload(r)));
      const statuses = responses.map((r) => r.status);
      // All three plan to create the dataset before any commits: one wins, the others fail at its insert.
      expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
      expect(statuses.filter((s) => s === 409).length).toBeGreaterThanOrEqual(1);
      const datasets = await datasetsNamed(datasetName);
      expect(datasets).toHaveLength(1);
      for (const [i, res] of responses.entries()) {
        if (res.status === 200) continue;
        expect(res.status).toBe(409);
        expect((await json(res)).detail).toContain(datasetName);
        await expectNothingWritten(reqs[i]);
      }
      const winners = responses.filter((r) => r.status === 200).length;
      const sessions = await json<Json[]>(await svc.api(`/api/v1/sessions?reference_dataset=${String(datasets[0].id)}`));
      expect(sessions).toHaveLength(winners);
      expect(datasets[0]).toMatchObject({ example_count: 2 * winners, session_count: winners });
    });

    it('invalid bodies → 422 {detail:[{loc,msg,type}]}: missing fields, bad times, duplicate row ids, feedback breaking its config', async () => {
      const cases: [Json, (string | number)[]][] = [
        [{ ...body(), experiment_name: undefined }, ['body', 'experiment_name']],
        [{ ...body(), results: undefined }, ['body', 'results']],
        [{ ...body(), experiment_start_time: 'yesterday' }, ['body', 'experiment_start_time']],
        [body({ experiment_start_time: END, experiment_end_time: START }), ['body', 'experiment_end_time']],
        [body({}, [row(0), { ...row(1), row_id: 'not-a-uuid' }]), ['body', 'results', 1, 'row_id']],
        [body({}, [row(0, { inputs: undefined })]), ['body', 'results', 0, 'inputs']],
        [body({}, [row(3, { end_time: at(2) })]), ['body', 'results', 0, 'end_time']],
        [body({}, [row(0, { evaluation_scores: [{ key: 'x', score: 5, feedback_config: { type: 'continuous', min: 0, max: 1 } }] })]), ['body', 'results', 0, 'evaluation_scores', 0, 'score']],
        [body({ summary_experiment_scores: [{ score: 1 }] }), ['body', 'summary_experiment_scores', 0, 'key']],
      ];
      const dup = row(0);
      cases.push([body({}, [dup, { ...row(1), row_id: dup.row_id }]), ['body', 'results', 1, 'row_id']]);
      for (const [req, loc] of cases) {
        const res = await upload(req);
        expect(res.status).toBe(422);
        const detail = (await json<{ detail: { loc: unknown[]; msg: string; type: string }[] }>(res)).detail;
        expect(detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc, msg: expect.any(String), type: expect.any(String) })]));
        if (typeof req.experiment_name === 'string') await expectNothingWritten({ ...req, results: ((req.results as Json[] | undefined) ?? []).filter((r) => typeof r.row_id === 'string' && /^[0-9a-f-]{36}$/.test(r.row_id)) });
      }
      const notJson = await svc.api('/api/v1/datasets/upload-experiment', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[1,2]' });
      expect(notJson.status).toBe(422);
    });
  });

  it('records create_experiment_via_upload in the audit log, Success and Failure', async () => {
    const ok = await json<{ experiment: Json; dataset: Json }>(await upload(body()));
    const bad = await upload(body({ dataset_name: undefined }));
    expect(bad.status).toBe(422);
    const rule3Name = `plain-${randomUUID().slice(0, 8)}`;
    expect((await post('/api/v1/datasets', { name: rule3Name })).status).toBe(200);
    expect((await upload(body({ dataset_name: rule3Name }))).status).toBe(400);
    type Event = { status: string; api: { operation: string }; resources: { uid: string; type: string }[] };
    let items: Event[] = [];
    for (let i = 0; i < 50; i++) {
      const res = await svc.api('/api/v1/audit-logs?operations=create_experiment_via_upload&limit=100', { headers: { 'x-organization-id': svc.organizationId } });
      expect(res.status).toBe(200);
      items = (await json<{ items: Event[] }>(res)).items;
      if (items.some((e) => e.status === 'Failure') && items.some((e) => e.resources.some((x) => x.uid === ok.experiment.id))) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const success = items.find((e) => e.resources.some((x) => x.uid === ok.experiment.id));
    expect(success).toMatchObject({ status: 'Success', api: { operation: 'create_experiment_via_upload' } });
    expect(success?.resources).toEqual([
      { uid: ok.experiment.id, type: 'tracer_session' },
      { uid: ok.dataset.id, type: 'dataset' },
    ]);
    expect(items.filter((e) => e.status === 'Failure').length).toBeGreaterThanOrEqual(1);
  });
});
