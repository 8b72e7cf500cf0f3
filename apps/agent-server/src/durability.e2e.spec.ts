import { Client } from '@langchain/langgraph-sdk';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client as Pg } from 'pg';
import { createTestDatabase, startAppProcess, type AppProcess } from '@th/testing';
import { TEST_GRAPHS_CONFIG, startTestAgentServer } from './testing/harness';
import { contents, user } from './testing/sdk';

// Needs `npm run build` first: the agent server runs here as its own OS process (node scripts/run.js agent-server).
jest.setTimeout(120_000);


let db: { url: string; drop(): Promise<void> };
let graphsDir: string;
let pg: Pg;
const procs: AppProcess[] = [];

/** One agent-server process on the shared database, loading the graphs from a folder outside the repository. */
async function start(env: Record<string, string> = {}): Promise<{ proc: AppProcess; client: Client }> {
  const proc = await startAppProcess('agent-server', {
    DATABASE_URL: db.url,
    GRAPHS_CONFIG: join(graphsDir, 'langgraph.json'),
    RUN_LEASE_SECONDS: '2',
    RUN_MAX_ATTEMPTS: '2',
    ...env,
  });
  procs.push(proc);
  return { proc, client: new Client({ apiUrl: proc.url, apiKey: null }) };
}

/** Creates a slow run and returns once it is executing (its input `values` event streamed). */
async function startRunning(client: Client, threadId: string, text: string): Promise<string> {
  const run = await client.runs.create(threadId, 'agent', { input: user(text), streamMode: ['values'] });
  for await (const e of client.runs.joinStream(threadId, run.run_id)) if (e.event === 'values') break;
  return run.run_id;
}

const runRow = async (runId: string) =>
  (await pg.query<{ status: string; attempt: number; error: { error: string } | null }>(`SELECT status, attempt, error FROM agent_server.runs WHERE run_id = $1`, [runId])).rows[0];

beforeAll(async () => {
  db = await createTestDatabase('th_agent_dur');
  // a deployment's unpacked source lives outside the repository: its require('@langchain/langgraph') must still resolve
  graphsDir = mkdtempSync(join(tmpdir(), 'th-agent-graphs-'));
  cpSync(dirname(TEST_GRAPHS_CONFIG), graphsDir, { recursive: true });
  pg = new Pg({ connectionString: db.url });
  await pg.connect();
});

afterAll(async () => {
  for (const p of procs) await p.kill();
  await pg?.end();
  await db?.drop();
  rmSync(graphsDir, { recursive: true, force: true });
});

describe('agent server as a process, without Kafka', () => {
  it('answers /ok once graphs are loaded and the database migrated', async () => {
    const { proc } = await start();
    const ok = await fetch(`${proc.url}/ok`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ ok: true });
    expect(proc.log()).not.toMatch(/kafka/i);
    await proc.stop();
  });

  it('retries a run whose worker was killed mid-run, after its lease lapsed, exactly once at a time', async () => {
    const a = await start();
    const t = await a.client.threads.create();
    const runId = await startRunning(a.client, t.thread_id, 'sleep:1500 crash');
    expect((await runRow(runId)).status).toBe('running');
    await a.proc.kill(); // SIGKILL: no cleanup, the lease just stops being renewed
    const b = await start();
    const values = await b.client.runs.join(t.thread_id, runId);
    // the first attempt's checkpoints were rolled back: the input appears once
    expect(contents(values)).toEqual(['human:sleep:1500 crash', 'ai:thought: crash', 'ai:echo: crash']);
    expect(await runRow(runId)).toMatchObject({ status: 'success', attempt: 2 });
    expect(contents((await b.client.threads.getState(t.thread_id)).values)).toEqual(['human:sleep:1500 crash', 'ai:thought: crash', 'ai:echo: crash']);

    // the rule: after RUN_MAX_ATTEMPTS attempts whose workers died, the run ends as error
    const x = await startRunning(b.client, t.thread_id, 'sleep:30000 doomed');
    await b.proc.kill();
    const c = await start();
    const d = await start({ WORKER_CONCURRENCY: '0' }); // serves HTTP and reaps, takes no runs
    // attempt 2 lands on c (d takes none) once b's lease lapses; kill c as soon as attempt 2 is running
    // (polled, bounded: the stream may replay attempt 1's events before the reaper requeues the run)
    let row = await runRow(x);
    for (const deadline = Date.now() + 90_000; !(row.status === 'running' && row.attempt === 2) && Date.now() < deadline; ) {
      await new Promise((r) => setTimeout(r, 100));
      row = await runRow(x);
    }
    expect(row).toMatchObject({ status: 'running', attempt: 2 });
    await c.proc.kill();
    const ended = await d.client.runs.join(t.thread_id, x);
    expect(ended).toEqual({ __error__: { error: 'WorkerLost', message: expect.stringContaining('attempt 2 of 2') } });
    expect(await runRow(x)).toMatchObject({ status: 'error', attempt: 2 });
    expect((await d.client.threads.get(t.thread_id)).status).toBe('error');
  });

  it('shares one database between processes: runs created on either are executed once, in order per thread', async () => {
    const p1 = await start({ RUN_LEASE_SECONDS: '30' }); // no lapsed lease under a loaded machine: each run is taken once
    const inProc = await startTestAgentServer({}, db.url);
    try {
      const c2 = new Client({ apiUrl: inProc.url, apiKey: null });
      const clients = [p1.client, c2];
      const threads = await Promise.all([0, 1, 2, 3].map(() => p1.client.threads.create()));
      const created: { thread: string; run: string }[] = [];
      for (let i = 0; i < 16; i++) {
        const thread = threads[i % 4].thread_id;
        const r = await clients[i % 2].runs.create(thread, 'agent', { input: user(`n${i}`) });
        created.push({ thread, run: r.run_id });
      }
      for (const c of created) await clients[1].runs.join(c.thread, c.run);
      for (const th of threads) {
        const got = contents((await c2.threads.getState(th.thread_id)).values);
        const mine = created.filter((c) => c.thread === th.thread_id).length;
        expect(got).toHaveLength(mine * 3);
        for (let i = 0; i < got.length; i += 3) {
          const tag = got[i].slice('human:'.length);
          expect(got.slice(i, i + 3)).toEqual([`human:${tag}`, `ai:thought: ${tag}`, `ai:echo: ${tag}`]);
        }
      }
      const attempts = await pg.query<{ attempt: number; status: string }>(`SELECT attempt, status FROM agent_server.runs WHERE run_id = ANY($1::uuid[])`, [created.map((c) => c.run)]);
      expect(attempts.rows.every((r) => r.attempt === 1 && r.status === 'success')).toBe(true);
    } finally {
      await inProc.stop();
    }
  });

  it('keeps serving when a migration adds columns to runs and threads while it runs (prepared statements name their columns)', async () => {
    const a = await start({ WORKER_CONCURRENCY: '1' });
    try {
      // every hot statement is prepared on the pool's connections by a first round of runs
      for (let i = 0; i < 3; i++) {
        const t = await a.client.threads.create();
        const r = await a.client.runs.create(t.thread_id, 'agent', { input: user(`before${i}`) });
        await a.client.runs.join(t.thread_id, r.run_id);
        expect((await a.client.runs.get(t.thread_id, r.run_id)).status).toBe('success');
      }
      await pg.query('ALTER TABLE agent_server.runs ADD COLUMN later_column text');
      await pg.query('ALTER TABLE agent_server.threads ADD COLUMN later_column text');
      // plain requests, not the SDK (which retries a 5xx and would hide a failing statement)
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${a.proc.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
        return { status: res.status, body: (await res.json()) as Record<string, unknown> };
      };
      for (let i = 0; i < 3; i++) {
        const t = await call('POST', '/threads', {});
        expect(t.status).toBe(200);
        const r = await call('POST', `/threads/${t.body.thread_id}/runs`, { assistant_id: 'agent', input: user(`after${i}`) });
        expect(r.status).toBe(200);
        const joined = await call('GET', `/threads/${t.body.thread_id}/runs/${r.body.run_id}/join`);
        expect(joined.status).toBe(200);
        expect(contents(joined.body)).toEqual([`human:after${i}`, `ai:thought: after${i}`, `ai:echo: after${i}`]);
        const got = await call('GET', `/threads/${t.body.thread_id}/runs/${r.body.run_id}`);
        expect(got).toMatchObject({ status: 200, body: { status: 'success' } });
      }
      expect(a.proc.log()).not.toMatch(/cached plan/);
    } finally {
      await pg.query('ALTER TABLE agent_server.runs DROP COLUMN IF EXISTS later_column');
      await pg.query('ALTER TABLE agent_server.threads DROP COLUMN IF EXISTS later_column');
      await a.proc.stop();
    }
  });
});
