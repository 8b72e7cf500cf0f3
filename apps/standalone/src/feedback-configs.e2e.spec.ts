import { randomUUID } from 'node:crypto';
import { IdentityService, routeFor } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, any>;

/** Feedback configs of a workspace (GET/POST/PATCH/DELETE /feedback-configs) and their enforcement on POST /feedback. */
describe('feedback configs through the standalone service', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone();
  });
  afterAll(async () => {
    await svc?.close();
  });

  const json = async (res: Response): Promise<Json> => (await res.json()) as Json;
  const send = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
    svc.api(path, { method, ...(body !== undefined ? { json: body } : {}), headers });
  const list = async (query = '', headers: Record<string, string> = {}): Promise<Json[]> => {
    const res = await svc.api(`/api/v1/feedback-configs${query}`, { headers });
    expect(res.status).toBe(200);
    return (await res.json()) as Json[];
  };
  const expect422 = async (res: Response, loc: string) => {
    expect(res.status).toBe(422);
    const body = await json(res);
    for (const d of body.detail) expect(d).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    expect(body.detail.map((d: Json) => d.loc.join('.'))).toContain(loc);
    return body;
  };

  it('routes /feedback-configs to ingest in the cluster form', () => {
    const up = { ingest: 'http://i', query: 'http://q' };
    for (const m of ['GET', 'POST', 'PATCH', 'DELETE']) expect(routeFor(m, '/api/v1/feedback-configs', up)).toBe('http://i');
  });

  it('creates, lists, filters, updates and deletes a workspace config; an identical create is idempotent, a different one 409', async () => {
    const key = `fc-${randomUUID().slice(0, 8)}`;
    const created = await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 1 }, is_lower_score_better: false });
    expect(created.status).toBe(200);
    const rec = await json(created);
    expect(rec).toEqual({
      feedback_key: key,
      feedback_config: { type: 'continuous', min: 0, max: 1 },
      tenant_id: svc.workspaceId,
      modified_at: expect.stringMatching(/Z$/),
      is_lower_score_better: false,
    });
    expect((await list()).map((c) => c.feedback_key)).toContain(key);
    expect((await list(`?key=${key}`)).map((c) => c.feedback_key)).toEqual([key]);
    expect(await list(`?key=${key}-none`)).toEqual([]);

    const again = await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 1 } });
    expect(again.status).toBe(200);
    expect((await json(again)).modified_at).toBe(rec.modified_at);
    const different = await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 5 } });
    expect(different.status).toBe(409);
    expect((await list(`?key=${key}`))[0].feedback_config).toEqual({ type: 'continuous', min: 0, max: 1 });

    const patched = await send('PATCH', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 10 }, is_lower_score_better: true });
    expect(patched.status).toBe(200);
    expect(await json(patched)).toMatchObject({ feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 10 }, is_lower_score_better: true });
    expect((await list(`?key=${key}`))[0]).toMatchObject({ feedback_config: { max: 10 }, is_lower_score_better: true });
    // The same feedback_config again returns the stored config unchanged, is_lower_score_better included.
    const same = await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 10 }, is_lower_score_better: false });
    expect(same.status).toBe(200);
    expect(await json(same)).toMatchObject({ feedback_config: { max: 10 }, is_lower_score_better: true });

    expect((await send('DELETE', `/api/v1/feedback-configs?feedback_key=${key}`)).status).toBe(200);
    expect(await list(`?key=${key}`)).toEqual([]);
    expect((await send('DELETE', `/api/v1/feedback-configs?feedback_key=${key}`)).status).toBe(404);
    expect((await send('PATCH', '/api/v1/feedback-configs', { feedback_key: key, is_lower_score_better: false })).status).toBe(404);
    // a deleted key can be created again
    expect((await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'freeform' } })).status).toBe(200);
    expect((await list(`?key=${key}`))[0].feedback_config).toEqual({ type: 'freeform' });
  });

  it('pages with limit and offset and filters by name_contains, as the Python SDK asks (list_feedback_configs)', async () => {
    const prefix = `fcpage${randomUUID().slice(0, 6)}`;
    for (const k of ['a', 'b', 'c']) {
      expect((await send('POST', '/api/v1/feedback-configs', { feedback_key: `${prefix}-${k}`, feedback_config: { type: 'freeform' } })).status).toBe(200);
    }
    const page = async (limit: number, offset: number) =>
      (await list(`?name_contains=${prefix.toUpperCase()}&limit=${limit}&offset=${offset}`)).map((c) => c.feedback_key);
    expect(await page(2, 0)).toEqual([`${prefix}-a`, `${prefix}-b`]);
    expect(await page(2, 2)).toEqual([`${prefix}-c`]);
    expect(await page(2, 4)).toEqual([]);
    expect((await list(`?key=${prefix}-b&limit=100&offset=0`)).map((c) => c.feedback_key)).toEqual([`${prefix}-b`]);
  });

  it('refuses bad inputs with 422 and writes nothing', async () => {
    const before = await list();
    const key = `fc-bad-${randomUUID().slice(0, 8)}`;
    await expect422(await send('POST', '/api/v1/feedback-configs', {}), 'body.feedback_key');
    await expect422(await send('POST', '/api/v1/feedback-configs', { feedback_key: key }), 'body.feedback_config');
    await expect422(await send('POST', '/api/v1/feedback-configs', { feedback_key: '', feedback_config: { type: 'freeform' } }), 'body.feedback_key');
    await expect422(await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'stars' } }), 'body.feedback_config.type');
    await expect422(await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 2, max: 1 } }), 'body.feedback_config');
    await expect422(await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'categorical', categories: [] } }), 'body.feedback_config');
    await expect422(await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'freeform' }, extra: 1 }), 'body');
    await expect422(await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'freeform' }, is_lower_score_better: 'yes' }), 'body.is_lower_score_better');
    const malformed = await svc.api('/api/v1/feedback-configs', { method: 'POST', body: '{"feedback_key":', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(422);
    await expect422(await send('PATCH', '/api/v1/feedback-configs', { feedback_config: { type: 'freeform' } }), 'body.feedback_key');
    await expect422(await send('DELETE', '/api/v1/feedback-configs'), 'query.feedback_key');
    await expect422(await svc.api('/api/v1/feedback-configs?limit=abc'), 'query.limit');
    await expect422(await svc.api('/api/v1/feedback-configs?limit=101'), 'query.limit');
    await expect422(await svc.api('/api/v1/feedback-configs?offset=-1'), 'query.offset');
    expect(await list()).toEqual(before);
  });

  it('POST /feedback without its own feedback_config is held to the stored config of its key; PATCH too', async () => {
    const key = `fc-enf-${randomUUID().slice(0, 8)}`;
    const runId = randomUUID();
    expect((await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 1 } })).status).toBe(200);

    const bad = await expect422(await send('POST', '/api/v1/feedback', { run_id: runId, key, score: 2 }), 'body.score');
    expect(bad.detail[0].msg).toContain('stored feedback config');
    const ok = await send('POST', '/api/v1/feedback', { run_id: runId, key, score: 0.5 });
    expect(ok.status).toBe(200);
    const fb = await json(ok);
    // feedback carrying its own config is checked against that one
    expect((await send('POST', '/api/v1/feedback', { run_id: runId, key, score: 5, feedback_config: { type: 'continuous', min: 0, max: 10 } })).status).toBe(200);
    // another key is unconstrained
    expect((await send('POST', '/api/v1/feedback', { run_id: runId, key: `${key}-other`, score: 99 })).status).toBe(200);
    // PATCH of stored feedback is held to it as well
    await expect422(await send('PATCH', `/api/v1/feedback/${fb.id}`, { score: 3 }), 'body.score');

    const stored = (await (await svc.api(`/api/v1/feedback?run=${runId}`)).json()) as Json[];
    expect(stored.map((f) => [f.key, f.score]).sort()).toEqual([
      [key, 0.5],
      [key, 5],
      [`${key}-other`, 99],
    ].sort());

    // categorical: score and value must be among the categories
    const cat = `${key}-cat`;
    expect((await send('POST', '/api/v1/feedback-configs', { feedback_key: cat, feedback_config: { type: 'categorical', categories: [{ value: 0, label: 'bad' }, { value: 1, label: 'good' }] } })).status).toBe(200);
    await expect422(await send('POST', '/api/v1/feedback', { run_id: runId, key: cat, score: 0.5 }), 'body.score');
    await expect422(await send('POST', '/api/v1/feedback', { run_id: runId, key: cat, value: 'meh' }), 'body.value');
    expect((await send('POST', '/api/v1/feedback', { run_id: runId, key: cat, score: 1, value: 'good' })).status).toBe(200);

    // once the config is deleted, the key is free again
    expect((await send('DELETE', `/api/v1/feedback-configs?feedback_key=${key}`)).status).toBe(200);
    expect((await send('POST', '/api/v1/feedback', { run_id: runId, key, score: 2 })).status).toBe(200);
  });

  it('configs belong to one workspace', async () => {
    const key = `fc-ws-${randomUUID().slice(0, 8)}`;
    expect((await send('POST', '/api/v1/feedback-configs', { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 1 } })).status).toBe(200);
    const other = await svc.app.get(IdentityService).createOrganization({ name: `fc-${randomUUID()}`, plan: 'enterprise' });
    const headers = { 'x-api-key': other.api_key };
    expect(await list(`?key=${key}`, headers)).toEqual([]);
    expect((await send('POST', '/api/v1/feedback', { run_id: randomUUID(), key, score: 2 }, headers)).status).toBe(200);
    expect((await send('DELETE', `/api/v1/feedback-configs?feedback_key=${key}`, undefined, headers)).status).toBe(404);
    expect((await list(`?key=${key}`)).length).toBe(1);
  });
});
