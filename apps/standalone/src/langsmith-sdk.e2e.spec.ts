import { randomUUID } from 'node:crypto';
import { Client, RunTree } from 'langsmith';
import { traceable } from 'langsmith/traceable';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

/** The published `langsmith` SDK is the acceptance test for the tracing API. */
describe('published langsmith SDK against the standalone service', () => {
  let svc: TestStandalone;
  let client: Client;
  const requests: string[] = [];
  const realFetch = globalThis.fetch;
  beforeAll(async () => {
    globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      requests.push(`${init?.method ?? 'GET'} ${input instanceof Request ? input.url : String(input)}`);
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

  it('nested traceable runs go through multipart auto-batching and read back with readRun and listRuns', async () => {
    const projectName = `sdk-${randomUUID().slice(0, 8)}`;
    const tool = traceable(async (x: number) => ({ doubled: x * 2 }), { name: 'double', run_type: 'tool', client, project_name: projectName, tracingEnabled: true });
    const llm = traceable(
      async (prompt: string) => ({ text: `echo ${prompt}`, usage_metadata: { input_tokens: 7, output_tokens: 3, total_tokens: 10 } }),
      { name: 'fake-llm', run_type: 'llm', client, project_name: projectName, tracingEnabled: true, metadata: { ls_provider: 'openai', ls_model_name: 'gpt-4o-mini' } },
    );
    const agent = traceable(
      async (x: number) => {
        const a = await tool(x);
        const b = await llm(`value ${a.doubled}`);
        return { answer: b.text };
      },
      { name: 'agent', run_type: 'chain', client, project_name: projectName, tags: ['sdk-test'], tracingEnabled: true },
    );
    expect(await agent(21)).toEqual({ answer: 'echo value 42' });
    await client.awaitPendingTraceBatches();
    expect(requests.some((r) => r.startsWith('POST') && r.endsWith('/api/v1/runs/multipart'))).toBe(true);
    expect(requests.some((r) => r.endsWith('/api/v1/info'))).toBe(true);

    const runs = [];
    for await (const r of client.listRuns({ projectName })) runs.push(r);
    expect(runs.map((r) => r.name).sort()).toEqual(['agent', 'double', 'fake-llm']);
    const root = runs.find((r) => r.name === 'agent')!;
    expect(root.parent_run_id ?? null).toBeNull();
    expect(root.outputs).toEqual({ answer: 'echo value 42' });
    expect(root.inputs).toEqual({ input: 21 });
    expect(root.tags).toEqual(['sdk-test']);
    expect(root.status).toBe('success');
    for (const child of runs.filter((r) => r.name !== 'agent')) {
      expect(child.parent_run_id).toBe(root.id);
      expect(child.trace_id).toBe(root.id);
      expect(child.dotted_order?.startsWith(root.dotted_order!)).toBe(true);
    }
    const llmRun = await client.readRun(runs.find((r) => r.name === 'fake-llm')!.id);
    expect(llmRun).toMatchObject({ run_type: 'llm', prompt_tokens: 7, completion_tokens: 3, total_tokens: 10 });
    expect(llmRun.extra?.metadata).toMatchObject({ ls_provider: 'openai', ls_model_name: 'gpt-4o-mini' });
    const roots = [];
    for await (const r of client.listRuns({ projectName, isRoot: true })) roots.push(r);
    expect(roots.map((r) => r.id)).toEqual([root.id]);
    const withChildren = await client.readRun(root.id, { loadChildRuns: true });
    expect(withChildren.child_runs?.map((r) => r.name).sort()).toEqual(['double', 'fake-llm']);
  });

  it('RunTree posts and patches runs, and errors are recorded', async () => {
    const projectName = `tree-${randomUUID().slice(0, 8)}`;
    const parent = new RunTree({ name: 'parent', run_type: 'chain', inputs: { q: 'x' }, project_name: projectName, client });
    await parent.postRun();
    const child = parent.createChild({ name: 'child', run_type: 'retriever', inputs: { query: 'x' } });
    await child.postRun();
    await child.end({ documents: [] }, 'retrieval failed');
    await child.patchRun();
    await parent.end({ out: 1 });
    await parent.patchRun();
    await client.awaitPendingTraceBatches();
    const p = await client.readRun(parent.id);
    const c = await client.readRun(child.id);
    expect(p).toMatchObject({ status: 'success', outputs: { out: 1 }, inputs: { q: 'x' } });
    expect(c).toMatchObject({ status: 'error', error: 'retrieval failed', parent_run_id: parent.id, trace_id: parent.id });
  });

  it('creates, reads, lists, updates and deletes projects', async () => {
    const name = `proj-${randomUUID().slice(0, 8)}`;
    const created = await client.createProject({ projectName: name, description: 'made by the sdk', metadata: { team: 'a' } });
    expect(created.name).toBe(name);
    await expect(client.createProject({ projectName: name })).rejects.toThrow(/409|already exists/);
    const byName = await client.readProject({ projectName: name });
    expect(byName.id).toBe(created.id);
    const byId = await client.readProject({ projectId: created.id });
    expect(byId.name).toBe(name);
    expect(await client.hasProject({ projectName: name })).toBe(true);
    expect(await client.hasProject({ projectName: `${name}-missing` })).toBe(false);
    const listed = [];
    for await (const p of client.listProjects({ nameContains: name })) listed.push(p.id);
    expect(listed).toEqual([created.id]);
    const updated = await client.updateProject(created.id, { description: 'changed' });
    expect((updated as { description?: string }).description).toBe('changed');
    await client.deleteProject({ projectId: created.id });
    expect(await client.hasProject({ projectName: name })).toBe(false);
  });
});
