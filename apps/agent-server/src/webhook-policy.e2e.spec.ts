import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client } from '@langchain/langgraph-sdk';
import { useAgentServer, type TestAgentServer } from './testing/harness';
import { detail422, sendJson, user } from './testing/sdk';

jest.setTimeout(30_000);

let server: TestAgentServer;
let client: Client;

// No OUTBOUND_ALLOWED_HOSTS: the policy as an install without an allow-list has it.
useAgentServer((f) => ({ server, client } = f));

/** A real receiver on 127.0.0.1 that records every request it gets. */
let receiver: Server;
let base: string;
const received: string[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    received.push(req.url ?? '');
    req.resume();
    res.end();
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  base = `127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((resolve) => receiver.close(resolve)));

describe('run webhooks with no allow-list', () => {
  it('a webhook to a receiver on loopback is refused (422 on body.webhook) and the receiver gets nothing, however the address is written', async () => {
    const t = await client.threads.create();
    const port = base.split(':')[1];
    const path = `/never/${randomUUID()}`;
    for (const host of [base, `localhost:${port}`, `[::1]:${port}`, `[::ffff:127.0.0.1]:${port}`, `2130706433:${port}`, `0x7f.1:${port}`, `127.1:${port}`, `0:${port}`]) {
      const d = await detail422(await sendJson(server.url, 'POST', `/threads/${t.thread_id}/runs`, { assistant_id: 'agent', input: user('x'), webhook: `http://${host}${path}` }));
      expect({ host, loc: d.map((x) => x.loc) }).toEqual({ host, loc: [['body', 'webhook']] });
    }
    // A run without a webhook still runs, and nothing reached the receiver meanwhile.
    const run = await client.runs.create(t.thread_id, 'agent', { input: user('hello') });
    await client.runs.join(t.thread_id, run.run_id);
    await new Promise((r) => setTimeout(r, 300));
    expect(received).toEqual([]);
  });
});
