import { randomUUID } from 'node:crypto';
import { Client } from 'langsmith';
import { ClickHouse } from '@th/clickhouse';
import { IdentityService } from '@th/gateway';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

/** Presigned feedback tokens (issue 32): issued with a key through the SDK, used without one. */
describe('presigned feedback tokens through the standalone service', () => {
  let svc: TestStandalone;
  let client: Client;
  let runId: string;
  const call = (path: string, init: { method?: string; json?: unknown; key?: string } = {}) =>
    fetch(`${svc.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}), ...(init.key ? { 'x-api-key': init.key } : {}) },
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
  const collect = async (key: string): Promise<Json[]> => {
    const out: Json[] = [];
    for await (const f of client.listFeedback({ runIds: [runId], feedbackKeys: [key] })) out.push(f as unknown as Json);
    return out;
  };

  beforeAll(async () => {
    svc = await startTestStandalone();
    client = new Client({ apiUrl: `${svc.url}/api/v1`, apiKey: svc.apiKey, autoBatchTracing: false, timeout_ms: 20_000 });
    runId = randomUUID();
    await client.createRun({ id: runId, name: 'chat', run_type: 'llm', inputs: { q: 'hi' }, project_name: `tokens-${randomUUID().slice(0, 8)}`, start_time: Date.now() });
    for (let i = 0; i < 50; i++) {
      if ((await call(`/api/v1/runs/${runId}`, { key: svc.apiKey })).status === 200) break;
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('the SDK issues a token; its URL and its id both take feedback without a key, by POST and by a GET link', async () => {
    const token = await client.createPresignedFeedbackToken(runId, 'thumbs', { feedbackConfig: { type: 'continuous', min: 0, max: 1 } });
    expect(token.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(token.url).toBe(`${svc.url}/api/v1/feedback/tokens/${token.id}`);
    expect(Date.parse(token.expires_at) - Date.now()).toBeGreaterThan(2.9 * 3_600_000);

    expect((await call(new URL(token.url).pathname, { method: 'POST', json: { score: 1, value: 'up', comment: 'great', metadata: { page: 'chat' } } })).status).toBe(200);
    expect((await call(`/feedback/tokens/${token.id}?score=0&comment=meh&correction=${encodeURIComponent('{"answer":"hello"}')}`)).status).toBe(200);
    const got = await collect('thumbs');
    expect(got).toHaveLength(2);
    expect(got.map((f) => f.score).sort()).toEqual([0, 1]);
    expect(got.find((f) => f.score === 1)).toMatchObject({ value: 'up', comment: 'great', feedback_source: { type: 'app', metadata: { page: 'chat' } } });
    expect(got.find((f) => f.score === 0)).toMatchObject({ comment: 'meh', correction: { answer: 'hello' } });
  });

  it('bad uses: 422 with the spec shape, unknown 404, expired 410, out-of-config score refused; nothing written', async () => {
    const token = await client.createPresignedFeedbackToken(runId, 'bounded', { feedbackConfig: { type: 'continuous', min: 0, max: 1 } });
    for (const [path, init] of [
      [`/feedback/tokens/${token.id}`, { method: 'POST', json: { score: 5 } }],
      [`/feedback/tokens/${token.id}`, { method: 'POST', json: { score: 'x' } }],
      [`/feedback/tokens/${token.id}`, { method: 'POST', json: { unknown: 1 } }],
      [`/feedback/tokens/${token.id}?score=abc`, {}],
      ['/feedback/tokens/not-a-uuid', { method: 'POST', json: { score: 1 } }],
    ] as const) {
      const res = await call(path, init);
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: Json[] };
      expect(body.detail[0]).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    }
    expect((await call(`/feedback/tokens/${randomUUID()}`, { method: 'POST', json: { score: 1 } })).status).toBe(404);
    const expired = (await (
      await call('/feedback/tokens', { method: 'POST', key: svc.apiKey, json: { run_id: runId, feedback_key: 'bounded', expires_at: new Date(Date.now() + 1000).toISOString() } })
    ).json()) as Json;
    await new Promise((r) => setTimeout(r, 1200));
    const res = await call(`/feedback/tokens/${expired.id as string}`, { method: 'POST', json: { score: 1 } });
    expect(res.status).toBe(410);
    expect(((await res.json()) as Json).detail).toMatch(/expired/);
    expect(await collect('bounded')).toHaveLength(0);
  });

  it('issuing: bad bodies 422, other workspaces\' runs 404 like free ids, a list answers a list; the issuing route needs a key', async () => {
    for (const bad of [{}, { run_id: runId }, { run_id: runId, feedback_key: 'k', expires_in: { hours: 0 } }, { run_id: runId, feedback_key: 'k', expires_in: { days: 400 } }, { run_id: 'x', feedback_key: 'k' }, []]) {
      expect((await call('/feedback/tokens', { method: 'POST', key: svc.apiKey, json: bad })).status).toBe(422);
    }
    expect((await call('/feedback/tokens', { method: 'POST', json: { run_id: runId, feedback_key: 'k' } })).status).toBe(401);
    expect((await call('/feedback/tokens', { method: 'POST', key: svc.apiKey, json: { run_id: randomUUID(), feedback_key: 'k' } })).status).toBe(404);
    const other = await svc.app.get(IdentityService).createOrganization({ name: `other-${randomUUID()}` });
    expect((await call('/feedback/tokens', { method: 'POST', key: other.api_key, json: { run_id: runId, feedback_key: 'k' } })).status).toBe(404);
    const list = (await (
      await call('/feedback/tokens', { method: 'POST', key: svc.apiKey, json: [{ run_id: runId, feedback_key: 'a', expires_in: { minutes: 5 } }, { run_id: runId, feedback_key: 'b' }] })
    ).json()) as Json[];
    expect(list).toHaveLength(2);
    expect(new Set(list.map((t) => t.id)).size).toBe(2);
    // Only the hash is stored: the token's value appears nowhere in the table.
    const rows = await svc.app.get(ClickHouse).query<{ token_hash: string }>(`SELECT token_hash FROM feedback_tokens`);
    expect(rows.some((r) => r.token_hash.includes(list[0].id as string))).toBe(false);
    expect(rows.length).toBeGreaterThanOrEqual(2);
  });

  it("the SDK lists a run's live tokens, newest first, without their values; paging, other workspaces and bad queries", async () => {
    const listRun = randomUUID();
    await client.createRun({ id: listRun, name: 'listed', run_type: 'chain', inputs: {}, project_name: `tokens-${randomUUID().slice(0, 8)}`, start_time: Date.now() });
    for (let i = 0; i < 50 && (await call(`/api/v1/runs/${listRun}`, { key: svc.apiKey })).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
    const issued = [];
    for (const key of ['a', 'b', 'c']) issued.push(await client.createPresignedFeedbackToken(listRun, key));
    await call('/feedback/tokens', { method: 'POST', key: svc.apiKey, json: { run_id: listRun, feedback_key: 'gone', expires_at: new Date(Date.now() + 500).toISOString() } });
    await new Promise((r) => setTimeout(r, 700));

    const listed: Json[] = [];
    for await (const t of client.listPresignedFeedbackTokens(listRun)) listed.push(t as unknown as Json);
    expect(listed).toHaveLength(3);
    for (const t of listed) {
      expect(t).toEqual({ id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/), url: '', expires_at: expect.any(String) });
      expect(issued.map((i) => i.id)).not.toContain(t.id);
      // A listed id is not a token: it takes no feedback.
      expect((await call(`/feedback/tokens/${t.id as string}`, { method: 'POST', json: { score: 1 } })).status).toBe(404);
    }
    expect(listed.map((t) => t.expires_at).sort()).toEqual(issued.map((i) => new Date(i.expires_at).toISOString()).sort());
    // Stable across reads, and paged by limit/offset as the SDKs page.
    const page = async (q: string) => (await (await call(`/feedback/tokens?run_id=${listRun}&${q}`, { key: svc.apiKey })).json()) as Json[];
    expect([...(await page('limit=2')), ...(await page('limit=2&offset=2'))].map((t) => t.id)).toEqual(listed.map((t) => t.id));

    const other = await svc.app.get(IdentityService).createOrganization({ name: `other-${randomUUID()}` });
    const foreign = await call(`/feedback/tokens?run_id=${listRun}`, { key: other.api_key });
    expect(foreign.status).toBe(200);
    expect(await foreign.json()).toEqual([]);
    expect((await call(`/feedback/tokens?run_id=${listRun}`)).status).toBe(401);
    for (const q of ['', 'run_id=x', `run_id=${listRun}&limit=0`, `run_id=${listRun}&limit=101`, `run_id=${listRun}&offset=-1`, `run_id=${listRun}&token=1`]) {
      const res = await call(`/feedback/tokens?${q}`, { key: svc.apiKey });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { detail: Json[] }).detail[0]).toEqual({ loc: expect.any(Array), msg: expect.any(String), type: expect.any(String) });
    }
  });
});
