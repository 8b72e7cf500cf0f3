import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { OutboundPolicy, type Resolver } from '@th/platform';
import type { RunRow } from './agent.repository';
import { RunWebhooks } from './webhook';

/** A real receiver on 127.0.0.1; the policy's resolver is the seam: the test decides what a name resolves to, call by call. */
describe('RunWebhooks through the outbound policy', () => {
  let receiver: Server;
  let port: number;
  const received: string[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      received.push(req.url ?? '');
      req.resume();
      // /redirect/... sends the caller on to /followed/... on this receiver: a webhook never follows it.
      if (req.url?.startsWith('/redirect/')) res.writeHead(307, { location: `/followed${req.url}` });
      res.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => receiver.close(resolve)));

  const run = (webhook: string): RunRow => ({
    run_id: randomUUID(), thread_id: randomUUID(), assistant_id: randomUUID(), graph_id: 'agent', status: 'success', metadata: {}, kwargs: { webhook },
    multitask_strategy: 'enqueue', created_at: new Date(), updated_at: new Date(), attempt: 1, lease_owner: null, cancel_action: null,
    base_checkpoint_id: null, has_base: false, result: { messages: [] }, error: null,
  });

  const deliver = async (policy: OutboundPolicy, url: string) => {
    const hooks = new RunWebhooks(policy, { timeoutMs: 2000, retryDelayMs: 10 });
    hooks.runEnded(run(url));
    await hooks.close();
  };

  it('delivers to an address the allow-list names', async () => {
    const path = `/ok/${randomUUID()}`;
    await deliver(new OutboundPolicy(`127.0.0.1:${port}`), `http://127.0.0.1:${port}${path}`);
    expect(received).toContain(path);
  });

  it('DNS rebinding: a name that was public when the run was created and is 127.0.0.1 at delivery is not called', async () => {
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: calls++ === 0 ? '93.184.215.14' : '127.0.0.1', family: 4 }];
    const policy = new OutboundPolicy('', rebinding);
    const path = `/rebind/${randomUUID()}`;
    const url = `http://hooks.example:${port}${path}`;
    await expect(policy.check(url)).resolves.toBeDefined(); // what run creation checks
    await deliver(policy, url);
    expect(calls).toBe(2); // the check, then the delivery resolved again and was refused (and not retried)
    expect(received).not.toContain(path);
  });

  it('does not follow redirects (a public receiver could send it on to a private address)', async () => {
    const path = `/redirect/${randomUUID()}`;
    await deliver(new OutboundPolicy(`127.0.0.1:${port}`), `http://127.0.0.1:${port}${path}`);
    expect(received).toContain(path);
    expect(received).not.toContain(`/followed${path}`);
  });

  it('does not call a loopback IP even if the run skipped the check', async () => {
    const path = `/literal/${randomUUID()}`;
    await deliver(new OutboundPolicy(''), `http://127.0.0.1:${port}${path}`);
    await deliver(new OutboundPolicy(''), `http://[::ffff:127.0.0.1]:${port}${path}`);
    expect(received).not.toContain(path);
  });
});

/** A sandboxed server's webhooks: tunnelled through the proxy it is given (a real CONNECT proxy here, which refuses one port). */
describe('RunWebhooks through OUTBOUND_PROXY', () => {
  let receiver: Server;
  let proxy: Server;
  let port = 0;
  let proxyPort = 0;
  const received: string[] = [];
  const tunnels: string[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      received.push(req.url ?? '');
      req.resume();
      res.end();
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    port = (receiver.address() as AddressInfo).port;
    proxy = createServer((_req, res) => res.writeHead(400).end());
    proxy.on('connect', (req, client: Socket) => {
      tunnels.push(req.url ?? '');
      const [host, p] = (req.url ?? '').split(':');
      if (Number(p) !== port) return void client.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\n\r\n');
      const up = connect(Number(p), host, () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        up.pipe(client).pipe(up);
      });
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    proxyPort = (proxy.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => receiver.close(resolve));
    await new Promise((resolve) => proxy.close(resolve));
  });

  const run = (webhook: string): RunRow => ({
    run_id: randomUUID(), thread_id: randomUUID(), assistant_id: randomUUID(), graph_id: 'agent', status: 'success', metadata: {}, kwargs: { webhook },
    multitask_strategy: 'enqueue', created_at: new Date(), updated_at: new Date(), attempt: 1, lease_owner: null, cancel_action: null,
    base_checkpoint_id: null, has_base: false, result: { messages: [] }, error: null,
  });

  it('delivers through the proxy (the in-process policy, which would refuse loopback, is the proxy’s to apply) and stops at its refusal', async () => {
    // An empty allow-list: connecting itself, the server would refuse 127.0.0.1.
    const hooks = new RunWebhooks(new OutboundPolicy(''), { timeoutMs: 2000, retryDelayMs: 10 }, `http://127.0.0.1:${proxyPort}`);
    const path = `/via-proxy/${randomUUID()}`;
    hooks.runEnded(run(`http://127.0.0.1:${port}${path}`));
    hooks.runEnded(run(`http://127.0.0.1:${port + 1}/refused`));
    await hooks.close();
    expect(received).toEqual([path]);
    expect(tunnels).toContain(`127.0.0.1:${port}`);
    expect(tunnels).toContain(`127.0.0.1:${port + 1}`);
  });
});
