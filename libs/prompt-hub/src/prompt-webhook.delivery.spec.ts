import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OutboundPolicy } from '@th/platform';
import { PromptWebhookDelivery, SIGNATURE_HEADER, signWebhookBody } from './prompt-webhook.delivery';

/** Deliveries against a real receiver on loopback. */
describe('PromptWebhookDelivery', () => {
  let server: Server;
  let port: number;
  const hits: { at: number; path: string; signature: string | undefined; body: string }[] = [];
  const plan = new Map<string, number[]>();

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString('utf8')));
      req.on('end', () => {
        hits.push({ at: Date.now(), path: req.url ?? '', signature: req.headers[SIGNATURE_HEADER] as string | undefined, body });
        res.writeHead(plan.get(req.url ?? '')?.shift() ?? 204).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });

  const allowed = () => new PromptWebhookDelivery(new OutboundPolicy('127.0.0.1'), { timeoutMs: 2_000, attempts: 3, backoffMs: 100, maxInflight: 10 });
  const target = (path: string) => ({ id: 'w', url: `http://127.0.0.1:${port}${path}`, headers: {}, secret: 'whsec_test' });

  it('retries 5xx and 429 with doubling waits, then stops; signs every try', async () => {
    plan.set('/flaky', [500, 429, 200]);
    const d = allowed();
    d.enqueue(target('/flaky'), 'commit', '{"a":1}');
    await d.close();
    const tries = hits.filter((h) => h.path === '/flaky');
    expect(tries).toHaveLength(3);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(90);
    expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(190);
    const t = Number(/^t=(\d+),/.exec(tries[2]!.signature!)![1]);
    expect(tries[2]!.signature).toBe(signWebhookBody('whsec_test', '{"a":1}', t));
  });

  it('does not retry a 4xx, and gives up after its tries', async () => {
    plan.set('/gone', [410]);
    plan.set('/down', [503, 503, 503, 503]);
    const d = allowed();
    d.enqueue(target('/gone'), 'commit', '{}');
    d.enqueue(target('/down'), 'commit', '{}');
    await d.close();
    expect(hits.filter((h) => h.path === '/gone')).toHaveLength(1);
    expect(hits.filter((h) => h.path === '/down')).toHaveLength(3);
  });

  it('refuses, without retrying, a name that resolves to a blocked address at delivery time', async () => {
    // the name was public when the webhook was saved; it now points at loopback, which this policy does not allow
    const rebinding = new OutboundPolicy('', async () => [{ address: '127.0.0.1', family: 4 }]);
    const d = new PromptWebhookDelivery(rebinding, { timeoutMs: 2_000, attempts: 3, backoffMs: 100, maxInflight: 10 });
    const r = await d.attempt({ id: 'w', url: `http://hooks.example.com:${port}/rebound`, headers: {}, secret: 'whsec_test' }, 'commit', '{}');
    expect(r).toMatchObject({ ok: false, retry: false });
    expect(hits.filter((h) => h.path === '/rebound')).toHaveLength(0);
  });

  it('drops deliveries past maxInflight instead of queueing without bound', async () => {
    const d = new PromptWebhookDelivery(new OutboundPolicy('127.0.0.1'), { timeoutMs: 2_000, attempts: 1, backoffMs: 10, maxInflight: 2 });
    for (let i = 0; i < 5; i++) d.enqueue(target('/many'), 'commit', '{}');
    await d.close();
    expect(hits.filter((h) => h.path === '/many')).toHaveLength(2);
  });
});
