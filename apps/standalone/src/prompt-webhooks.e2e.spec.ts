import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client as Pg } from 'pg';
import { PromptTemplate } from '@langchain/core/prompts';
import { Client } from 'langsmith';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { EventBus } from '@th/bus';
import { SIGNATURE_HEADER, signWebhookBody } from '@th/prompt-hub';
import { createTestDatabase } from '@th/testing';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, any>;
interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Prompt webhooks with a real receiver on loopback (allowed by OUTBOUND_ALLOWED_HOSTS=127.0.0.1). */
describe('prompt webhooks', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let svc: TestStandalone;
  let sql: Pg;
  let receiver: Server;
  let base: string;
  const received: Received[] = [];
  /** Status answered per path, in turn (then 200). */
  const plan = new Map<string, number[]>();
  const audit: AuditRecord[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
        const status = plan.get(req.url ?? '')?.shift() ?? 200;
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    db = await createTestDatabase('th_prompt_webhooks');
    svc = await startTestStandalone({ DATABASE_URL: db.url, OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
    sql = new Pg({ connectionString: db.url });
    await sql.connect();
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `pw-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value);
    });
  }, 120_000);
  afterAll(async () => {
    await sql?.end();
    await svc?.close();
    await db?.drop();
    await new Promise((r) => receiver?.close(r));
  });

  async function json<T = Json>(res: Response, status = 200): Promise<T> {
    const text = await res.text();
    if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${text.slice(0, 500)}`);
    return JSON.parse(text) as T;
  }
  /** Waits (bounded) until `n` deliveries reached `path`. */
  async function deliveries(path: string, n: number, ms = 10_000): Promise<Received[]> {
    const deadline = Date.now() + ms;
    while (received.filter((r) => r.path === path).length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    return received.filter((r) => r.path === path);
  }
  async function auditOf(operation: string, n: number): Promise<AuditRecord[]> {
    const deadline = Date.now() + 5_000;
    while (audit.filter((e) => e.operation === operation).length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
    return audit.filter((e) => e.operation === operation);
  }

  it('signs a delivery for each commit and tag change on the prompts it covers, retrying with backoff', async () => {
    const prompt = `hooked-${randomUUID().slice(0, 8)}`;
    const created = await json(
      await svc.api('/api/v1/prompt-webhooks', { method: 'POST', json: { url: `${base}/hook?token=abc`, headers: { authorization: 'Bearer receiver-token' }, include_prompts: [prompt], triggers: ['commit', 'tag:create'] } }),
    );
    expect(created.secret).toMatch(/^whsec_/);
    expect(created.headers).toEqual({ authorization: '********' });
    const other = await json(await svc.api('/api/v1/prompt-webhooks', { method: 'POST', json: { url: `${base}/other`, exclude_prompts: [prompt] } }));
    // secret and header values are sealed at rest
    const { rows } = await sql.query(`SELECT secret_sealed, headers_sealed FROM prompt_hub.webhooks WHERE id = $1`, [created.id]);
    expect(rows[0].secret_sealed).toMatch(/^v1\./);
    expect(JSON.stringify(rows[0])).not.toContain(created.secret.slice(6));
    expect(JSON.stringify(rows[0])).not.toContain('receiver-token');

    plan.set('/hook?token=abc', [503]); // the first try fails: retried after the backoff
    const client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, timeout_ms: 20_000 });
    const template = PromptTemplate.fromTemplate('hello {name}');
    const started = Date.now();
    await client.pushPrompt(prompt, { object: template });
    const [first, second] = await deliveries('/hook?token=abc', 2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(second!.body).toBe(first!.body);
    const payload = JSON.parse(second!.body) as Json;
    const pulled = await client.pullPromptCommit(prompt);
    expect(payload).toMatchObject({ event: 'commit', prompt_name: prompt, commit_hash: pulled.commit_hash, manifest: JSON.parse(JSON.stringify(template)) });
    expect(second!.headers.authorization).toBe('Bearer receiver-token');
    expect(second!.headers['x-tracehouse-event']).toBe('commit');
    const sig = String(second!.headers[SIGNATURE_HEADER]);
    const t = Number(/^t=(\d+),/.exec(sig)![1]);
    expect(sig).toBe(signWebhookBody(created.secret, second!.body, t));
    expect(sig).not.toBe(signWebhookBody('whsec_wrong', second!.body, t));
    // staged with the commit, in its transaction; recorded once sent
    const stagedOf = async () => (await sql.query(`SELECT status, attempts, last_status_code FROM prompt_hub.webhook_deliveries WHERE webhook_id = $1 AND event = 'commit'`, [created.id])).rows;
    for (const deadline = Date.now() + 5_000; (await stagedOf())[0]?.status === 'pending' && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 25));
    expect(await stagedOf()).toEqual([{ status: 'delivered', attempts: 2, last_status_code: 200 }]);

    // a tag on the commit: tag:create
    const { commits } = await json(await svc.api(`/api/v1/commits/-/${prompt}/`));
    await json(await svc.api(`/api/v1/repos/-/${prompt}/tags`, { method: 'POST', json: { tag_name: 'prod', commit_id: (commits as Json[])[0]!.id } }));
    const third = (await deliveries('/hook?token=abc', 3))[2]!;
    expect(JSON.parse(third.body)).toMatchObject({ event: 'tag:create', tag_name: 'prod', commit_hash: pulled.commit_hash });
    // the delivery history through the API: newest first, paged, filtered by status; bad queries 422, others' 404
    const history = `/api/v1/prompt-webhooks/${created.id as string}/deliveries`;
    for (const deadline = Date.now() + 5_000; (await json(await svc.api(`${history}?status=pending`))).total > 0 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 25));
    const all = await json(await svc.api(history));
    expect(all.total).toBe(2);
    expect(all.deliveries.map((d: Json) => [d.event, d.status, d.attempts, d.last_status_code])).toEqual([
      ['tag:create', 'delivered', 1, 200],
      ['commit', 'delivered', 2, 200],
    ]);
    expect(all.deliveries[1]).toMatchObject({ webhook_id: created.id, next_attempt_at: null, last_error: null });
    expect(typeof all.deliveries[1].finished_at).toBe('string');
    const page = await json(await svc.api(`${history}?limit=1&offset=1`));
    expect(page).toMatchObject({ total: 2, deliveries: [{ event: 'commit' }] });
    expect(await json(await svc.api(`${history}?status=failed`))).toEqual({ deliveries: [], total: 0 });
    for (const qs of ['limit=0', 'limit=101', 'offset=-1', 'status=lost']) expect((await json(await svc.api(`${history}?${qs}`), 422)).detail[0].loc[0]).toBe('query');
    expect((await json(await svc.api(`/api/v1/prompt-webhooks/not-a-uuid/deliveries`), 422)).detail[0].loc).toEqual(['path', 'webhook_id']);
    expect((await svc.api(`/api/v1/prompt-webhooks/${randomUUID()}/deliveries`)).status).toBe(404);
    // the other webhook excludes this prompt; a prompt it covers reaches it
    await client.pushPrompt(`elsewhere-${randomUUID().slice(0, 8)}`, { object: template });
    expect((await deliveries('/other', 1)).length).toBe(1);
    expect(received.filter((r) => r.path === '/other').map((r) => JSON.parse(r.body).prompt_name)).not.toContain(prompt);
    await json(await svc.api(`/api/v1/prompt-webhooks/${other.id as string}`, { method: 'DELETE' }));
    expect(await auditOf('create_prompt_webhook', 2)).toHaveLength(2);
    expect((await auditOf('delete_prompt_webhook', 1)).map((e) => e.status)).toEqual(['Success']);
  }, 60_000);

  it('list, get, update, delete, test; refused addresses and bad bodies are 422 and audited; other workspaces see nothing', async () => {
    const w = await json(await svc.api('/api/v1/prompt-webhooks', { method: 'POST', json: { url: `${base}/crud` } }));
    expect(w).toMatchObject({ url: `${base}/crud`, triggers: ['commit'], include_prompts: null, headers: null, tenant_id: svc.workspaceId });
    expect((await json<Json[]>(await svc.api('/api/v1/prompt-webhooks'))).map((x) => x.id)).toContain(w.id);
    const got = await json(await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`));
    expect(got.secret).toBeUndefined();
    const upd = await json(await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`, { method: 'PATCH', json: { triggers: ['tag:update'], include_prompts: ['a'] } }));
    expect(upd).toMatchObject({ url: `${base}/crud`, triggers: ['tag:update'], include_prompts: ['a'] });
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://10.1.2.3/hook', 'ftp://127.0.0.1/x', 'http://localhost:1/x']) {
      const r = await json(await svc.api('/api/v1/prompt-webhooks', { method: 'POST', json: { url } }), 422);
      expect(r.detail[0].loc).toEqual(['body', 'url']);
    }
    await json(await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`, { method: 'PATCH', json: { url: 'http://10.1.2.3/x' } }), 422);
    for (const body of [{}, { url: 'not a url' }, { url: `${base}/x`, triggers: ['push'] }, { url: `${base}/x`, headers: { host: 'evil' } }, { url: `${base}/x`, headers: { 'x-a': 5 } }]) {
      await json(await svc.api('/api/v1/prompt-webhooks', { method: 'POST', json: body }), 422);
    }
    expect((await svc.api(`/api/v1/prompt-webhooks/${randomUUID()}`)).status).toBe(404);
    await json(await svc.api('/api/v1/prompt-webhooks/not-a-uuid'), 422);
    // nothing partial was written by the refused calls
    expect((await json<Json[]>(await svc.api('/api/v1/prompt-webhooks'))).filter((x) => !String(x.url).startsWith(base))).toEqual([]);
    expect((await json(await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`))).url).toBe(`${base}/crud`);
    // test: one unsigned POST of the given payload
    const payload = { event: 'commit', prompt_id: randomUUID(), prompt_name: 'p', commit_hash: 'abc', created_at: new Date().toISOString(), created_by: 'me', manifest: { id: ['x'] } };
    expect(await json(await svc.api('/api/v1/prompt-webhooks/test', { method: 'POST', json: { webhook: { url: `${base}/test` }, payload } }))).toEqual({ status: 'delivered', status_code: '200' });
    const [t] = await deliveries('/test', 1);
    expect(JSON.parse(t!.body)).toEqual(payload);
    expect(t!.headers[SIGNATURE_HEADER]).toBeUndefined();
    plan.set('/test-fail', [500]);
    expect(await json(await svc.api('/api/v1/prompt-webhooks/test', { method: 'POST', json: { webhook: { url: `${base}/test-fail` }, payload } }))).toMatchObject({ status: 'failed', status_code: '500' });
    await json(await svc.api('/api/v1/prompt-webhooks/test', { method: 'POST', json: { webhook: { url: 'http://10.9.9.9/' }, payload } }), 422);
    expect((await auditOf('test_prompt_webhook', 3)).map((e) => e.status).sort()).toEqual(['Failure', 'Success', 'Success']);
    // another workspace: nothing to see or change
    const ws = await json(await svc.api('/api/v1/workspaces', { method: 'POST', json: { name: 'Other' } }));
    const sk = await json(await svc.api('/api/v1/service-keys', { method: 'POST', json: { workspace_id: null, description: 'other' } }));
    const headers = { 'x-api-key': sk.key as string, 'x-tenant-id': ws.id as string };
    expect(await json(await svc.api('/api/v1/prompt-webhooks', { headers }))).toEqual([]);
    expect((await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`, { headers })).status).toBe(404);
    expect((await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`, { method: 'DELETE', headers })).status).toBe(404);
    expect((await svc.api(`/api/v1/prompt-webhooks/${w.id as string}/deliveries`, { headers })).status).toBe(404);
    await json(await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`, { method: 'DELETE' }));
    expect((await svc.api(`/api/v1/prompt-webhooks/${w.id as string}`)).status).toBe(404);
    const updates = await auditOf('update_prompt_webhook', 2);
    expect(updates.map((e) => e.status).sort()).toEqual(['Failure', 'Success']);
  }, 60_000);
});
