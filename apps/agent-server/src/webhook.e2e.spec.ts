import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@langchain/langgraph-sdk';
import type { Client as Pg } from 'pg';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { contents, detail422, sendJson, user } from './testing/sdk';

jest.setTimeout(30_000);

let server: TestAgentServer;
let client: Client;
let pg: Pg;

// The receiver below is on 127.0.0.1, which the outbound policy refuses unless the operator lists it.
useAgentServer((f) => ({ server, client, pg } = f), { OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });

type Hook = { path: string; body: Record<string, unknown> };

/** A real webhook receiver on 127.0.0.1: records every POST; paths under /flaky/ answer 500 to their first one. */
let receiver: Server;
let hookBase: string;
const received: Hook[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      const first = !received.some((h) => h.path === path);
      received.push({ path, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
      res.statusCode = path.startsWith('/flaky/') && first ? 500 : 200;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => receiver.close(resolve));
});

const hooksAt = (path: string) => received.filter((h) => h.path === path);

/** Waits (at most `ms`) until `n` webhooks arrived at `path`, then a little longer to see that no more come. */
async function awaitHooks(path: string, n: number, ms = 5000): Promise<Hook[]> {
  const deadline = Date.now() + ms;
  while (hooksAt(path).length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  await new Promise((r) => setTimeout(r, 300));
  return hooksAt(path);
}

describe('run webhooks', () => {
  it('a run created with webhook posts once, when it ends: the run as GET returns it, with status success and the final values', async () => {
    const t = await client.threads.create();
    const path = `/ok/${randomUUID()}`;
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('hello'), metadata: { origin: 'webhook-spec' }, webhook: `${hookBase}${path}` });
    const values = await client.runs.join(t.thread_id, run.run_id);
    const hooks = await awaitHooks(path, 1);
    expect(hooks).toHaveLength(1);
    const { values: hookValues, ...hookRun } = hooks[0]!.body;
    expect(hookRun).toEqual(await client.runs.get(t.thread_id, run.run_id));
    expect(hookRun).toMatchObject({ run_id: run.run_id, thread_id: t.thread_id, assistant_id: run.assistant_id, status: 'success', metadata: { origin: 'webhook-spec' } });
    expect(hookRun).not.toHaveProperty('error');
    expect(contents(hookValues)).toEqual(['human:hello', 'ai:thought: hello', 'ai:echo: hello']);
    expect(hookValues).toEqual(values);
  });

  it('a run that fails posts with status error and its error', async () => {
    const t = await client.threads.create();
    const path = `/err/${randomUUID()}`;
    await expect(client.runs.wait(t.thread_id, 'agent', { input: user('fail'), webhook: `${hookBase}${path}` })).rejects.toThrow('the graph failed on purpose');
    const hooks = await awaitHooks(path, 1);
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.body).toMatchObject({ thread_id: t.thread_id, status: 'error', error: { message: 'the graph failed on purpose' } });
    expect((await client.runs.get(t.thread_id, hooks[0]!.body.run_id as string)).status).toBe('error');
  });

  it('a pending run interrupted by a cancel posts with status interrupted', async () => {
    const t = await client.threads.create();
    const path = `/cancel/${randomUUID()}`;
    const first = await client.runs.create(t.thread_id, 'agent', { input: user('sleep:1500 one') });
    const queued = await client.runs.create(t.thread_id, 'agent', { input: user('two'), webhook: `${hookBase}${path}` });
    await client.runs.cancel(t.thread_id, queued.run_id, false, 'interrupt');
    const hooks = await awaitHooks(path, 1);
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.body).toMatchObject({ run_id: queued.run_id, status: 'interrupted' });
    await client.runs.join(t.thread_id, first.run_id);
  });

  it('a webhook answered with 500 is retried exactly once', async () => {
    const t = await client.threads.create();
    const path = `/flaky/${randomUUID()}`;
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('again'), webhook: `${hookBase}${path}` });
    await client.runs.join(t.thread_id, run.run_id);
    const hooks = await awaitHooks(path, 2);
    expect(hooks).toHaveLength(2);
    expect(hooks[1]!.body).toEqual(hooks[0]!.body);
    expect(hooks[1]!.body).toMatchObject({ run_id: run.run_id, status: 'success' });
  });

  it('a webhook that is not an absolute http(s) URL is a 422 on body.webhook, and nothing is written', async () => {
    const t = await client.threads.create();
    const counts = async () => (await pg.query(`SELECT (SELECT count(*) FROM agent_server.runs) AS runs, (SELECT count(*) FROM agent_server.threads) AS threads`)).rows[0];
    const before = await counts();
    for (const webhook of ['not a url', '/relative/hook', 'ftp://127.0.0.1/hook', 'javascript:alert(1)']) {
      const d = await detail422(await sendJson(server.url, 'POST', `/threads/${t.thread_id}/runs`, { assistant_id: 'agent', input: user('x'), webhook }));
      expect(d.map((x) => x.loc)).toEqual([['body', 'webhook']]);
    }
    const d = await detail422(await sendJson(server.url, 'POST', '/runs/wait', { assistant_id: 'agent', input: user('x'), webhook: 'nope' }));
    expect(d.map((x) => x.loc)).toEqual([['body', 'webhook']]);
    expect(await counts()).toEqual(before);
    expect((await client.threads.get(t.thread_id)).status).toBe('idle');
  });

  it('a webhook on a loopback, private, link-local or metadata address the allow-list does not name is a 422 on body.webhook, on every route that takes one, and nothing is written', async () => {
    const t = await client.threads.create();
    const counts = async () =>
      (await pg.query(`SELECT (SELECT count(*) FROM agent_server.runs) AS runs, (SELECT count(*) FROM agent_server.threads) AS threads, (SELECT count(*) FROM agent_server.crons) AS crons`)).rows[0];
    const before = await counts();
    const port = new URL(hookBase).port;
    // [::1] and localhost reach the same receiver as 127.0.0.1, but only 127.0.0.1 is listed.
    const refused = ['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/hook', 'http://172.16.0.1/', 'http://100.64.0.1/', `http://[::1]:${port}/x`, `http://localhost:${port}/x`, 'http://[::ffff:a9fe:a9fe]/', 'http://0xa9fea9fe/', 'http://[fe80::1]/'];
    const msg = expect.stringMatching(/^webhook points to an address this service does not call/);
    for (const webhook of refused) {
      for (const [path, body] of [
        [`/threads/${t.thread_id}/runs`, { assistant_id: 'agent', input: user('x'), webhook }],
        ['/runs/wait', { assistant_id: 'agent', input: user('x'), webhook }],
        [`/threads/${t.thread_id}/runs/crons`, { assistant_id: 'agent', schedule: '0 0 * * *', input: user('x'), webhook }],
      ] as const) {
        expect({ webhook, path, detail: await detail422(await sendJson(server.url, 'POST', path, body)) }).toEqual({ webhook, path, detail: [{ loc: ['body', 'webhook'], msg, type: 'value_error' }] });
      }
      const batch = await detail422(await sendJson(server.url, 'POST', '/runs/batch', [{ assistant_id: 'agent', input: user('x') }, { assistant_id: 'agent', input: user('y'), webhook }]));
      expect(batch.map((x) => x.loc)).toEqual([['body', 1, 'webhook']]);
    }
    expect(await counts()).toEqual(before);
    expect(received.filter((h) => h.path === '/x')).toEqual([]);
  });
});
