import { randomUUID } from 'node:crypto';
import { EventBus } from '@th/bus';
import { TOPICS, type AuditRecord } from '@th/contracts';
import { countTokens, DEFAULT_PRICE_MAP } from '@th/llm';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

describe('LLM runs and model price maps through the standalone service', () => {
  let svc: TestStandalone;
  const audit: AuditRecord[] = [];
  beforeAll(async () => {
    svc = await startTestStandalone();
    await svc.app.get(EventBus).subscribe(TOPICS.audit, { groupId: `llm-test-${randomUUID()}` }, async (batch) => {
      for (const m of batch) audit.push(m.value);
      return { rejected: [] };
    });
  });
  afterAll(async () => {
    await svc?.close();
  });

  const post = async (run: Json): Promise<string> => {
    const id = (run.id as string | undefined) ?? randomUUID();
    const res = await svc.api('/api/v1/runs', { method: 'POST', json: { start_time: '2026-11-22T04:00:00.000000Z', name: 'llm', run_type: 'llm', ...run, id } });
    expect(res.status).toBe(202);
    return id;
  };
  const get = async (id: string): Promise<Json> => {
    const res = await svc.api(`/api/v1/runs/${id}`);
    expect(res.status).toBe(200);
    return (await res.json()) as Json;
  };
  const project = async (): Promise<{ id: string; name: string }> => {
    const name = `llm-${randomUUID()}`;
    const res = await svc.api('/api/v1/sessions', { method: 'POST', json: { name } });
    expect(res.status).toBe(200);
    return { id: ((await res.json()) as Json).id as string, name };
  };

  it('reads an OpenAI chat completion: provider, model, tokens from usage_metadata, cost from the default table, normalized view', async () => {
    const id = await post({
      inputs: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] },
      outputs: { choices: [{ message: { role: 'assistant', content: 'hi!' } }], usage_metadata: { input_tokens: 1000, output_tokens: 200 } },
      extra: { metadata: { ls_provider: 'openai', ls_model_name: 'gpt-4o' } },
      end_time: '2026-11-22T04:00:01.000000Z',
    });
    const run = await get(id);
    const gpt4o = DEFAULT_PRICE_MAP.find((p) => p.name === 'gpt-4o')!;
    expect(run).toMatchObject({ prompt_tokens: 1000, completion_tokens: 200, total_tokens: 1200 });
    expect(run.prompt_cost).toBeCloseTo(1000 * gpt4o.prompt_cost, 12);
    expect(run.completion_cost).toBeCloseTo(200 * gpt4o.completion_cost, 12);
    expect(run.total_cost).toBeCloseTo(1000 * gpt4o.prompt_cost + 200 * gpt4o.completion_cost, 12);
    expect(run.llm).toMatchObject({
      provider: 'openai',
      model: 'gpt-4o',
      input_format: 'openai',
      output_format: 'openai',
      input_messages: [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }],
      output_messages: [{ role: 'assistant', content: [{ type: 'text', text: 'hi!' }] }],
      token_source: 'usage_metadata',
      cost_source: 'price_map',
      price_map_id: gpt4o.id,
      validation_errors: [],
    });
  });

  it('reads an Anthropic message with the neutral metadata keys and the provider usage, cache reads priced apart', async () => {
    const id = await post({
      inputs: { system: 'be brief', messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }] },
      outputs: { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'Hello' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 10, cache_read_input_tokens: 50 } },
      extra: { metadata: { svc_provider: 'anthropic', svc_model_name: 'claude-3-5-haiku-20241022' } },
    });
    const run = await get(id);
    const haiku = DEFAULT_PRICE_MAP.find((p) => p.name === 'claude-3.5-haiku')!;
    expect(run).toMatchObject({ prompt_tokens: 150, completion_tokens: 10, total_tokens: 160 });
    expect(run.prompt_cost).toBeCloseTo(100 * haiku.prompt_cost + 50 * haiku.prompt_cost_details!.cache_read, 12);
    expect(run.llm).toMatchObject({
      provider: 'anthropic',
      model: 'claude-3-5-haiku-20241022',
      input_format: 'anthropic',
      output_format: 'anthropic',
      token_source: 'provider_usage',
      input_token_details: { cache_read: 50 },
      input_messages: [{ role: 'system', content: [{ type: 'text', text: 'be brief' }] }, { role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    });
  });

  it('estimates tokens with the tokenizer of the model taken from inputs.model_name when no usage is supplied', async () => {
    const prompt = 'The quick brown fox jumps over the lazy dog.';
    const id = await post({ inputs: { model_name: 'gpt-4o-mini', messages: [{ role: 'user', content: prompt }] }, outputs: { choices: [{ message: { role: 'assistant', content: 'Indeed it does.' } }] } });
    const run = await get(id);
    expect(run.prompt_tokens).toBe(3 + 3 + countTokens('user', 'gpt-4o-mini') + countTokens(prompt, 'gpt-4o-mini'));
    expect(run.completion_tokens).toBe(countTokens('Indeed it does.', 'gpt-4o-mini'));
    expect(run.total_tokens).toBe((run.prompt_tokens as number) + (run.completion_tokens as number));
    expect(run.llm).toMatchObject({ model: 'gpt-4o-mini', token_source: 'estimated', cost_source: 'price_map' });
    expect(run.total_cost as number).toBeGreaterThan(0);
  });

  it('stores a run that breaks the spec message format and reports the problems on the run', async () => {
    const id = await post({
      inputs: {
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'add 1 and 2' }] },
          { role: 'assistant', content: [{ type: 'tool_call', id: 'call-1', name: 'add', args: { a: 1, b: 2 } }] },
          { role: 'tool', tool_call_id: 'call-9', content: [{ type: 'text', text: '3' }] },
        ],
      },
      outputs: { messages: [{ role: 'assistant', content: [{ type: 'text' }], usage_metadata: { input_tokens: 7, output_tokens: 2 } }] },
      extra: { metadata: { ls_model_name: 'my-own-model' } },
    });
    const run = await get(id);
    const llm = run.llm as Json;
    expect(llm).toMatchObject({ input_format: 'spec', output_format: 'spec', model: 'my-own-model', token_source: 'usage_metadata', cost_source: 'none' });
    expect((llm.validation_errors as Json[]).map((e) => (e.loc as unknown[]).join('.'))).toEqual(['inputs.messages.2.tool_call_id', 'outputs.messages.0.content.0.text']);
    expect(run).toMatchObject({ prompt_tokens: 7, completion_tokens: 2, total_cost: null, inputs: { messages: expect.any(Array) } });
  });

  it('creates, lists, updates and deletes workspace price maps, each audited, and prices runs with them', async () => {
    const before = audit.length;
    const created = await svc.api('/api/v1/model-price-map', {
      method: 'POST',
      json: { name: 'house', match_pattern: '^house-model(-v\\d+)?$', provider: 'acme', prompt_cost: 0.01, completion_cost: 0.02, prompt_cost_details: { cache_read: 0.001 } },
    });
    expect(created.status).toBe(200);
    const entry = (await created.json()) as Json;
    expect(entry).toMatchObject({ name: 'house', provider: 'acme', prompt_cost: 0.01, completion_cost: 0.02, prompt_cost_details: { cache_read: 0.001 } });

    const listed = (await (await svc.api('/api/v1/model-price-map')).json()) as Json[];
    expect(listed.find((e) => e.id === entry.id)).toMatchObject({ name: 'house', tenant_id: svc.workspaceId });
    expect(listed.filter((e) => e.tenant_id === null).length).toBe(DEFAULT_PRICE_MAP.length);

    const usage = { usage_metadata: { input_tokens: 100, output_tokens: 10, input_token_details: { cache_read: 20 } } };
    const priced = await get(await post({ inputs: { model: 'house-model-v2' }, outputs: usage, extra: { metadata: { ls_provider: 'acme' } } }));
    expect(priced.prompt_cost).toBeCloseTo(80 * 0.01 + 20 * 0.001, 12);
    expect(priced.completion_cost).toBeCloseTo(0.2, 12);
    expect(priced.llm).toMatchObject({ cost_source: 'price_map', price_map_id: entry.id });
    // Another provider's model of the same name is not priced by this entry.
    expect((await get(await post({ inputs: { model: 'house-model' }, outputs: usage, extra: { metadata: { ls_provider: 'other' } } }))).total_cost).toBeNull();
    // Explicit costs win over the price map.
    const explicit = await get(await post({ inputs: { model: 'house-model' }, outputs: { usage_metadata: { input_tokens: 100, output_tokens: 10, input_cost: 1, output_cost: 2 } } }));
    expect(explicit).toMatchObject({ prompt_cost: 1, completion_cost: 2, total_cost: 3 });

    const updated = await svc.api(`/api/v1/model-price-map/${String(entry.id)}`, { method: 'PUT', json: { prompt_cost: 0.5 } });
    expect(updated.status).toBe(200);
    expect(await updated.json()).toMatchObject({ id: entry.id, prompt_cost: 0.5, completion_cost: 0.02, name: 'house' });
    const repriced = await get(await post({ inputs: { model: 'house-model' }, outputs: { usage_metadata: { input_tokens: 10, output_tokens: 0 } } }));
    expect(repriced.prompt_cost).toBeCloseTo(5, 12);

    const deleted = await svc.api(`/api/v1/model-price-map/${String(entry.id)}`, { method: 'DELETE' });
    expect(deleted.status).toBe(200);
    const after = (await (await svc.api('/api/v1/model-price-map')).json()) as Json[];
    expect(after.some((e) => e.id === entry.id)).toBe(false);
    expect((await svc.api(`/api/v1/model-price-map/${String(entry.id)}`, { method: 'DELETE' })).status).toBe(404);

    const ops = audit.slice(before).map((a) => [a.operation, a.status, a.resources[0]?.id]);
    expect(ops).toEqual([
      ['create_model_price_map', 'Success', entry.id],
      ['update_model_price_map', 'Success', entry.id],
      ['delete_model_price_map', 'Success', entry.id],
      ['delete_model_price_map', 'Failure', entry.id],
    ]);
    expect(audit[before].workspace_id).toBe(svc.workspaceId);
  });

  it('rejects bad price maps with a 422 naming the field and writes nothing', async () => {
    const count = async () => ((await (await svc.api('/api/v1/model-price-map')).json()) as Json[]).length;
    const n = await count();
    const auditBefore = audit.length;
    const bad = [
      [{ name: 'x', match_pattern: '^gpt-(4o', prompt_cost: 1, completion_cost: 1 }, 'match_pattern'],
      [{ name: 'x', match_pattern: '^a$', prompt_cost: -1, completion_cost: 1 }, 'prompt_cost'],
      [{ name: 'x', match_pattern: '^a$', prompt_cost: '1', completion_cost: 1 }, 'prompt_cost'],
      [{ match_pattern: '^a$', prompt_cost: 1, completion_cost: 1 }, 'name'],
      [{ name: 'x', match_pattern: '^a$', prompt_cost: 1, completion_cost: 1, surprise: true }, 'surprise'],
    ] as const;
    for (const [json, field] of bad) {
      const res = await svc.api('/api/v1/model-price-map', { method: 'POST', json });
      expect(res.status).toBe(422);
      const body = (await res.json()) as { detail: { loc: unknown[]; msg: string; type: string }[] };
      expect(body.detail.some((d) => d.loc.join('.').startsWith(`body.${field}`) || (field === 'surprise' && d.msg.includes('surprise')))).toBe(true);
    }
    const def = DEFAULT_PRICE_MAP[0].id;
    const onDefault = await svc.api(`/api/v1/model-price-map/${def}`, { method: 'PATCH', json: { prompt_cost: 0 } });
    expect(onDefault.status).toBe(422);
    expect((await svc.api('/api/v1/model-price-map/not-a-uuid', { method: 'PATCH', json: {} })).status).toBe(422);
    expect((await svc.api(`/api/v1/model-price-map/${randomUUID()}`, { method: 'PATCH', json: { match_pattern: '(' } })).status).toBe(422);
    expect(await count()).toBe(n);
    expect(audit.slice(auditBefore).every((a) => a.status === 'Failure')).toBe(true);
  });

  it('fills first_token_time from the first new_token event and reports time-to-first-token p50/p99 in stats and queries', async () => {
    const p = await project();
    const start = Date.parse('2026-11-22T05:00:00.000Z');
    const delays = [100, 200, 300, 400, 1000];
    const ids: string[] = [];
    for (const [i, d] of delays.entries()) {
      const t0 = new Date(start + i * 10_000);
      ids.push(
        await post({
          session_name: p.name,
          start_time: t0.toISOString(),
          end_time: new Date(t0.getTime() + 2000).toISOString(),
          inputs: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
          outputs: { usage_metadata: { input_tokens: 10, output_tokens: 5 } },
          // Events out of order: the earliest new_token counts.
          events: [
            { name: 'new_token', time: new Date(t0.getTime() + d + 50).toISOString(), kwargs: { token: 'b' } },
            { name: 'new_token', time: new Date(t0.getTime() + d).toISOString(), kwargs: { token: 'a' } },
          ],
        }),
      );
    }
    const run = await get(ids[0]);
    expect(run.first_token_time).toBe('2026-11-22T05:00:00.100000Z');
    const stats = (await (await svc.api('/api/v1/runs/stats', { method: 'POST', json: { session: [p.id] } })).json()) as Json;
    expect(stats.first_token_p50).toBeCloseTo(0.3, 6);
    expect(stats.first_token_p99 as number).toBeGreaterThan(0.9);
    expect(stats.first_token_p99 as number).toBeLessThanOrEqual(1.0);
    expect(stats).toMatchObject({ run_count: 5, total_tokens: 75, prompt_tokens: 50, completion_tokens: 25, streaming_rate: 1 });
    const q = (await (await svc.api('/api/v1/runs/query', { method: 'POST', json: { session: [p.id], select: ['id', 'first_token_time'] } })).json()) as { runs: Json[] };
    expect(q.runs.map((r) => r.first_token_time).sort()).toEqual(delays.map((d, i) => new Date(start + i * 10_000 + d).toISOString().replace('Z', '000Z')));
  });

  it('keeps trace and project aggregates exact under redelivered and out-of-order events', async () => {
    const p = await project();
    const traceId = randomUUID();
    const childId = randomUUID();
    const t0 = '2026-11-22T06:00:00.000000Z';
    const root = { id: traceId, trace_id: traceId, name: 'chain', run_type: 'chain', start_time: t0, session_name: p.name, dotted_order: `20261122T060000000000Z${traceId}` };
    const child = {
      id: childId,
      trace_id: traceId,
      parent_run_id: traceId,
      name: 'llm',
      run_type: 'llm',
      start_time: '2026-11-22T06:00:00.100000Z',
      session_name: p.name,
      dotted_order: `20261122T060000000000Z${traceId}.20261122T060000100000Z${childId}`,
      inputs: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
      events: [{ name: 'new_token', time: '2026-11-22T06:00:00.600000Z' }],
    };
    const childPatch = { id: childId, trace_id: traceId, dotted_order: child.dotted_order, end_time: '2026-11-22T06:00:01.100000Z', outputs: { usage_metadata: { input_tokens: 300, output_tokens: 30 } } };
    const rootPatch = { id: traceId, trace_id: traceId, dotted_order: root.dotted_order, end_time: '2026-11-22T06:00:02.000000Z', error: 'boom' };
    // The patches first, then the posts, then everything again.
    for (const batch of [{ patch: [childPatch, rootPatch] }, { post: [root, child] }, { post: [root, child], patch: [childPatch, rootPatch] }, { patch: [childPatch] }]) {
      expect((await svc.api('/api/v1/runs/batch', { method: 'POST', json: batch })).status).toBe(202);
    }
    const gpt4o = DEFAULT_PRICE_MAP.find((e) => e.name === 'gpt-4o')!;
    const cost = 300 * gpt4o.prompt_cost + 30 * gpt4o.completion_cost;
    const projectStats = (await (await svc.api('/api/v1/runs/stats', { method: 'POST', json: { session: [p.id] } })).json()) as Json;
    expect(projectStats).toMatchObject({ run_count: 2, error_count: 1, error_rate: 0.5, total_tokens: 330, prompt_tokens: 300, completion_tokens: 30 });
    expect(projectStats.total_cost).toBeCloseTo(cost, 12);
    expect(projectStats.first_token_p50).toBeCloseTo(0.5, 6);
    expect(projectStats.latency_p99 as number).toBeGreaterThan(1);
    const traceStats = (await (await svc.api('/api/v1/runs/stats', { method: 'POST', json: { trace: traceId } })).json()) as Json;
    expect(traceStats).toMatchObject({ run_count: 2, total_tokens: 330 });
    expect(traceStats.total_cost).toBeCloseTo(cost, 12);
    const listed = (await (await svc.api(`/api/v1/sessions?name=${encodeURIComponent(p.name)}&include_stats=true`)).json()) as Json[];
    expect(listed[0]).toMatchObject({ id: p.id, run_count: 2, total_tokens: 330, error_rate: 0.5 });
    expect(listed[0].total_cost).toBeCloseTo(cost, 12);
    expect(listed[0].first_token_p50).toBeCloseTo(0.5, 6);
    const rows = await svc.ch.query<{ n: string }>('SELECT count() AS n FROM runs FINAL WHERE tenant_id = {t:UUID} AND trace_id = {id:UUID} AND is_deleted = 0', { t: svc.workspaceId, id: traceId });
    expect(Number(rows[0].n)).toBe(2);
  });
});
