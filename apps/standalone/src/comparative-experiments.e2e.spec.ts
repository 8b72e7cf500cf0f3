import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client, type Run } from 'langsmith';
import { evaluate, evaluateComparative } from 'langsmith/evaluation';
import { EventBus } from '@th/bus';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { IdentityService } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;
const run = promisify(execFile);

/** Comparative (pairwise) experiments and the OpenAI fine-tuning download (issue 32) through the published JS SDK. */
describe('comparative experiments and openai_ft through the standalone service', () => {
  let svc: TestStandalone;
  let client: Client;
  let datasetId: string;
  let experiments: { name: string; id: string }[];
  const audit: AuditRecord[] = [];
  const api = (path: string, init: { method?: string; json?: unknown; key?: string } = {}) =>
    fetch(`${svc.url}/api/v1${path}`, {
      method: init.method ?? 'GET',
      headers: { 'x-api-key': init.key ?? svc.apiKey, ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });

  beforeAll(async () => {
    svc = await startTestStandalone();
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `comparative-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value);
    });
    client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, autoBatchTracing: true, timeout_ms: 20_000 });
    const name = `pairwise-${randomUUID().slice(0, 8)}`;
    const dataset = await client.createDataset(name);
    datasetId = dataset.id;
    await client.createExamples([
      { dataset_id: datasetId, inputs: { messages: [{ role: 'system', content: 'add' }, { type: 'human', data: { content: '1+2' } }] }, outputs: { output: { role: 'assistant', content: '3' } } },
      { dataset_id: datasetId, inputs: { question: '2+2' }, outputs: { answer: '4' } },
    ]);
    experiments = [];
    for (const [prefix, wrong] of [['good', 0], ['bad', 1]] as const) {
      const res = await evaluate(async (inputs: Json) => ({ answer: String(JSON.stringify(inputs).length + wrong) }), { data: name, experimentPrefix: prefix, client });
      await client.awaitPendingTraceBatches();
      const project = await client.readProject({ projectName: res.experimentName });
      experiments.push({ name: res.experimentName, id: project.id });
    }
    // The experiments' runs are readable before the comparison loads them.
    for (const e of experiments) {
      for (let i = 0; i < 50; i++) {
        let n = 0;
        for await (const _ of client.listRuns({ projectId: e.id, isRoot: true })) n++;
        if (n === 2) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  afterAll(async () => {
    await client?.awaitPendingTraceBatches();
    await svc?.close();
  });

  it('evaluateComparative: creates the comparative experiment and writes pairwise feedback on each run', async () => {
    const result = await evaluateComparative(
      experiments.map((e) => e.name),
      {
        client,
        experimentPrefix: 'pairwise',
        metadata: { judge: 'length' },
        evaluators: [({ runs }: { runs: Run[] }) => ({ key: 'preference', scores: Object.fromEntries(runs.map((r, i) => [r.id, i === 0 ? 1 : 0])) })],
      },
    );
    await client.awaitPendingTraceBatches();
    expect(result.results).toHaveLength(2);
    const cmp = result.comparativeExperiment as unknown as Json;
    expect(cmp).toMatchObject({ reference_dataset_id: datasetId, extra: { metadata: { judge: 'length' } } });
    expect((cmp.experiments_info as Json[]).map((e) => e.id)).toEqual(experiments.map((e) => e.id));

    const listed = (await (await api(`/datasets/${datasetId}/comparative`)).json()) as Json[];
    expect(listed.map((c) => c.id)).toContain(cmp.id);

    const feedback: Json[] = [];
    for await (const f of client.listFeedback({ feedbackKeys: ['preference'] })) feedback.push(f as unknown as Json);
    const pairwise = feedback.filter((f) => f.comparative_experiment_id === cmp.id);
    expect(new Set(pairwise.map((f) => f.run_id)).size).toBe(4);
    // feedback_stats: per key over the pairwise feedback (2 examples x 2 experiments, one preferred each).
    const after = ((await (await api(`/datasets/${datasetId}/comparative`)).json()) as Json[]).find((c) => c.id === cmp.id);
    expect(after?.feedback_stats).toEqual({ preference: { n: 4, count: 4, avg: 0.5, mean: 0.5, stdev: 0.5, values: {} } });
  });

  it("the Python SDK's evaluate_comparative end to end: pairwise feedback and feedback_stats stored", async () => {
    // The venv of scripts/python-sdk.js (made from the configured package index when missing); the script runs
    // asynchronously because this process serves the calls it makes.
    const root = join(__dirname, '..', '..', '..');
    const made = await run(process.execPath, [join(root, 'scripts', 'python-sdk.js'), '--venv'], { cwd: root, timeout: 600_000, maxBuffer: 1 << 22 });
    const venv = JSON.parse(made.stdout.trim().split('\n').pop() as string) as { python: string; pythonPath: string };
    const script = await run(venv.python, [join(__dirname, 'testing', 'evaluate-comparative.py')], {
      env: { ...process.env, PYTHONPATH: venv.pythonPath, LANGSMITH_ENDPOINT: svc.url, LANGSMITH_API_KEY: svc.apiKey, LANGSMITH_TRACING: 'false' },
      timeout: 150_000,
      maxBuffer: 1 << 20,
    });
    const out = JSON.parse(script.stdout.trim().split('\n').pop() as string) as { dataset_id: string; comparative_experiment_id: string; experiments: string[]; results: number };
    expect(out.results).toBe(2);
    const listed = (await (await api(`/datasets/${out.dataset_id}/comparative`)).json()) as Json[];
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: out.comparative_experiment_id, extra: { metadata: { judge: 'reference' } } });
    expect((listed[0].experiments_info as Json[]).map((e) => e.name)).toEqual(out.experiments);
    // The right experiment's runs scored 1, the wrong one's 0.
    expect(listed[0].feedback_stats).toEqual({ preference: { n: 4, count: 4, avg: 0.5, mean: 0.5, stdev: 0.5, values: {} } });
    const feedback: Json[] = [];
    for await (const f of client.listFeedback({ feedbackKeys: ['preference'] })) feedback.push(f as unknown as Json);
    const pairwise = feedback.filter((f) => f.comparative_experiment_id === out.comparative_experiment_id);
    expect(pairwise).toHaveLength(4);
    const right = await client.readProject({ projectName: out.experiments[0] });
    const scoreOf = new Map<string, number>();
    for await (const r of client.listRuns({ projectId: right.id, isRoot: true })) scoreOf.set(r.id, 1);
    expect(pairwise.filter((f) => scoreOf.has(f.run_id as string)).map((f) => f.score)).toEqual([1, 1]);
  }, 200_000);

  it('POST /datasets/comparative: bad bodies 422, nothing written; other workspaces\' ids 404; experiments of another dataset 400; delete; each attempt audited', async () => {
    const good = { name: 'cmp', experiment_ids: experiments.map((e) => e.id), reference_dataset_id: datasetId };
    const before = ((await (await api(`/datasets/${datasetId}/comparative`)).json()) as Json[]).length;
    for (const bad of [{}, { ...good, experiment_ids: [experiments[0].id] }, { ...good, experiment_ids: [experiments[0].id, experiments[0].id] }, { ...good, reference_dataset_id: 'x' }, { ...good, extra: 5 }, { ...good, nope: 1 }]) {
      const res = await api('/datasets/comparative', { method: 'POST', json: bad });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: Json[] }).detail[0]).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    }
    expect((await api('/datasets/comparative', { method: 'POST', json: { ...good, experiment_ids: [experiments[0].id, randomUUID()] } })).status).toBe(404);
    expect((await api('/datasets/comparative', { method: 'POST', json: { ...good, reference_dataset_id: randomUUID() } })).status).toBe(404);
    const otherDataset = await client.createDataset(`other-${randomUUID().slice(0, 8)}`);
    expect((await api('/datasets/comparative', { method: 'POST', json: { ...good, reference_dataset_id: otherDataset.id } })).status).toBe(400);
    expect(((await (await api(`/datasets/${datasetId}/comparative`)).json()) as Json[]).length).toBe(before);

    const other = await svc.app.get(IdentityService).createOrganization({ name: `other-${randomUUID()}` });
    expect((await api('/datasets/comparative', { method: 'POST', key: other.api_key, json: good })).status).toBe(404);
    expect((await api(`/datasets/${datasetId}/comparative`, { key: other.api_key })).status).toBe(404);

    const id = randomUUID();
    expect((await api('/datasets/comparative', { method: 'POST', json: { ...good, id } })).status).toBe(200);
    expect((await api('/datasets/comparative', { method: 'POST', json: { ...good, id } })).status).toBe(409);
    expect((await api(`/datasets/comparative/${id}`, { method: 'DELETE', key: other.api_key })).status).toBe(404);
    expect((await api(`/datasets/comparative/${id}`, { method: 'DELETE' })).status).toBe(200);
    expect((await api(`/datasets/comparative/${id}`, { method: 'DELETE' })).status).toBe(404);
    expect(audit.filter((e) => e.resources.some((r) => r.id === id)).map((e) => [e.operation, e.status, e.organization_id, e.resources])).toEqual([
      ['create_comparative_experiment', 'Success', svc.organizationId, [{ type: 'dataset', id: datasetId }, { type: 'comparative_experiment', id }]],
      ['delete_comparative_experiment', 'Failure', other.organization_id, [{ type: 'comparative_experiment', id }]],
      ['delete_comparative_experiment', 'Success', svc.organizationId, [{ type: 'comparative_experiment', id }]],
      ['delete_comparative_experiment', 'Failure', svc.organizationId, [{ type: 'comparative_experiment', id }]],
    ]);
  });

  it('openai_ft: the SDK reads the examples as OpenAI chat fine-tuning records; other workspaces 404', async () => {
    const records = (await client.readDatasetOpenaiFinetuning({ datasetId })) as { messages: Json[] }[];
    // Both examples were created in one version, so their order is not fixed.
    expect(records).toHaveLength(2);
    expect(records).toEqual(
      expect.arrayContaining([
        { messages: [{ role: 'system', content: 'add' }, { role: 'user', content: '1+2' }, { role: 'assistant', content: '3' }] },
        { messages: [{ role: 'user', content: '2+2' }, { role: 'assistant', content: '4' }] },
      ]),
    );
    const other = await svc.app.get(IdentityService).createOrganization({ name: `other-${randomUUID()}` });
    expect((await api(`/datasets/${datasetId}/openai_ft`, { key: other.api_key })).status).toBe(404);
    expect((await api('/datasets/not-a-uuid/openai_ft')).status).toBe(422);
  });
});
