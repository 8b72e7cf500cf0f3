import { Client } from '@langchain/langgraph-sdk';
import { Client as LangSmith } from 'langsmith';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, startAppProcess, type AppProcess } from '@th/testing';
import { startTestAgentServer } from './testing/harness';

// Needs `npm run build` first: the tracing service runs as the standalone process.
jest.setTimeout(180_000);

const API_KEY = 'th_agent_tracing_test_key';
let tracingDb: { url: string; drop(): Promise<void> };
let dataDir: string;
let tracing: AppProcess;

beforeAll(async () => {
  tracingDb = await createTestDatabase('th_agent_trace');
  dataDir = mkdtempSync(join(tmpdir(), 'th-agent-trace-'));
  tracing = await startAppProcess('standalone', { DATA_DIR: dataDir, DATABASE_URL: tracingDb.url, BOOTSTRAP_API_KEY: API_KEY, PRINT_BANNER: 'false' }, { timeoutMs: 150_000 });
});

afterAll(async () => {
  await tracing?.stop();
  await tracingDb?.drop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

it('traces every run to the tracing service, in the project named by LANGSMITH_PROJECT', async () => {
  const project = `deployment-${Date.now()}`;
  const server = await startTestAgentServer({ LANGSMITH_ENDPOINT: tracing.url, LANGSMITH_API_KEY: API_KEY, LANGSMITH_PROJECT: project });
  let runId: string;
  try {
    const client = new Client({ apiUrl: server.url, apiKey: null });
    const t = await client.threads.create();
    const run = await client.runs.create(t.thread_id, 'agent', { input: { messages: [{ role: 'user', content: 'trace me' }] } });
    runId = run.run_id;
    await client.runs.join(t.thread_id, run.run_id);
  } finally {
    await server.stop(); // flushes pending trace batches
    await server.dropDatabase();
  }
  const ls = new LangSmith({ apiUrl: tracing.url, apiKey: API_KEY });
  const runs: { id: string; name: string; parent_run_id?: string | null; trace_id?: string; extra?: { metadata?: Record<string, unknown> } }[] = [];
  for await (const r of ls.listRuns({ projectName: project })) runs.push(r as (typeof runs)[number]);
  const root = runs.find((r) => !r.parent_run_id);
  expect(root).toBeDefined();
  expect(root!.id).toBe(runId);
  expect(root!.extra?.metadata).toMatchObject({ thread_id: expect.any(String), graph_id: 'agent', run_id: runId });
  expect(runs.map((r) => r.name)).toEqual(expect.arrayContaining(['think', 'answer']));
  expect(runs.every((r) => r.trace_id === runId)).toBe(true);
});
