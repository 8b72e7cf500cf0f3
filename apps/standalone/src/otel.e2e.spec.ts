import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { context, trace, SpanKind, SpanStatusCode, type Span } from '@opentelemetry/api';
import { OTLPTraceExporter as ProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as HttpExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { DEFAULT_PRICE_MAP } from '@th/llm';
import { otlpTypes, spanUuid, traceUuid } from '@th/ingest';
import { startTestStandalone, type TestStandalone } from './testing/standalone-harness';

type Json = Record<string, unknown>;

describe('OpenTelemetry traces through the standalone service', () => {
  let svc: TestStandalone;
  beforeAll(async () => {
    svc = await startTestStandalone();
  });
  afterAll(async () => {
    await svc?.close();
  });

  const tracerWith = (exporter: ProtoExporter | HttpExporter) => {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'otel-e2e' }),
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    return { provider, tracer: provider.getTracer('otel-e2e', '1.0.0') };
  };
  const runsOfTrace = async (traceId: string): Promise<Json[]> => {
    const res = await svc.api('/api/v1/runs/query', { method: 'POST', json: { trace: traceId, order: 'asc' } });
    expect(res.status).toBe(200);
    return ((await res.json()) as { runs: Json[] }).runs;
  };
  const projectId = async (name: string): Promise<string | null> => {
    const res = await svc.api(`/api/v1/sessions?name=${encodeURIComponent(name)}`);
    const list = (await res.json()) as Json[];
    return list.length > 0 ? (list[0].id as string) : null;
  };

  it('takes GenAI spans from the real OTLP protobuf exporter, gzip-compressed, as runs with tokens, costs and first-token time', async () => {
    const project = `otel-proto-${randomUUID()}`;
    const exporter = new ProtoExporter({
      url: `${svc.url}/api/v1/otel/v1/traces`,
      headers: { 'x-api-key': svc.apiKey, 'Langsmith-Project': project },
      compression: 'gzip' as never,
    });
    const { provider, tracer } = tracerWith(exporter);
    const t0 = Date.now() - 10_000;
    const root: Span = tracer.startSpan('invoke_agent weather', { startTime: t0, attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'weather' } });
    const rootCtx = trace.setSpan(context.active(), root);
    const llm: Span = tracer.startSpan(
      'chat gpt-4o',
      {
        kind: SpanKind.CLIENT,
        startTime: t0 + 100,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'gpt-4o',
          'gen_ai.response.model': 'gpt-4o-2024-08-06',
          'gen_ai.request.temperature': 0.2,
          'gen_ai.usage.input_tokens': 1000,
          'gen_ai.usage.output_tokens': 50,
          'gen_ai.usage.cache_read.input_tokens': 400,
          'gen_ai.system_instructions': JSON.stringify([{ type: 'text', content: 'You are helpful.' }]),
          'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'Weather in Paris?' }] }]),
          'gen_ai.output.messages': JSON.stringify([
            { role: 'assistant', parts: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }], finish_reason: 'tool_call' },
          ]),
        },
      },
      rootCtx,
    );
    llm.addEvent('new_token', { token: 'get' }, t0 + 350);
    llm.end(t0 + 900);
    const tool: Span = tracer.startSpan(
      'execute_tool get_weather',
      { startTime: t0 + 1000, attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_weather', 'gen_ai.tool.call.arguments': '{"city":"Paris"}' } },
      rootCtx,
    );
    tool.recordException({ name: 'TimeoutError', message: 'weather service timed out' }, t0 + 1400);
    tool.setStatus({ code: SpanStatusCode.ERROR, message: 'weather service timed out' });
    tool.end(t0 + 1500);
    root.end(t0 + 2000);
    await provider.forceFlush();
    await provider.shutdown();

    const traceId = traceUuid(root.spanContext().traceId);
    const runs = await runsOfTrace(traceId);
    expect(runs).toHaveLength(3);
    const byId = new Map(runs.map((r) => [r.id as string, r]));
    const rootRun = byId.get(spanUuid(root.spanContext().spanId))!;
    const llmRun = byId.get(spanUuid(llm.spanContext().spanId))!;
    const toolRun = byId.get(spanUuid(tool.spanContext().spanId))!;
    const sessionId = await projectId(project);
    expect(sessionId).not.toBeNull();

    expect(rootRun).toMatchObject({ name: 'invoke_agent weather', run_type: 'chain', is_root: true, parent_run_id: null, trace_id: traceId, session_id: sessionId, status: 'success' });
    expect(rootRun.start_time).toBe(new Date(t0).toISOString().replace('Z', '000Z'));
    expect(rootRun.end_time).toBe(new Date(t0 + 2000).toISOString().replace('Z', '000Z'));

    expect(llmRun).toMatchObject({ run_type: 'llm', parent_run_id: rootRun.id, trace_id: traceId, prompt_tokens: 1000, completion_tokens: 50, total_tokens: 1050 });
    expect(llmRun.first_token_time).toBe(new Date(t0 + 350).toISOString().replace('Z', '000Z'));
    const gpt4o = DEFAULT_PRICE_MAP.find((p) => p.name === 'gpt-4o')!;
    expect(llmRun.prompt_cost).toBeCloseTo(600 * gpt4o.prompt_cost + 400 * gpt4o.prompt_cost_details!.cache_read, 12);
    expect(llmRun.completion_cost).toBeCloseTo(50 * gpt4o.completion_cost, 12);
    const extra = llmRun.extra as { metadata: Json; invocation_params: Json; otel: Json };
    expect(extra.metadata).toMatchObject({ ls_provider: 'openai', ls_model_name: 'gpt-4o-2024-08-06', 'gen_ai.operation.name': 'chat', 'service.name': 'otel-e2e' });
    expect(extra.invocation_params).toMatchObject({ temperature: 0.2, model: 'gpt-4o' });
    expect(extra.otel).toMatchObject({ span_id: llm.spanContext().spanId, parent_span_id: root.spanContext().spanId, kind: 3, scope: { name: 'otel-e2e', version: '1.0.0' } });
    expect(llmRun.inputs).toEqual({
      messages: [
        { role: 'system', content: [{ type: 'text', text: 'You are helpful.' }] },
        { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      ],
    });
    expect(llmRun.outputs).toEqual({ messages: [{ role: 'assistant', content: [{ type: 'tool_call', id: 'call_1', name: 'get_weather', args: { city: 'Paris' } }], finish_reason: 'tool_call' }] });
    expect(llmRun.llm).toMatchObject({ provider: 'openai', model: 'gpt-4o-2024-08-06', input_format: 'spec', output_format: 'spec', validation_errors: [], token_source: 'usage_metadata' });

    expect(toolRun).toMatchObject({ run_type: 'tool', parent_run_id: rootRun.id, status: 'error', error: 'weather service timed out', inputs: { city: 'Paris' } });
    expect((toolRun.events as Json[]).map((e) => e.name)).toEqual(['exception']);
  });

  it('takes the published tracing SDK span attributes from the real OTLP/JSON (http) exporter', async () => {
    const project = `otel-json-${randomUUID()}`;
    // `<endpoint>/otel`: the address the Python SDK's OTEL mode gives its exporter (the same endpoint as /otel/v1/traces).
    const exporter = new HttpExporter({ url: `${svc.url}/otel`, headers: { 'x-api-key': svc.apiKey } });
    const { provider, tracer } = tracerWith(exporter);
    const t0 = Date.now() - 5000;
    const span = tracer.startSpan('ChatAnthropic', {
      startTime: t0,
      attributes: {
        'langsmith.span.kind': 'llm',
        'langsmith.trace.name': 'my-llm-call',
        'langsmith.trace.session_name': project,
        'langsmith.metadata.user_id': 'u-42',
        'langsmith.span.tags': 'prod, beta',
        'gen_ai.system': 'anthropic',
        'gen_ai.request.model': 'claude-3-5-haiku-20241022',
        'gen_ai.prompt': JSON.stringify({ messages: [{ role: 'user', content: 'hi' }] }),
        'gen_ai.completion': JSON.stringify({ type: 'message', role: 'assistant', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn' }),
        'langsmith.usage_metadata': JSON.stringify({ input_tokens: 12, output_tokens: 3, total_tokens: 15, input_cost: 0.5, output_cost: 0.25 }),
      },
    });
    span.end(t0 + 700);
    await provider.forceFlush();
    await provider.shutdown();

    const runs = await runsOfTrace(traceUuid(span.spanContext().traceId));
    expect(runs).toHaveLength(1);
    const run = runs[0];
    expect(run).toMatchObject({
      id: spanUuid(span.spanContext().spanId),
      name: 'my-llm-call',
      run_type: 'llm',
      tags: ['prod', 'beta'],
      session_id: await projectId(project),
      inputs: { messages: [{ role: 'user', content: 'hi' }] },
      outputs: { type: 'message', role: 'assistant', content: [{ type: 'text', text: 'hello' }], stop_reason: 'end_turn' },
      prompt_tokens: 12,
      completion_tokens: 3,
      total_tokens: 15,
      prompt_cost: 0.5,
      completion_cost: 0.25,
      total_cost: 0.75,
    });
    expect((run.extra as { metadata: Json }).metadata).toMatchObject({ user_id: 'u-42', ls_provider: 'anthropic', ls_model_name: 'claude-3-5-haiku-20241022' });
    expect(run.llm).toMatchObject({ input_format: 'openai', output_format: 'anthropic', cost_source: 'explicit' });
  });

  describe('bad OTLP input: a clear 4xx and nothing written', () => {
    const hexId = (bytes: number) => randomUUID().replace(/-/g, '').slice(0, bytes * 2);
    const goodJsonSpan = (traceId: string) => ({ traceId, spanId: hexId(8), name: 'good', kind: 1, startTimeUnixNano: String(BigInt(Date.now()) * 1_000_000n), endTimeUnixNano: String(BigInt(Date.now() + 5) * 1_000_000n) });
    const postJson = (body: unknown, headers: Record<string, string> = {}) =>
      svc.api('/otel/v1/traces', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
    const postProto = (body: Buffer, headers: Record<string, string> = {}) =>
      svc.api('/otel/v1/traces', { method: 'POST', body: new Uint8Array(body), headers: { 'content-type': 'application/x-protobuf', ...headers } });
    const detail = async (res: Response) => ((await res.json()) as { detail: { loc: (string | number)[]; msg: string; type: string }[] }).detail;

    it('rejects malformed protobuf', async () => {
      const res = await postProto(Buffer.from([0x0a, 0xff, 0xff, 0xff, 0x0f, 0x01, 0x02]));
      expect(res.status).toBe(422);
      const d = await detail(res);
      expect(d[0].loc).toEqual(['body']);
      expect(d[0].msg).toMatch(/Malformed OTLP protobuf/);
    });

    it('rejects unknown enum values and ids of the wrong length in protobuf, writing none of the request', async () => {
      const { request } = otlpTypes();
      const traceId = hexId(16);
      const span = (over: Json) => ({ traceId: Buffer.from(traceId, 'hex'), spanId: Buffer.from(hexId(8), 'hex'), name: 's', kind: 1, startTimeUnixNano: Date.now() * 1e6, endTimeUnixNano: Date.now() * 1e6 + 1000, ...over });
      const encode = (spans: Json[]) => Buffer.from(request.encode(request.fromObject({ resourceSpans: [{ scopeSpans: [{ spans }] }] })).finish());
      let res = await postProto(encode([span({}), span({ kind: 9 })]));
      expect(res.status).toBe(422);
      expect((await detail(res)).map((d) => d.loc.join('.'))).toEqual(['body.resourceSpans.0.scopeSpans.0.spans.1.kind']);
      res = await postProto(encode([span({ status: { code: 7 } })]));
      expect(res.status).toBe(422);
      expect((await detail(res))[0].loc.join('.')).toBe('body.resourceSpans.0.scopeSpans.0.spans.0.status.code');
      res = await postProto(encode([span({ spanId: Buffer.from('abcd', 'hex') })]));
      expect(res.status).toBe(422);
      expect((await detail(res))[0].msg).toMatch(/Expected 8 bytes, got 2/);
      expect(await runsOfTrace(traceUuid(traceId))).toEqual([]);
    });

    it('rejects wrong types and unknown enum values in OTLP/JSON, writing none of the request', async () => {
      const traceId = hexId(16);
      const cases: [Json, string][] = [
        [{ ...goodJsonSpan(traceId), kind: 42 }, 'kind'],
        [{ ...goodJsonSpan(traceId), kind: 'SPAN_KIND_SIDEWAYS' }, 'kind'],
        [{ ...goodJsonSpan(traceId), startTimeUnixNano: { n: 1 } }, 'startTimeUnixNano'],
        [{ ...goodJsonSpan(traceId), spanId: 'zz' }, 'spanId'],
        [{ ...goodJsonSpan(traceId), status: { code: 5 } }, 'status'],
        [{ ...goodJsonSpan(traceId), attributes: [{ key: 'a', value: { intValue: 'many' } }] }, 'attributes'],
      ];
      for (const [bad, field] of cases) {
        const res = await postJson({ resourceSpans: [{ scopeSpans: [{ spans: [goodJsonSpan(traceId), bad] }] }] });
        expect(res.status).toBe(422);
        const d = await detail(res);
        expect(d.some((x) => x.loc.slice(0, 8).join('.') === `body.resourceSpans.0.scopeSpans.0.spans.1.${field}`)).toBe(true);
      }
      expect((await postJson({ resourceSpans: 'nope' })).status).toBe(422);
      expect(await runsOfTrace(traceUuid(traceId))).toEqual([]);
    });

    it('rejects an unsupported content type and a corrupt gzip body; accepts a gzip JSON body', async () => {
      const traceId = hexId(16);
      const body = { resourceSpans: [{ scopeSpans: [{ spans: [goodJsonSpan(traceId)] }] }] };
      const text = await svc.api('/otel/v1/traces', { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } });
      expect(text.status).toBe(415);
      const corrupt = await svc.api('/otel/v1/traces', { method: 'POST', body: new Uint8Array(Buffer.from('not gzip')), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      expect(corrupt.status).toBe(422);
      expect(await runsOfTrace(traceUuid(traceId))).toEqual([]);
      const ok = await svc.api('/otel/v1/traces', { method: 'POST', body: new Uint8Array(gzipSync(JSON.stringify(body))), headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ partialSuccess: {} });
      expect((await runsOfTrace(traceUuid(traceId))).map((r) => r.name)).toEqual(['good']);
    });

    it('requires an API key', async () => {
      const res = await fetch(`${svc.url}/otel/v1/traces`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(401);
    });
  });
});
