import type { Client } from '@langchain/langgraph-sdk';
import type { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { detail422, sendJson, statusOf, user } from './testing/sdk';

jest.setTimeout(60_000);

let server: TestAgentServer & { dropDatabase(): Promise<void> };
let client: Client;
let pg: Pg;

// A short tick: the sweep runs with the cron scheduler, every CRON_TICK_MS.
useAgentServer((f) => ({ server, client, pg } = f), { CRON_TICK_MS: '100' });

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const send = (method: string, path: string, body: unknown) => sendJson(server.url, method, path, body);
const count = async (sql: string, params: unknown[] = []) => Number((await pg.query<{ n: string }>(sql, params)).rows[0].n);
/** Seconds until the thread expires, as stored (null: never). */
const expiresIn = async (id: string) =>
  (await pg.query<{ s: number | null }>('SELECT extract(epoch FROM expires_at - now())::float8 AS s FROM agent_server.threads WHERE thread_id = $1', [id])).rows[0]?.s ?? null;
/** Polls until the thread answers 404, for at most `ms`. */
async function gone(id: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await statusOf(client.threads.get(id))) !== 404) {
    if (Date.now() > deadline) throw new Error(`thread ${id} still there after ${ms} ms`);
    await sleep(50);
  }
}

describe('thread ttl through the published client', () => {
  it('a thread created with a ttl (minutes) is deleted with its runs and checkpoints once it runs out; one without stays', async () => {
    const kept = await client.threads.create();
    const doomed = await client.threads.create({ ttl: 0.02 }); // 1.2 s; the client sends {ttl, strategy: "delete"}
    expect(await expiresIn(doomed.thread_id)).toBeGreaterThan(0.5);
    expect(await expiresIn(doomed.thread_id)).toBeLessThanOrEqual(1.2);
    expect(await expiresIn(kept.thread_id)).toBeNull();
    await client.runs.wait(doomed.thread_id, 'agent', { input: user('hi') });
    expect(await count('SELECT count(*) AS n FROM agent_server.runs WHERE thread_id = $1', [doomed.thread_id])).toBe(1);
    expect((await client.threads.get(doomed.thread_id)).thread_id).toBe(doomed.thread_id);

    await gone(doomed.thread_id);
    expect(await count('SELECT count(*) AS n FROM agent_server.runs WHERE thread_id = $1', [doomed.thread_id])).toBe(0);
    expect(await count('SELECT count(*) AS n FROM agent_server.checkpoints WHERE thread_id = $1', [doomed.thread_id])).toBe(0);
    expect((await client.threads.get(kept.thread_id)).thread_id).toBe(kept.thread_id);
  });

  it('the object form sets the same expiry, and an update with a ttl sets a new one from now', async () => {
    const t = await client.threads.create({ ttl: { ttl: 60, strategy: 'delete' } });
    const first = (await expiresIn(t.thread_id))!;
    expect(first).toBeGreaterThan(3590);
    expect(first).toBeLessThanOrEqual(3600);
    // An update without a ttl keeps the expiry; with one it replaces it.
    await client.threads.update(t.thread_id, { metadata: { a: 1 } });
    expect(await expiresIn(t.thread_id)).toBeLessThanOrEqual(first);
    expect(await expiresIn(t.thread_id)).toBeGreaterThan(3580);
    const updated = await client.threads.update(t.thread_id, { ttl: 0.01 });
    expect(updated.metadata).toMatchObject({ a: 1 });
    await gone(t.thread_id);

    // A thread without a ttl gets one by update.
    const later = await client.threads.create({ metadata: { keep: false } });
    await client.threads.update(later.thread_id, { ttl: 0.01 });
    await gone(later.thread_id);
  });

  it('a thread whose ttl runs out during a run is deleted and the run cancelled', async () => {
    const t = await client.threads.create({ ttl: 0.01 }); // 0.6 s
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('sleep:20000 slow') });
    await gone(t.thread_id);
    expect(await count('SELECT count(*) AS n FROM agent_server.runs WHERE run_id = $1', [run.run_id])).toBe(0);
  });

  it('refuses a ttl that is not a positive number of minutes with the delete strategy, and creates nothing', async () => {
    const before = await count('SELECT count(*) AS n FROM agent_server.threads');
    for (const ttl of [0, -5, '10', { ttl: 10, strategy: 'keep_latest' }, { strategy: 'delete' }, { ttl: 10, extra: true }]) {
      const d = await detail422(await send('POST', '/threads', { ttl }));
      expect(d.map((x) => x.loc.slice(0, 2))).toContainEqual(['body', 'ttl']);
    }
    expect(await count('SELECT count(*) AS n FROM agent_server.threads')).toBe(before);

    const t = await client.threads.create({ metadata: { v: 1 } });
    // null is no ttl, as an absent one
    const plain = (await (await send('POST', '/threads', { ttl: null })).json()) as { thread_id: string };
    expect(await expiresIn(plain.thread_id)).toBeNull();
    await detail422(await send('PATCH', `/threads/${t.thread_id}`, { metadata: { v: 2 }, ttl: -1 }));
    expect((await client.threads.get(t.thread_id)).metadata).toMatchObject({ v: 1 });
    expect(await expiresIn(t.thread_id)).toBeNull();
  });
});
