import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpanKind, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { TOPICS, type RunEvent } from '@th/contracts';
import { currentRequestId, logCorrelation, registerSelfTracing, withRequestId, type SelfTracing } from '@th/platform';
import type { BusMessage, EventBus } from './bus';
import { InProcessBus } from './in-process.bus';

const event = (id: string): RunEvent => ({ kind: 'run', op: 'post', tenant_id: 't', id, received_at: '2026-11-24T00:00:00.000Z', fields: { name: id } });
const until = async (cond: () => boolean, ms = 10_000) => {
  for (const end = Date.now() + ms; Date.now() < end && !cond(); ) await new Promise((r) => setTimeout(r, 20));
  expect(cond()).toBe(true);
};

interface Seen {
  headers: Record<string, string>[];
  /** The active span and request id inside the handler. */
  span?: { traceId: string; spanId: string };
  requestId?: string;
  log: ReturnType<typeof logCorrelation>;
}

/** Subscribes a handler that records what it saw, publishes `ids` inside a request span, and returns both. */
async function roundTrip(bus: EventBus, ids: string[], seen: Seen[], groupId: string) {
  await bus.subscribe(TOPICS.runs, { groupId }, async (batch: BusMessage<unknown>[]) => {
    seen.push({ headers: batch.map((m) => m.headers), span: trace.getActiveSpan()?.spanContext(), requestId: currentRequestId(), log: logCorrelation() });
  });
  const tracer = trace.getTracer('spec');
  const request = tracer.startSpan('POST /runs/batch', { kind: SpanKind.SERVER });
  await context.with(trace.setSpan(context.active(), request), () =>
    withRequestId('req-42', () => bus.publish(TOPICS.runs, ids.map((id) => ({ key: id, value: event(id), headers: { 'x-own': 'kept' } })))),
  );
  request.end();
  return request.spanContext();
}

function check(spans: ReadableSpan[], request: { traceId: string; spanId: string }, seen: Seen[]) {
  const publish = spans.find((s) => s.name === 'publish runs')!;
  expect(publish).toBeDefined();
  expect(publish.kind).toBe(SpanKind.PRODUCER);
  expect(publish.spanContext().traceId).toBe(request.traceId);
  expect(publish.parentSpanContext?.spanId).toBe(request.spanId);
  expect(publish.attributes['messaging.destination.name']).toBe('runs');
  const consume = spans.find((s) => s.name === 'process runs')!;
  expect(consume).toBeDefined();
  expect(consume.kind).toBe(SpanKind.CONSUMER);
  // The consumer continues the publisher's trace, from the message headers.
  expect(consume.spanContext().traceId).toBe(request.traceId);
  expect(consume.parentSpanContext?.spanId).toBe(publish.spanContext().spanId);
  const headers = seen.flatMap((s) => s.headers);
  for (const h of headers) {
    expect(h['x-own']).toBe('kept');
    expect(h['x-request-id']).toBe('req-42');
    expect(h.traceparent).toBe(`00-${request.traceId}-${publish.spanContext().spanId}-01`);
  }
  expect(seen[0].span).toEqual(expect.objectContaining({ traceId: request.traceId, spanId: consume.spanContext().spanId }));
  expect(seen[0].requestId).toBe('req-42');
  expect(seen[0].log).toEqual({ trace_id: request.traceId, span_id: consume.spanContext().spanId, request_id: 'req-42' });
}

// Through a real Kafka broker: apps/e2e/src/self-tracing.e2e.spec.ts.
describe('the bus carries the trace context and request id in message headers', () => {
  let tracing: SelfTracing;
  // One per test: the provider's shutdown stops its exporter.
  let exporter: InMemorySpanExporter;
  beforeEach(() => {
    exporter = new InMemorySpanExporter();
    tracing = registerSelfTracing(new SimpleSpanProcessor(exporter), 'bus-spec');
  });
  afterEach(async () => {
    await tracing.shutdown();
  });

  /** Two messages through `bus`: their publish and process spans, and the headers the consumer saw. */
  const tracedRoundTrip = async (bus: InProcessBus): Promise<void> => {
    const seen: Seen[] = [];
    const request = await roundTrip(bus, ['a', 'b'], seen, 'g');
    await until(() => seen.flatMap((s) => s.headers).length === 2 && exporter.getFinishedSpans().some((s) => s.name === 'process runs'));
    check(exporter.getFinishedSpans(), request, seen);
  };

  it('in process: publish and process spans, headers merged with the publisher\'s own', async () => {
    const bus = new InProcessBus();
    try {
      await tracedRoundTrip(bus);
    } finally {
      await bus.close();
    }
  });

  it('in process with the write-ahead log (INGEST_ACK=logged): the headers go through the log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'th-bus-tracing-'));
    const bus = new InProcessBus({ log: { dir, topics: [TOPICS.runs] } });
    try {
      await tracedRoundTrip(bus);
    } finally {
      await bus.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('self-tracing off', () => {
  it('adds no headers and no context', async () => {
    const bus = new InProcessBus();
    const seen: Seen[] = [];
    try {
      await roundTrip(bus, ['a'], seen, 'g');
      await until(() => seen.length === 1);
      expect(seen[0].headers).toEqual([{ 'x-own': 'kept' }]);
      expect(seen[0].span).toBeUndefined();
      expect(seen[0].requestId).toBeUndefined();
      expect(seen[0].log).toEqual({});
    } finally {
      await bus.close();
    }
  });
});
