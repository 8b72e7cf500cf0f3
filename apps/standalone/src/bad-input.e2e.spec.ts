import { randomUUID } from 'node:crypto';
import { multipartBody } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
type Init = { method?: string; json?: unknown; body?: string; headers?: Record<string, string> };

const T0 = '2026-11-22T04:04:29.623001Z';
const NUL = 'a\u0000b';
const LONE = 'a\ud800b';
// What the service must not roll over into another instant: day 30 of February, hour 25, year 0.
const OFF_CALENDAR = ['2024-02-30T00:00:00.000000Z', '2023-02-29T12:00:00Z', '2024-01-01T25:00:00Z', '0000-01-01T00:00:00Z', '2024-01-01 23:60:00'];

/** Every bad input of issue 27 point 7 through the real routes: a 4xx in the spec's shape, and nothing written. */
describe('bad input through the standalone service', () => {
  let svc: TestStandalone;
  /** A key of an organization-wide service key and the id of a second workspace: another tenant. */
  let other: { key: string; tenant: string };

  beforeAll(async () => {
    svc = await startTestStandalone({ DEFAULT_ORG_FEATURE_CAN_USE_AUDIT_LOGS: 'true' });
    const ws = (await (await svc.api('/api/v1/workspaces', { method: 'POST', json: { name: 'Other tenant' } })).json()) as Json;
    const sk = (await (await svc.api('/api/v1/service-keys', { method: 'POST', json: { workspace_id: null, description: 'other' } })).json()) as Json;
    other = { key: sk.key as string, tenant: ws.id as string };
  });
  afterAll(async () => {
    await svc?.close();
  });

  const call = (path: string, init: Init = {}) =>
    svc.api(path, { method: init.method ?? (init.json !== undefined || init.body !== undefined ? 'POST' : 'GET'), json: init.json, body: init.body, headers: init.headers });
  const asOther = (path: string, init: Init = {}) => call(path, { ...init, headers: { 'x-api-key': other.key, 'x-tenant-id': other.tenant, ...init.headers } });
  const post = (path: string, json: unknown) => call(path, { json });
  const postRaw = (path: string, body: string) => call(path, { body, headers: { 'content-type': 'application/json' } });

  async function json<T = Json>(res: Response, status: number): Promise<T> {
    const text = await res.text();
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }

  /** A 422 in the spec's shape whose items include one at `loc` of `type`. */
  async function expect422(res: Response, loc: (string | number)[], type: string): Promise<void> {
    const body = await json<{ detail: { loc: (string | number)[]; msg: string; type: string }[] }>(res, 422);
    expect(Array.isArray(body.detail)).toBe(true);
    for (const d of body.detail) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    expect(body.detail).toContainEqual(expect.objectContaining({ loc, type }));
  }

  const names = async (path: string) => (await json<Json[]>(await call(path), 200)).map((x) => x.name);
  const datasetNamed = async (name: string) => (await json<Json[]>(await call(`/api/v1/datasets?name=${encodeURIComponent(name)}`), 200)).length;
  const sessionNamed = async (name: string) => (await json<Json[]>(await call(`/api/v1/sessions?name=${encodeURIComponent(name)}`), 200)).length;
  const examplesOf = async (datasetId: string) => (await json<Json[]>(await call(`/api/v1/examples?dataset=${datasetId}`), 200)).length;
  const feedbackOf = async (runId: string) => (await json<Json[]>(await call(`/api/v1/feedback?run=${runId}`), 200)).length;

  async function newDataset(): Promise<string> {
    return (await json(await post('/api/v1/datasets', { name: `ds-${randomUUID()}` }), 200)).id as string;
  }

  async function storedRun(id: string): Promise<Json> {
    for (let i = 0; i < 100; i++) {
      const res = await call(`/api/v1/runs/${id}`);
      if (res.status === 200) return (await res.json()) as Json;
      await res.body?.cancel();
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`run ${id} was not stored within 10 s`);
  }

  /** A run of the caller's own, posted after a refused one and waited for: the writer has caught up with it. */
  async function writerCaughtUp(): Promise<void> {
    await newRun();
  }

  async function newRun(): Promise<string> {
    const id = randomUUID();
    expect((await post('/api/v1/runs', { id, name: 'r', run_type: 'chain', start_time: T0, inputs: { q: 1 } })).status).toBe(202);
    await storedRun(id);
    return id;
  }

  const upload = (name: string, dataset: string, row: Json, extra: Json = {}) =>
    post('/api/v1/datasets/upload-experiment', {
      experiment_name: name,
      dataset_name: dataset,
      experiment_start_time: T0,
      experiment_end_time: '2026-11-22T05:04:29.623001Z',
      results: [{ row_id: randomUUID(), inputs: { q: 'x' }, expected_outputs: {}, actual_outputs: {}, start_time: T0, end_time: T0, run_name: 't', ...row }],
      ...extra,
    });

  describe.each([
    ['a NUL character', NUL, 'string_nul_character'],
    ['a lone surrogate', LONE, 'string_unicode'],
  ])('%s in a JSON value or key', (_what, bad, type) => {
    it('datasets: 422 at the field or key, no dataset', async () => {
      const name = `ds-${randomUUID()}`;
      await expect422(await post('/api/v1/datasets', { name: `${name}${bad}` }), ['body', 'name'], type);
      await expect422(await post('/api/v1/datasets', { name, extra: { metadata: { [bad]: 1 } } }), ['body', 'extra', 'metadata', bad], type);
      await expect422(await post('/api/v1/datasets', { name, description: bad }), ['body', 'description'], type);
      expect(await datasetNamed(name)).toBe(0);
      expect((await names('/api/v1/datasets?name_contains=ds-')).some((n) => String(n).startsWith(name))).toBe(false);
    });

    it('examples and examples/bulk: 422 at the field or key, no example (the valid ones of the batch included)', async () => {
      const ds = await newDataset();
      await expect422(await post('/api/v1/examples', { dataset_id: ds, inputs: { q: bad } }), ['body', 'inputs', 'q'], type);
      await expect422(await post('/api/v1/examples', { dataset_id: ds, inputs: { q: 1 }, outputs: { [bad]: 1 } }), ['body', 'outputs', bad], type);
      await expect422(
        await post('/api/v1/examples/bulk', [
          { dataset_id: ds, inputs: { q: 'fine' } },
          { dataset_id: ds, inputs: { q: 'fine' }, metadata: { list: ['x', bad] } },
        ]),
        ['body', 1, 'metadata', 'list', 1],
        type,
      );
      expect(await examplesOf(ds)).toBe(0);
    });

    it('upload-experiment: 422 at the row, no experiment, dataset or example', async () => {
      const [experiment, dataset] = [`exp-${randomUUID()}`, `ds-${randomUUID()}`];
      await expect422(await upload(experiment, dataset, { inputs: { q: bad } }), ['body', 'results', 0, 'inputs', 'q'], type);
      await expect422(await upload(experiment, dataset, { actual_outputs: { [bad]: 1 } }), ['body', 'results', 0, 'actual_outputs', bad], type);
      await expect422(await upload(experiment, dataset, {}, { experiment_metadata: { note: bad } }), ['body', 'experiment_metadata', 'note'], type);
      expect(await sessionNamed(experiment)).toBe(0);
      expect(await datasetNamed(dataset)).toBe(0);
    });

    it('feedback: 422 at the field or key, no feedback', async () => {
      const run = await newRun();
      await expect422(await post('/api/v1/feedback', { run_id: run, key: 'k', comment: bad }), ['body', 'comment'], type);
      await expect422(await post('/api/v1/feedback', { run_id: run, key: 'k', correction: { [bad]: 1 } }), ['body', 'correction', bad], type);
      await expect422(await post('/api/v1/feedback', { run_id: run, key: `k${bad}` }), ['body', 'key'], type);
      expect(await feedbackOf(run)).toBe(0);
    });

    it('model price map: 422 at the field, no entry', async () => {
      const name = `price-${randomUUID()}`;
      await expect422(await post('/api/v1/model-price-map', { name: `${name}${bad}`, match_pattern: '^x$', prompt_cost: 1, completion_cost: 1 }), ['body', 'name'], type);
      await expect422(await post('/api/v1/model-price-map', { name, match_pattern: `^x${bad}$`, prompt_cost: 1, completion_cost: 1 }), ['body', 'match_pattern'], type);
      expect((await names('/api/v1/model-price-map')).some((n) => String(n).startsWith(name))).toBe(false);
    });

    it('sessions and query parameters: 422, no project', async () => {
      const name = `s-${randomUUID()}`;
      await expect422(await post('/api/v1/sessions', { name: `${name}${bad}` }), ['body', 'name'], type);
      await expect422(await post('/api/v1/sessions', { name, extra: { [bad]: bad } }), ['body', 'extra', bad], type);
      expect(await sessionNamed(name)).toBe(0);
      if (bad === NUL) await expect422(await call(`/api/v1/sessions?name_contains=${encodeURIComponent(bad)}`), ['query', 'name_contains'], type);
    });
  });

  it.each([
    ['a NUL character', NUL, 'string_nul_character'],
    ['a lone surrogate', LONE, 'string_unicode'],
  ])('a multipart feedback part with %s: 422 for the whole request, neither the run nor the feedback written', async (_what, bad, type) => {
    const runId = randomUUID();
    const fbId = randomUUID();
    const { body, contentType } = multipartBody([
      { name: `post.${runId}`, data: { id: runId, name: 'mp', run_type: 'chain', start_time: T0, trace_id: runId, dotted_order: `20261122T040429623001Z${runId}` } },
      { name: `feedback.${fbId}`, data: { run_id: runId, key: 'k', comment: bad } },
    ]);
    await expect422(await call('/api/v1/runs/multipart', { body: body.toString('utf8'), headers: { 'content-type': contentType } }), ['body', `feedback.${fbId}`, 'comment'], type);
    await writerCaughtUp();
    expect((await call(`/api/v1/feedback/${fbId}`)).status).toBe(404);
    expect((await call(`/api/v1/runs/${runId}`)).status).toBe(404);
  });

  it('a CSV upload with a NUL in a cell: 422 at the file, no dataset', async () => {
    const name = `csv-${randomUUID()}`;
    const { body, contentType } = multipartBody([
      { name: 'file', data: Buffer.from(`q,a\nfine,ok\nx${NUL},y\n`), filename: 'data.csv', contentType: 'text/csv' },
      { name: 'input_keys', data: Buffer.from('q'), contentType: 'text/plain' },
      { name: 'name', data: Buffer.from(name), contentType: 'text/plain' },
    ]);
    await expect422(await call('/api/v1/datasets/upload', { body: body.toString('latin1'), headers: { 'content-type': contentType } }), ['body', 'file'], 'string_nul_character');
    expect(await datasetNamed(name)).toBe(0);
  });

  it('runs keep their strings as sent: a NUL in a value and a key is stored and read back', async () => {
    const id = randomUUID();
    expect((await post('/api/v1/runs', { id, name: 'r', run_type: 'chain', start_time: T0, inputs: { q: NUL, [NUL]: 1 } })).status).toBe(202);
    expect((await storedRun(id)).inputs).toEqual({ q: NUL, [NUL]: 1 });
  });

  it('5,000 levels of nesting on feedback, datasets and examples: 422, nothing written', async () => {
    const deep = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    const run = await newRun();
    const ds = await newDataset();
    const name = `deep-${randomUUID()}`;
    // The body reader refuses the text before it is parsed: loc names the offset of the bracket past the bound.
    const tooDeep = async (path: string, raw: string, field: string) => {
      const body = await json<{ detail: { loc: (string | number)[]; type: string }[] }>(await postRaw(path, raw), 422);
      expect(body.detail[0].type).toBe('json_too_deep');
      const [where, offset] = body.detail[0].loc;
      expect(where).toBe('body');
      expect(offset).toBeGreaterThan(raw.indexOf(`"${field}":`));
    };
    await tooDeep('/api/v1/feedback', `{"run_id":"${run}","key":"k","correction":${deep(5000)}}`, 'correction');
    await tooDeep('/api/v1/datasets', `{"name":"${name}","extra":${deep(5000)}}`, 'extra');
    await tooDeep('/api/v1/examples', `{"dataset_id":"${ds}","inputs":${deep(5000)}}`, 'inputs');
    expect(await feedbackOf(run)).toBe(0);
    expect(await datasetNamed(name)).toBe(0);
    expect(await examplesOf(ds)).toBe(0);
    // Ordinary nesting is untouched.
    expect((await postRaw('/api/v1/examples', `{"dataset_id":"${ds}","inputs":${deep(50)}}`)).status).toBe(200);
  });

  it('POST /runs/query and /runs/stats with a 1 MB value: 422 at the field; a large query within the bound still answers', async () => {
    const mb = 'x'.repeat(1_000_000);
    await expect422(await post('/api/v1/runs/query', { metadata: { k: mb } }), ['body', 'metadata'], 'string_too_long');
    await expect422(await post('/api/v1/runs/query', { query: mb }), ['body', 'query'], 'string_too_long');
    await expect422(await post('/api/v1/runs/query', { tags: Array.from({ length: 100 }, () => mb.slice(0, 10_000)) }), ['body', 'tags'], 'string_too_long');
    await expect422(await post('/api/v1/runs/stats', { metadata: { k: mb } }), ['body', 'metadata'], 'string_too_long');
    // 1,000 ids (the page size) with a 20,000-character text: one quote in five doubles when inlined.
    const ids = Array.from({ length: 1000 }, () => randomUUID());
    const res = await post('/api/v1/runs/query', { id: ids, query: "x''y'".repeat(4000), limit: 10 });
    expect((await json<{ runs: Json[] }>(res, 200)).runs).toEqual([]);
  });

  it('GET /audit-logs with times off the calendar: 422 at the parameter', async () => {
    const headers = { 'x-organization-id': svc.organizationId };
    await expect422(await call('/api/v1/audit-logs?start_time=0000-01-01T00:00:00Z', { headers }), ['query', 'start_time'], 'custom');
    await expect422(await call('/api/v1/audit-logs?end_time=2024-02-30T00:00:00Z', { headers }), ['query', 'end_time'], 'custom');
    expect((await call('/api/v1/audit-logs?start_time=2024-02-29T00:00:00Z', { headers })).status).toBe(200);
  });

  it.each(OFF_CALENDAR)('timestamp %s is refused with a 422, not rolled over, and nothing is written', async (t) => {
    const runId = randomUUID();
    await expect422(await post('/api/v1/runs', { id: runId, name: 'r', run_type: 'chain', start_time: t }), ['body', 'start_time'], 'custom');
    await expect422(
      await post('/api/v1/runs/batch', { post: [{ id: randomUUID(), name: 'r', run_type: 'chain', start_time: T0, end_time: t }] }),
      ['body', 'post', 0, 'end_time'],
      'custom',
    );
    const session = `s-${randomUUID()}`;
    await expect422(await post('/api/v1/sessions', { name: session, start_time: t }), ['body', 'start_time'], 'custom');
    const dataset = `ds-${randomUUID()}`;
    await expect422(await post('/api/v1/datasets', { name: dataset, created_at: t }), ['body', 'created_at'], 'custom');
    const ds = await newDataset();
    await expect422(await post('/api/v1/examples', { dataset_id: ds, inputs: { q: 1 }, created_at: t }), ['body', 'created_at'], 'custom');
    const price = `price-${randomUUID()}`;
    await expect422(await post('/api/v1/model-price-map', { name: price, match_pattern: '^x$', prompt_cost: 1, completion_cost: 1, start_time: t }), ['body', 'start_time'], 'custom');
    expect(await sessionNamed(session)).toBe(0);
    expect(await datasetNamed(dataset)).toBe(0);
    expect(await examplesOf(ds)).toBe(0);
    expect((await names('/api/v1/model-price-map')).includes(price)).toBe(false);
    await writerCaughtUp();
    expect((await call(`/api/v1/runs/${runId}`)).status).toBe(404);
  });

  it('a valid leap day and the ends of the supported years are kept as sent', async () => {
    const id = randomUUID();
    expect((await post('/api/v1/runs', { id, name: 'r', run_type: 'chain', start_time: '2024-02-29T23:59:59.999999Z', end_time: '2299-12-31T23:59:59Z' })).status).toBe(202);
    const run = await storedRun(id);
    expect(run.start_time).toBe('2024-02-29T23:59:59.999999Z');
    expect(run.end_time).toBe('2299-12-31T23:59:59.000000Z');
    const s = await json(await post('/api/v1/sessions', { name: `s-${randomUUID()}`, start_time: '1900-01-01T00:00:00Z' }), 200);
    expect(String(s.start_time).startsWith('1900-01-01T00:00:00')).toBe(true);
  });

  it('POST /sessions with an id of the workspace: 409 {detail}, the project unchanged', async () => {
    const first = await json(await post('/api/v1/sessions', { name: `s-${randomUUID()}`, description: 'first' }), 200);
    const again = await json<{ detail: string }>(await post('/api/v1/sessions', { id: first.id, name: `s-${randomUUID()}` }), 409);
    expect(again.detail).toEqual(expect.any(String));
    expect(await json(await call(`/api/v1/sessions/${first.id as string}`), 200)).toMatchObject({ name: first.name, description: 'first' });
  });

  it('a dataset id of another workspace is a free id, and the two datasets stay apart in every operation', async () => {
    const id = randomUUID();
    await json(await asOther('/api/v1/datasets', { json: { id, name: `theirs-${randomUUID()}`, description: 'theirs' } }), 200);
    await json(await asOther('/api/v1/examples', { json: { dataset_id: id, inputs: { owner: 'them' }, split: 'theirs' } }), 200);
    expect(await json(await post('/api/v1/datasets', { id, name: `mine-${randomUUID()}` }), 200)).toMatchObject({ id, tenant_id: svc.workspaceId, example_count: 0 });
    expect((await post('/api/v1/datasets', { id, name: `again-${randomUUID()}` })).status).toBe(409);
    const mine = await json(await post('/api/v1/examples', { dataset_id: id, inputs: { owner: 'me' }, split: 'mine' }), 200);
    await json(await post('/api/v1/examples', { dataset_id: id, inputs: { owner: 'me too' } }), 200);

    const both = async (path: string) => [await json(await call(path), 200), await json(await asOther(path), 200)];
    expect(await both(`/api/v1/datasets/${id}/splits`)).toEqual([['base', 'mine'], ['theirs']]);
    expect((await both(`/api/v1/datasets/${id}/versions`)).map((v) => (v as unknown as Json[]).length)).toEqual([3, 2]);
    const owners = (list: unknown) => (list as Json[]).map((e) => (e.inputs as Json).owner).sort();
    const [myExamples, theirExamples] = await both(`/api/v1/examples?dataset=${id}`);
    expect([owners(myExamples), owners(theirExamples)]).toEqual([['me', 'me too'], ['them']]);

    const latest = ((await json<Json[]>(await call(`/api/v1/datasets/${id}/versions`), 200))[0] as Json).as_of as string;
    await json(await call(`/api/v1/datasets/${id}/tags`, { method: 'PUT', json: { as_of: latest, tag: 'prod' } }), 200);
    expect((await asOther(`/api/v1/datasets/${id}/version?tag=prod`)).status).toBe(404);
    await json(await call(`/api/v1/datasets/${id}`, { method: 'PATCH', json: { description: 'mine' } }), 200);
    await json(await call(`/api/v1/examples/${mine.id as string}`, { method: 'DELETE' }), 200);
    expect(await json(await asOther(`/api/v1/datasets/${id}`), 200)).toMatchObject({ description: 'theirs', example_count: 1 });
    await json(await call(`/api/v1/datasets/${id}`, { method: 'DELETE' }), 200);
    expect(await json(await asOther(`/api/v1/datasets/${id}`), 200)).toMatchObject({ description: 'theirs', example_count: 1 });
    expect(owners(await json(await asOther(`/api/v1/examples?dataset=${id}`), 200))).toEqual(['them']);
  });

  it('upload-experiment with a dataset id and row ids of another workspace answers as for free ids', async () => {
    const theirDs = await json(await asOther('/api/v1/datasets', { json: { name: `theirs-${randomUUID()}` } }), 200);
    const theirEx = await json(await asOther('/api/v1/examples', { json: { dataset_id: theirDs.id, inputs: { owner: 'them' } } }), 200);
    const res = await post('/api/v1/datasets/upload-experiment', {
      experiment_name: `exp-${randomUUID()}`,
      dataset_id: theirDs.id,
      experiment_start_time: T0,
      experiment_end_time: '2026-11-22T05:04:29.623001Z',
      results: [{ row_id: theirEx.id, inputs: { owner: 'me' }, expected_outputs: {}, actual_outputs: {}, start_time: T0, end_time: T0, run_name: 't' }],
    });
    const body = await json<{ dataset: Json }>(res, 200);
    expect(body.dataset).toMatchObject({ id: theirDs.id, tenant_id: svc.workspaceId, example_count: 1 });
    expect(await json(await call(`/api/v1/examples/${theirEx.id as string}`), 200)).toMatchObject({ inputs: { owner: 'me' } });
    expect(await json(await asOther(`/api/v1/examples/${theirEx.id as string}`), 200)).toMatchObject({ inputs: { owner: 'them' } });
  });

  it("ids of another workspace are free ids: sessions and examples created with them answer as for a free id", async () => {
    const theirs = await json(await asOther('/api/v1/sessions', { json: { name: 'theirs', description: 'other tenant' } }), 200);
    const mine = await json(await post('/api/v1/sessions', { id: theirs.id, name: `mine-${randomUUID()}` }), 200);
    expect(mine).toMatchObject({ id: theirs.id, tenant_id: svc.workspaceId });
    expect(await json(await asOther(`/api/v1/sessions/${theirs.id as string}`), 200)).toMatchObject({ name: 'theirs', description: 'other tenant' });
    expect((await asOther('/api/v1/sessions', { json: { id: theirs.id, name: 'theirs-2' } })).status).toBe(409);

    const theirDs = await json(await asOther('/api/v1/datasets', { json: { name: `their-ds-${randomUUID()}` } }), 200);
    const theirEx = await json(await asOther('/api/v1/examples', { json: { dataset_id: theirDs.id, inputs: { owner: 'them' } } }), 200);
    const ds = await newDataset();
    const myEx = await json(await post('/api/v1/examples', { id: theirEx.id, dataset_id: ds, inputs: { owner: 'me' } }), 200);
    expect(myEx).toMatchObject({ id: theirEx.id, dataset_id: ds });
    const bulk = await post('/api/v1/examples/bulk', [{ id: theirEx.id, dataset_id: ds, inputs: { owner: 'me again' } }]);
    expect(bulk.status).toBe(409);
    expect(await json(await call(`/api/v1/examples/${theirEx.id as string}`), 200)).toMatchObject({ inputs: { owner: 'me' } });
    expect(await json(await asOther(`/api/v1/examples/${theirEx.id as string}`), 200)).toMatchObject({ inputs: { owner: 'them' }, dataset_id: theirDs.id });
  });
});
