import { randomUUID } from 'node:crypto';
import { Client, type Run } from 'langsmith';
import { evaluate } from 'langsmith/evaluation';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

/**
 * The published `langsmith` SDK's evaluate() end to end (wire/clients.md 1.7): dataset by name,
 * examples, POST /sessions with reference_dataset_id, target runs with reference_example_id,
 * evaluator runs in the auto-created "evaluators" project, feedback parts, summary feedback, PATCH.
 */
describe('langsmith SDK evaluate() against the standalone service', () => {
  let svc: TestStandalone;
  let client: Client;
  const requests: string[] = [];
  const realFetch = globalThis.fetch;
  beforeAll(async () => {
    globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      const url = input instanceof Request ? input.url : String(input);
      requests.push(`${init?.method ?? (input instanceof Request ? input.method : 'GET')} ${new URL(url).pathname}`);
      return realFetch(input, init);
    }) as typeof fetch;
    svc = await startTestStandalone();
    client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, autoBatchTracing: true, timeout_ms: 20_000 });
  });
  afterAll(async () => {
    globalThis.fetch = realFetch;
    await client?.awaitPendingTraceBatches();
    await svc?.close();
  });

  it('evaluates a local target with a local evaluator and a summary evaluator; the experiment, runs and feedback read back', async () => {
    const datasetName = `sdk-eval-${randomUUID().slice(0, 8)}`;
    const dataset = await client.createDataset(datasetName, { description: 'arithmetic' });
    const cases = [
      { inputs: { a: 1, b: 2 }, outputs: { sum: 3 } },
      { inputs: { a: 2, b: 2 }, outputs: { sum: 4 } },
      { inputs: { a: 10, b: 5 }, outputs: { sum: 15 } },
      { inputs: { a: 7, b: 0 }, outputs: { sum: 8 } },
    ];
    const examples = await client.createExamples(cases.map((c) => ({ ...c, dataset_id: dataset.id })));
    expect(examples).toHaveLength(4);

    // The target is right for every case but the last (whose reference answer is wrong on purpose).
    const target = async (inputs: Json): Promise<Json> => ({ sum: (inputs.a as number) + (inputs.b as number) });
    const exactMatch = ({ outputs, referenceOutputs }: { outputs: Json; referenceOutputs?: Json }) => ({
      key: 'exact_match',
      score: outputs.sum === referenceOutputs?.sum ? 1 : 0,
      comment: `got ${String(outputs.sum)}`,
    });
    const passRate = ({ outputs, referenceOutputs }: { outputs: Json[]; referenceOutputs?: Json[] }) => ({
      key: 'pass_rate',
      score: outputs.filter((o, i) => o.sum === referenceOutputs?.[i]?.sum).length / outputs.length,
    });
    const results = await evaluate(target, {
      data: datasetName,
      evaluators: [exactMatch],
      summaryEvaluators: [passRate],
      experimentPrefix: 'sdk-exp',
      metadata: { model: 'adder-v1' },
      client,
      maxConcurrency: 2,
    });
    await client.awaitPendingTraceBatches();
    expect(results.results).toHaveLength(4);
    const experimentName = results.experimentName;
    expect(experimentName.startsWith('sdk-exp-')).toBe(true);

    // The calls the SDK makes (wire/clients.md 1.7).
    expect(requests).toEqual(expect.arrayContaining(['GET /api/v1/datasets', 'GET /api/v1/examples', 'POST /api/v1/sessions', 'POST /api/v1/runs/multipart']));
    expect(requests.some((r) => /^PATCH \/api\/v1\/sessions\/[0-9a-f-]{36}$/.test(r))).toBe(true);

    // The experiment: a project with the dataset as reference, its statistics and the summary score.
    let project = await client.readProject({ projectName: experimentName, includeStats: true });
    for (let i = 0; i < 50 && (project.run_count !== 4 || !project.feedback_stats); i++) {
      await new Promise((r) => setTimeout(r, 100));
      project = await client.readProject({ projectName: experimentName, includeStats: true });
    }
    const p = project as unknown as Json;
    expect(p).toMatchObject({ reference_dataset_id: dataset.id, run_count: 4, error_rate: 0, test_run_number: 1 });
    expect((p.extra as Json).metadata).toMatchObject({ model: 'adder-v1' });
    expect(p.feedback_stats).toMatchObject({ exact_match: { n: 4, avg: 0.75 } });
    expect(p.session_feedback_stats).toMatchObject({ pass_rate: { n: 1, avg: 0.75 } });

    // Its runs: one root run per example, referencing it, with the target's output.
    const runs: Run[] = [];
    for await (const r of client.listRuns({ projectName: experimentName, isRoot: true })) runs.push(r);
    expect(runs).toHaveLength(4);
    expect(runs.map((r) => r.reference_example_id).sort()).toEqual(examples.map((e) => e.id).sort());
    for (const r of runs) {
      const ex = examples.find((e) => e.id === r.reference_example_id)!;
      expect(r.outputs).toEqual({ sum: (ex.inputs.a as number) + (ex.inputs.b as number) });
    }

    // Feedback per run from the evaluator, whose own runs went to the auto-created "evaluators" project.
    const feedback = [];
    for await (const f of client.listFeedback({ runIds: runs.map((r) => r.id) })) feedback.push(f);
    expect(feedback).toHaveLength(4);
    expect(feedback.every((f) => f.key === 'exact_match')).toBe(true);
    expect(feedback.map((f) => f.score).sort()).toEqual([0, 1, 1, 1]);
    const wrong = runs.find((r) => (r.outputs as Json).sum === 7)!;
    expect(feedback.find((f) => f.run_id === wrong.id)).toMatchObject({ score: 0, comment: 'got 7' });
    const evaluatorsProject = await client.readProject({ projectName: 'evaluators' });
    expect(evaluatorsProject.id).toMatch(/^[0-9a-f-]{36}$/);
    const evaluatorRuns: Run[] = [];
    for await (const r of client.listRuns({ projectName: 'evaluators', isRoot: true })) evaluatorRuns.push(r);
    expect(evaluatorRuns.map((r) => r.reference_example_id).sort()).toEqual(examples.map((e) => e.id).sort());

    // The dataset counts the experiment, and the comparison endpoint shows it per example.
    const ds = await client.readDataset({ datasetId: dataset.id });
    expect(ds).toMatchObject({ example_count: 4, session_count: 1 });
    const cmp = await svc.api(`/api/v1/datasets/${dataset.id}/compare`, { method: 'POST', json: { session_ids: [p.id] } });
    expect(cmp.status).toBe(200);
    const c = (await cmp.json()) as { experiments: Json[]; examples: Json[] };
    expect(c.experiments[0]).toMatchObject({ id: p.id, run_count: 4 });
    expect(c.examples).toHaveLength(4);
    for (const ex of c.examples) {
      const exRuns = ex.runs as Json[];
      expect(exRuns).toHaveLength(1);
      expect((exRuns[0].feedback as Json[]).map((f) => f.key)).toEqual(['exact_match']);
    }
  });
});
