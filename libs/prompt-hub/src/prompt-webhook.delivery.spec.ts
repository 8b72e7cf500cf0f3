import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openServiceDataSource } from '@th/database';
import { OutboundPolicy } from '@th/platform';
import { createTestDatabase } from '@th/testing';
import type { DataSource } from 'typeorm';
import { PROMPT_HUB_MIGRATIONS } from './index';
import { DEFAULT_DELIVERY_OPTIONS, PromptWebhookDispatcher, PromptWebhookSender, SIGNATURE_HEADER, signWebhookBody, type PromptWebhookDeliveryOptions, type WebhookTarget } from './prompt-webhook.delivery';
import { WebhookOutboxRepository } from './webhook-outbox.repository';

/** The outbox and its dispatcher against a real PostgreSQL and a real receiver on loopback. */
describe('prompt webhook outbox and dispatcher', () => {
  let server: Server;
  let port: number;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let ds: DataSource;
  let outbox: WebhookOutboxRepository;
  const hits: { at: number; path: string; signature: string | undefined; body: string }[] = [];
  const plan = new Map<string, number[]>();
  const tenant = randomUUID();
  const targets = new Map<string, WebhookTarget>();
  const dispatchers: PromptWebhookDispatcher[] = [];

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
    db = await createTestDatabase('th_hub_outbox');
    ds = await openServiceDataSource({ url: db.url, schema: 'prompt_hub', entities: [], migrations: PROMPT_HUB_MIGRATIONS, poolSize: 4 });
    outbox = new WebhookOutboxRepository(ds);
  });
  // each test's dispatchers stop with it: none claims what the next test stages
  afterEach(async () => {
    await Promise.all(dispatchers.splice(0).map((d) => d.close()));
  });
  afterAll(async () => {
    await ds.destroy();
    await db.drop();
    await new Promise((r) => server.close(r));
  });

  const opts = (o: Partial<PromptWebhookDeliveryOptions> = {}): PromptWebhookDeliveryOptions => ({ ...DEFAULT_DELIVERY_OPTIONS, timeoutMs: 2_000, attempts: 3, backoffMs: 100, pollMs: 50, ...o });
  const dispatcher = (o: Partial<PromptWebhookDeliveryOptions> = {}, policy = new OutboundPolicy('127.0.0.1')) => {
    const d = new PromptWebhookDispatcher(outbox, new PromptWebhookSender(policy, 2_000), async (_t, id) => targets.get(id) ?? null, opts(o));
    dispatchers.push(d);
    return d;
  };
  /** A webhook pointing at `path` of the receiver, and one staged delivery to it. */
  async function stage(path: string, body = '{"a":1}'): Promise<{ webhookId: string; deliveryId: string }> {
    const webhookId = randomUUID();
    targets.set(webhookId, { id: webhookId, url: `http://127.0.0.1:${port}${path}`, headers: {}, secret: 'whsec_test' });
    const deliveryId = randomUUID();
    await outbox.stage([{ id: deliveryId, tenant_id: tenant, webhook_id: webhookId, event: 'commit', body }]);
    return { webhookId, deliveryId };
  }
  async function row(id: string): Promise<{ status: string; attempts: number; last_status_code: number | null; last_error: string | null }> {
    const rows = await ds.query(`SELECT status, attempts, last_status_code, last_error FROM prompt_hub.webhook_deliveries WHERE id = $1`, [id]);
    return rows[0];
  }
  async function until(check: () => Promise<boolean>, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  it('retries 5xx and 429 with doubling waits, then records the delivery; signs every try', async () => {
    plan.set('/flaky', [500, 429, 200]);
    const { deliveryId } = await stage('/flaky');
    dispatcher().start();
    await until(async () => (await row(deliveryId)).status !== 'pending');
    const tries = hits.filter((h) => h.path === '/flaky');
    expect(tries).toHaveLength(3);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(90);
    expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(190);
    const t = Number(/^t=(\d+),/.exec(tries[2]!.signature!)![1]);
    expect(tries[2]!.signature).toBe(signWebhookBody('whsec_test', '{"a":1}', t));
    expect(await row(deliveryId)).toEqual({ status: 'delivered', attempts: 3, last_status_code: 200, last_error: null });
  });

  it('does not retry a 4xx, gives up after its tries, and cancels a delivery whose webhook was deleted', async () => {
    plan.set('/gone', [410]);
    plan.set('/down', [503, 503, 503, 503]);
    const gone = await stage('/gone');
    const down = await stage('/down');
    const deleted = await stage('/deleted');
    targets.delete(deleted.webhookId);
    dispatcher().start();
    await until(async () => (await Promise.all([gone, down, deleted].map((s) => row(s.deliveryId)))).every((r) => r.status !== 'pending'));
    expect(hits.filter((h) => h.path === '/gone')).toHaveLength(1);
    expect(hits.filter((h) => h.path === '/down')).toHaveLength(3);
    expect(hits.filter((h) => h.path === '/deleted')).toHaveLength(0);
    expect(await row(gone.deliveryId)).toMatchObject({ status: 'failed', attempts: 1, last_status_code: 410 });
    expect(await row(down.deliveryId)).toMatchObject({ status: 'failed', attempts: 3, last_status_code: 503 });
    expect(await row(deleted.deliveryId)).toMatchObject({ status: 'cancelled', last_error: 'the webhook was deleted' });
  });

  it('keeps a staged delivery across a process that stopped: the next dispatcher sends it, and a lapsed claim is taken over', async () => {
    // staged while no dispatcher runs (the process died after the commit's transaction)
    const staged = await stage('/later');
    // claimed by a dispatcher that then died mid-POST: its lease runs out and another process sends it again
    const orphan = await stage('/orphan');
    await ds.query(`UPDATE prompt_hub.webhook_deliveries SET attempts = 1, lease_until = now() - interval '1 second' WHERE id = $1`, [orphan.deliveryId]);
    const fresh = dispatcher();
    fresh.start();
    await until(async () => (await row(staged.deliveryId)).status === 'delivered' && (await row(orphan.deliveryId)).status === 'delivered');
    expect(hits.filter((h) => h.path === '/later')).toHaveLength(1);
    expect(hits.filter((h) => h.path === '/orphan')).toHaveLength(1);
    expect((await row(orphan.deliveryId)).attempts).toBe(2);
  });

  it('sends each delivery once when two processes dispatch at the same time', async () => {
    const staged = await Promise.all(Array.from({ length: 40 }, (_, i) => stage(`/pair/${i}`)));
    const a = dispatcher({ concurrency: 8 });
    const b = dispatcher({ concurrency: 8 });
    a.start();
    b.start();
    await until(async () => (await Promise.all(staged.map((s) => row(s.deliveryId)))).every((r) => r.status === 'delivered'));
    for (let i = 0; i < 40; i++) expect(hits.filter((h) => h.path === `/pair/${i}`)).toHaveLength(1);
  });

  it('refuses, without retrying, a name that resolves to a blocked address at delivery time', async () => {
    // the name was public when the webhook was saved; it now points at loopback, which this policy does not allow
    const rebinding = new OutboundPolicy('', async () => [{ address: '127.0.0.1', family: 4 }]);
    const r = await new PromptWebhookSender(rebinding, 2_000).attempt({ id: 'w', url: `http://hooks.example.com:${port}/rebound`, headers: {}, secret: 'whsec_test' }, 'commit', '{}');
    expect(r).toMatchObject({ ok: false, retry: false });
    expect(hits.filter((h) => h.path === '/rebound')).toHaveLength(0);
  });

  it('forgets finished deliveries after the retention period, and fails one whose last try died with its process', async () => {
    const old = await stage('/old');
    await ds.query(`UPDATE prompt_hub.webhook_deliveries SET status = 'delivered', finished_at = now() - interval '2 hours' WHERE id = $1`, [old.deliveryId]);
    const stuck = await stage('/stuck');
    await ds.query(`UPDATE prompt_hub.webhook_deliveries SET attempts = 3, lease_until = now() - interval '1 second' WHERE id = $1`, [stuck.deliveryId]);
    await outbox.sweep(3, 3600_000);
    expect(await row(old.deliveryId)).toBeUndefined();
    expect(await row(stuck.deliveryId)).toMatchObject({ status: 'failed', last_error: 'the delivering process stopped' });
  });
});
