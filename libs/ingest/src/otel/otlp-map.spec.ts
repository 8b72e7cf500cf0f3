import type { OtlpTraceRequest } from '@th/contracts';
import { spansToRuns, spanUuid, traceUuid } from './otlp-map';

type Span = NonNullable<NonNullable<NonNullable<OtlpTraceRequest['resourceSpans']>[number]['scopeSpans']>[number]['spans']>[number];
const s = (v: string) => ({ stringValue: v });
const TRACE = '0af7651916cd43dd8448eb211c80319c';
const base = (over: Partial<Span>): Span => ({ traceId: TRACE, spanId: 'b7ad6b7169203331', name: 'span', startTimeUnixNano: '1763784000000000000', endTimeUnixNano: '1763784001000000000', ...over });
const one = (span: Span, project?: string) => spansToRuns({ resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: s('svc') }] }, scopeSpans: [{ spans: [span] }] }] }, { project })[0];

describe('OTLP spans to runs', () => {
  it('uses the published SDK id conventions', () => {
    expect(traceUuid(TRACE)).toBe('0af76519-16cd-43dd-8448-eb211c80319c');
    expect(spanUuid('b7ad6b7169203331')).toBe('00000000-0000-0000-b7ad-6b7169203331');
    const run = one(base({ parentSpanId: '00f067aa0ba902b7' }), 'proj');
    expect(run).toMatchObject({
      id: '00000000-0000-0000-b7ad-6b7169203331',
      trace_id: '0af76519-16cd-43dd-8448-eb211c80319c',
      parent_run_id: '00000000-0000-0000-00f0-67aa0ba902b7',
      start_time: '2025-11-22T04:00:00.000000Z',
      end_time: '2025-11-22T04:00:01.000000Z',
      run_type: 'chain',
      session_name: 'proj',
    });
  });

  it("takes the published SDK's own attributes: ids, dotted order, kind, name, project, tags, metadata, usage", () => {
    const id = '0192f0a0-0000-7000-8000-000000000002';
    const parent = '0192f0a0-0000-7000-8000-000000000001';
    const dotted = `20251122T040000000000Z${parent}.20251122T040000500000Z${id}`;
    const run = one(
      base({
        attributes: [
          { key: 'langsmith.span.id', value: s(id) },
          { key: 'langsmith.trace.id', value: s(parent) },
          { key: 'langsmith.span.parent_id', value: s(parent) },
          { key: 'langsmith.span.dotted_order', value: s(dotted) },
          { key: 'langsmith.span.kind', value: s('retriever') },
          { key: 'langsmith.trace.name', value: s('search') },
          { key: 'langsmith.trace.session_name', value: s('from-attr') },
          { key: 'langsmith.span.tags', value: s('a, b') },
          { key: 'langsmith.metadata.k', value: s('{"x":1}') },
          { key: 'langsmith.usage_metadata', value: s('{"input_tokens":3,"output_tokens":4}') },
          { key: 'gen_ai.prompt', value: s('{"query":"q"}') },
          { key: 'gen_ai.completion', value: s('"plain"') },
        ],
      }),
      'from-header',
    );
    expect(run).toMatchObject({ id, trace_id: parent, parent_run_id: parent, dotted_order: dotted, run_type: 'retriever', name: 'search', session_name: 'from-attr', tags: ['a', 'b'], inputs: { query: 'q' }, outputs: { output: 'plain' } });
    expect((run.extra as { metadata: Record<string, unknown> }).metadata).toMatchObject({ k: { x: 1 }, usage_metadata: { input_tokens: 3, output_tokens: 4 }, 'service.name': 'svc' });
  });

  it('reads OpenLLMetry indexed prompts, OpenInference values, and the AI SDK first-chunk time', () => {
    const indexed = one(
      base({
        attributes: [
          { key: 'gen_ai.system', value: s('openai') },
          { key: 'gen_ai.request.model', value: s('gpt-4o') },
          { key: 'gen_ai.prompt.0.role', value: s('user') },
          { key: 'gen_ai.prompt.0.content', value: s('hi') },
          { key: 'gen_ai.completion.0.role', value: s('assistant') },
          { key: 'gen_ai.completion.0.content', value: s('hello') },
          { key: 'gen_ai.usage.prompt_tokens', value: { intValue: '5' } },
          { key: 'gen_ai.usage.completion_tokens', value: { intValue: 2 } },
        ],
      }),
    );
    expect(indexed).toMatchObject({ run_type: 'llm', inputs: { messages: [{ role: 'user', content: 'hi' }] }, outputs: { messages: [{ role: 'assistant', content: 'hello' }] } });
    expect((indexed.extra as { metadata: Record<string, unknown> }).metadata).toMatchObject({ ls_provider: 'openai', ls_model_name: 'gpt-4o', usage_metadata: { input_tokens: 5, output_tokens: 2 } });

    const oi = one(base({ attributes: [{ key: 'input.value', value: s('question') }, { key: 'output.value', value: s('{"answer":42}') }] }));
    expect(oi).toMatchObject({ inputs: { input: 'question' }, outputs: { answer: 42 } });

    const sdk = one(base({ name: 'ai.streamText.doStream', attributes: [{ key: 'ai.response.msToFirstChunk', value: { doubleValue: 250.5 } }] }));
    expect(sdk.run_type).toBe('llm');
    expect(sdk.events).toEqual([{ name: 'new_token', time: '2025-11-22T04:00:00.250500Z' }]);
  });

  it('maps error status, exception events, and nested attribute values', () => {
    const run = one(
      base({
        status: { code: 2 },
        events: [{ name: 'exception', timeUnixNano: '1763784000500000000', attributes: [{ key: 'exception.type', value: s('ValueError') }, { key: 'exception.message', value: s('bad') }] }],
        attributes: [{ key: 'nested', value: { kvlistValue: { values: [{ key: 'a', value: { arrayValue: { values: [{ boolValue: true }, { intValue: '9007199254740993' }] } } }] } } }],
      }),
    );
    expect(run.error).toBe('ValueError: bad');
    expect(run.events).toEqual([{ name: 'exception', time: '2025-11-22T04:00:00.500000Z', kwargs: { 'exception.type': 'ValueError', 'exception.message': 'bad' } }]);
    expect((run.extra as { metadata: Record<string, unknown> }).metadata.nested).toEqual({ a: [true, '9007199254740993'] });
  });
});
