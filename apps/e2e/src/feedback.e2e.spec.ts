import { randomUUID } from 'node:crypto';
import { multipartBody } from '@th/testing';
import { api, eventually, makeRun, type Json, useSharedCluster } from './cluster-client';

/** Feedback in the cluster form: writes through the gateway to ingest and Kafka `feedback`, reads from query. */
describe('feedback in the cluster form', () => {
  let call: ReturnType<typeof api>;
  useSharedCluster((_cluster, a) => (call = a));

  const stats = async (runId: string) => ((await (await call(`/api/v1/runs/${runId}`)).json()) as Json).feedback_stats as Record<string, Json> | null;

  it('POST /feedback and multipart feedback parts go over Kafka to ClickHouse; query reads them and their stats', async () => {
    const run = makeRun('fb-cluster', 0);
    expect((await call('/api/v1/runs/batch', { method: 'POST', json: { post: [run.post], patch: [run.patch] } })).status).toBe(202);
    const created = await call('/api/v1/feedback', { method: 'POST', json: { run_id: run.id, key: 'correctness', score: 1, feedbackConfig: { type: 'continuous', min: 0, max: 1 } } });
    expect(created.status).toBe(200);
    const fbId = ((await created.json()) as Json).id as string;
    const partId = randomUUID();
    const mp = multipartBody([{ name: `feedback.${partId}`, data: { run_id: run.id, trace_id: run.id, key: 'correctness', score: 0 } }]);
    expect((await call('/api/v1/runs/multipart', { method: 'POST', body: mp.body, headers: { 'content-type': mp.contentType } })).status).toBe(202);

    const listed = await eventually(
      async () => (await (await call(`/api/v1/feedback?run=${run.id}`)).json()) as Json[],
      (l) => l.length === 2,
    );
    expect(listed.map((f) => f.id).sort()).toEqual([fbId, partId].sort());
    const s = await eventually(() => stats(run.id), (v) => v?.correctness?.n === 2);
    expect(s?.correctness).toMatchObject({ n: 2, avg: 0.5 });
    const q = await call('/api/v1/runs/query', { method: 'POST', json: { id: [run.id], filter: 'and(eq(feedback_key, "correctness"), gte(feedback_score, 0.5))' } });
    expect(((await q.json()) as { runs: Json[] }).runs.map((r) => r.id)).toEqual([run.id]);

    // PATCH and DELETE are served by ingest and read back through query
    const patched = await call(`/api/v1/feedback/${fbId}`, { method: 'PATCH', json: { score: 0.5 } });
    expect(patched.status).toBe(200);
    expect((await eventually(() => stats(run.id), (v) => v?.correctness?.avg === 0.25))?.correctness).toMatchObject({ n: 2, avg: 0.25 });
    expect((await call(`/api/v1/feedback/${partId}`, { method: 'DELETE' })).status).toBe(200);
    expect((await eventually(() => stats(run.id), (v) => v?.correctness?.n === 1))?.correctness).toMatchObject({ n: 1, avg: 0.5 });
    expect((await eventually(() => call(`/api/v1/feedback/${partId}`).then((r) => r.status), (st) => st === 404))).toBe(404);
  });

  it('a score outside its config gets a 422 at ingest and writes nothing', async () => {
    const runId = randomUUID();
    const bad = await call('/api/v1/feedback', { method: 'POST', json: { run_id: runId, key: 'k', score: 2, feedback_config: { type: 'continuous', min: 0, max: 1 } } });
    expect(bad.status).toBe(422);
    expect(((await bad.json()) as { detail: { loc: unknown[] }[] }).detail[0].loc).toEqual(['body', 'score']);
    const ok = await call('/api/v1/feedback', { method: 'POST', json: { run_id: runId, key: 'marker', score: 1 } });
    expect(ok.status).toBe(200);
    // the later good write is visible, so the rejected one would have been too
    const seen = await eventually(async () => (await (await call(`/api/v1/feedback?run=${runId}`)).json()) as Json[], (l) => l.length > 0);
    expect(seen.map((f) => f.key)).toEqual(['marker']);
  });
});
