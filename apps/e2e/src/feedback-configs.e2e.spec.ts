import { randomUUID } from 'node:crypto';
import { api, eventually, type Json, useSharedCluster } from './cluster-client';

/** Feedback configs in the cluster form: the gateway routes /feedback-configs to ingest, which stores them and enforces them on POST /feedback. */
describe('feedback configs in the cluster form', () => {
  let call: ReturnType<typeof api>;
  useSharedCluster((_cluster, a) => (call = a));

  it('a stored config is listed through the gateway and enforced on feedback without its own', async () => {
    const key = `fc-cluster-${randomUUID().slice(0, 8)}`;
    const created = await call('/api/v1/feedback-configs', { method: 'POST', json: { feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 1 } } });
    expect(created.status).toBe(200);
    const listed = (await (await call(`/api/v1/feedback-configs?key=${key}`)).json()) as Json[];
    expect(listed).toEqual([expect.objectContaining({ feedback_key: key, feedback_config: { type: 'continuous', min: 0, max: 1 } })]);
    expect((await call('/api/v1/feedback-configs', { method: 'POST', json: { feedback_key: key } })).status).toBe(422);

    const runId = randomUUID();
    const bad = await call('/api/v1/feedback', { method: 'POST', json: { run_id: runId, key, score: 3 } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: unknown[] }[] }).detail[0].loc).toEqual(['body', 'score']);
    expect((await call('/api/v1/feedback', { method: 'POST', json: { run_id: runId, key, score: 1 } })).status).toBe(200);
    // the later good write is visible through query, so the refused one would have been too
    const seen = await eventually(async () => (await (await call(`/api/v1/feedback?run=${runId}`)).json()) as Json[], (l) => l.length > 0);
    expect(seen.map((f) => [f.key, f.score])).toEqual([[key, 1]]);

    expect((await call(`/api/v1/feedback-configs?feedback_key=${key}`, { method: 'DELETE' })).status).toBe(200);
    expect((await (await call(`/api/v1/feedback-configs?key=${key}`)).json()) as Json[]).toEqual([]);
  });
});
