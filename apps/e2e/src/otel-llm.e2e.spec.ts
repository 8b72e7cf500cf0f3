import { SpanKind } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { api, eventually, type Json, type SuiteCluster, useSharedCluster } from './cluster-client';

/** OTLP and model price maps in the cluster form: through the gateway to ingest, over Kafka to the writer, read from query. */
describe('OTLP traces and model price maps in the cluster form', () => {
  let cluster: SuiteCluster;
  let call: ReturnType<typeof api>;
  useSharedCluster((c, a) => ((cluster = c), (call = a)));

  it('prices spans from the real OTLP protobuf exporter with a workspace price map', async () => {
    const created = await call('/api/v1/model-price-map', { method: 'POST', json: { name: 'cluster-model', match_pattern: '^cluster-model$', prompt_cost: 0.001, completion_cost: 0.002 } });
    expect(created.status).toBe(200);
    const entry = (await created.json()) as Json;
    const bad = await call('/api/v1/model-price-map', { method: 'POST', json: { name: 'x', match_pattern: '[', prompt_cost: 1, completion_cost: 1 } });
    expect(bad.status).toBe(422);
    const listed = (await (await call('/api/v1/model-price-map')).json()) as Json[];
    expect(listed.filter((e) => e.tenant_id !== null).map((e) => e.id)).toEqual([entry.id]);

    const exporter = new OTLPTraceExporter({ url: `${cluster.gateway.url}/otel/v1/traces`, headers: { 'x-api-key': cluster.apiKey, 'Langsmith-Project': 'otel-cluster' } });
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const span = provider.getTracer('cluster').startSpan('chat cluster-model', {
      kind: SpanKind.CLIENT,
      attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'cluster-model', 'gen_ai.usage.input_tokens': 100, 'gen_ai.usage.output_tokens': 10 },
    });
    span.end();
    await provider.forceFlush();
    await provider.shutdown();

    const id = `00000000-0000-0000-${span.spanContext().spanId.slice(0, 4)}-${span.spanContext().spanId.slice(4)}`;
    const run = await eventually(
      async () => {
        const res = await call(`/api/v1/runs/${id}`);
        return res.status === 200 ? ((await res.json()) as Json) : null;
      },
      (r) => r !== null,
    );
    expect(run).toMatchObject({ run_type: 'llm', prompt_tokens: 100, completion_tokens: 10, llm: { model: 'cluster-model', cost_source: 'price_map', price_map_id: entry.id } });
    expect(run!.total_cost).toBeCloseTo(100 * 0.001 + 10 * 0.002, 12);

    expect((await call(`/api/v1/model-price-map/${String(entry.id)}`, { method: 'DELETE' })).status).toBe(200);
    const after = (await (await call('/api/v1/model-price-map')).json()) as Json[];
    expect(after.some((e) => e.id === entry.id)).toBe(false);
  });
});
