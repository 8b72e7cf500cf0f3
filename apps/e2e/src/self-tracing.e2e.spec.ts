import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SpanKind, context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { KafkaBus, type BusMessage } from '@th/bus';
import { TOPICS } from '@th/contracts';
import { otlpTypes } from '@th/ingest';
import { currentRequestId, registerSelfTracing, withRequestId } from '@th/platform';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestDatabase, startAppProcess, startCluster, type AppProcess, type Cluster } from '@th/testing';
import { api, eventually, makeRun } from './cluster-client';

// Needs `npm run build`. The cluster's services trace themselves to a small OTLP/HTTP receiver started here,
// which decodes the protobuf exports with the official definitions (the ones POST /otel/v1/traces uses).
jest.setTimeout(600_000);

interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

interface Receiver {
  url: string;
  spans: ReceivedSpan[];
  /** The headers of every export request. */
  headers: Record<string, string | string[] | undefined>[];
  server: Server;
}

const hex = (b: Uint8Array | undefined) => (b && b.length > 0 ? Buffer.from(b).toString('hex') : '');
type AnyValue = { stringValue?: string; intValue?: number; boolValue?: boolean; doubleValue?: number };
const valueOf = (v: AnyValue | undefined) => v?.stringValue ?? v?.intValue ?? v?.boolValue ?? v?.doubleValue;
const attrs = (list: { key: string; value?: AnyValue }[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

async function startReceiver(): Promise<Receiver> {
  const { request, response } = otlpTypes();
  const spans: ReceivedSpan[] = [];
  const headers: Receiver['headers'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      headers.push(req.headers);
      type Decoded = { resourceSpans?: { resource?: { attributes?: { key: string; value?: AnyValue }[] }; scopeSpans?: { spans?: { traceId?: Uint8Array; spanId?: Uint8Array; parentSpanId?: Uint8Array; name: string; kind?: number; attributes?: { key: string; value?: AnyValue }[] }[] }[] }[] };
      const decoded = request.toObject(request.decode(Buffer.concat(chunks)), { longs: Number }) as Decoded;
      for (const rs of decoded.resourceSpans ?? []) {
        const service = String(attrs(rs.resource?.attributes)['service.name']);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({ service, traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: s.name, kind: s.kind ?? 0, attributes: attrs(s.attributes) });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(response.encode(response.create({})).finish()));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, headers, server };
}

// SpanKind in OTLP: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
const KIND = { internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;

describe('self-tracing: one trace per request across gateway, ingest, Kafka and the writer', () => {
  let receiver: Receiver;
  let cluster: Cluster;
  const token = randomBytes(12).toString('hex');

  beforeAll(async () => {
    receiver = await startReceiver();
    cluster = await startCluster({ sharedKafka: true, env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_HEADERS: `x-api-key=${token}` } });
  });
  afterAll(async () => {
    await cluster?.stop();
    await new Promise((r) => receiver?.server.close(r));
  });

  it('a run batch: gateway server and proxy spans, ingest server and publish, the consumer and its insert share the caller\'s trace', async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const run = makeRun('self-tracing', 1);
    const call = api(cluster.gateway.url, cluster.apiKey);
    const res = await call('/api/v1/runs/batch', { method: 'POST', json: { post: [run.post] }, headers: { traceparent: `00-${traceId}-${callerSpan}-01`, 'x-request-id': 'caller-req-1' } });
    expect(res.status).toBe(202);
    // The caller's request id comes back (the service's answer, relayed by the gateway).
    expect(res.headers.get('x-request-id')).toBe('caller-req-1');

    const inTrace = () => receiver.spans.filter((s) => s.traceId === traceId);
    const has = (service: string, name: string) => inTrace().some((s) => s.service === service && s.name === name);
    await eventually(
      async () => inTrace(),
      () => has('ingest', 'insert runs') && has('gateway', 'POST /api/v1/runs/batch'),
      60_000,
      250,
    );
    const spans = inTrace();
    const one = (service: string, name: string, kind: number) => {
      const found = spans.filter((s) => s.service === service && s.name === name && s.kind === kind);
      expect({ service, name, found: found.length }).toEqual({ service, name, found: 1 });
      return found[0];
    };
    const gatewayServer = one('gateway', 'POST /api/v1/runs/batch', KIND.server);
    expect(gatewayServer.parentSpanId).toBe(callerSpan);
    expect(gatewayServer.attributes).toMatchObject({ 'http.route': '/api/v1/runs/batch', 'http.response.status_code': 202, 'tracehouse.request_id': 'caller-req-1' });
    const proxy = one('gateway', 'POST /api/v1/runs/batch', KIND.client);
    expect(proxy.parentSpanId).toBe(gatewayServer.spanId);
    expect(proxy.attributes).toMatchObject({ 'tracehouse.service': 'ingest', 'http.response.status_code': 202 });
    const ingestServer = spans.find((s) => s.service === 'ingest' && s.kind === KIND.server)!;
    expect(ingestServer).toBeDefined();
    expect(ingestServer.parentSpanId).toBe(proxy.spanId);
    expect(ingestServer.attributes).toMatchObject({ 'http.response.status_code': 202, 'tracehouse.request_id': 'caller-req-1' });
    const publish = one('ingest', 'publish runs', KIND.producer);
    expect(publish.parentSpanId).toBe(ingestServer.spanId);
    expect(publish.attributes).toMatchObject({ 'messaging.system': 'kafka', 'messaging.destination.name': 'runs' });
    const consume = one('ingest', 'process runs', KIND.consumer);
    expect(consume.parentSpanId).toBe(publish.spanId);
    expect(consume.attributes).toMatchObject({ 'messaging.consumer.group.name': 'ingest-writer' });
    const insert = one('ingest', 'insert runs', KIND.internal);
    expect(insert.parentSpanId).toBe(consume.spanId);
    expect(insert.attributes['tracehouse.rows']).toBe(1);
    expect(spans.filter((s) => s.parentSpanId === insert.spanId && s.kind === KIND.client).map((s) => s.name)).toContain('clickhouse insert');

    // The exporter sends the configured headers.
    expect(receiver.headers.some((h) => h['x-api-key'] === token && h['content-type'] === 'application/x-protobuf')).toBe(true);

    // The run landed, and the services' spans name their service.
    const landed = await eventually(() => call(`/api/v1/runs/${run.id}`).then((r) => r.status), (s) => s === 200);
    expect(landed).toBe(200);
    const services = new Set(receiver.spans.map((s) => s.service));
    expect([...services].sort()).toEqual(expect.arrayContaining(['gateway', 'ingest', 'query']));
  });

  it('a request without an id gets one: in the answer and on both services\' spans, a 422 included', async () => {
    const traceId = randomBytes(16).toString('hex');
    const call = api(cluster.gateway.url, cluster.apiKey);
    const res = await call('/api/v1/runs/batch', { method: 'POST', json: { post: [{ id: 'not-a-uuid' }] }, headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01`, 'x-request-id': 'has spaces, so replaced' } });
    expect(res.status).toBe(422);
    const requestId = res.headers.get('x-request-id');
    expect(requestId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    const servers = await eventually(
      async () => receiver.spans.filter((s) => s.traceId === traceId && s.kind === KIND.server),
      (list) => list.length === 2,
      30_000,
      250,
    );
    expect(servers.map((s) => s.service).sort()).toEqual(['gateway', 'ingest']);
    for (const s of servers) expect(s.attributes).toMatchObject({ 'tracehouse.request_id': requestId, 'http.response.status_code': 422 });
    // Nothing was published for a refused batch.
    expect(receiver.spans.some((s) => s.traceId === traceId && s.kind === KIND.producer)).toBe(false);
  });
  it('the Kafka bus in this process: publish injects the context into the message headers, the consumer extracts it', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = registerSelfTracing(new SimpleSpanProcessor(exporter), 'bus-e2e');
    // Topics and a group of its own on the cluster's (warm) broker.
    const bus = new KafkaBus({ brokers: [cluster.kafka.brokers], clientId: 'tracing-e2e', partitions: 1, replicationFactor: 1, kafkaPrefix: `b${randomBytes(4).toString('hex')}.` });
    const seen: { headers: Record<string, string>; spanId?: string; requestId?: string }[] = [];
    try {
      await bus.subscribe(TOPICS.runs, { groupId: 'g' }, async (batch: BusMessage<unknown>[]) => {
        for (const m of batch) seen.push({ headers: m.headers, spanId: trace.getActiveSpan()?.spanContext().spanId, requestId: currentRequestId() });
      });
      const request = trace.getTracer('e2e').startSpan('request', { kind: SpanKind.SERVER });
      const run = makeRun('bus', 1);
      await context.with(trace.setSpan(context.active(), request), () =>
        withRequestId('req-kafka', () => bus.publish(TOPICS.runs, [{ key: run.id, value: { kind: 'run', op: 'post', tenant_id: 't', id: run.id, received_at: new Date().toISOString(), fields: { name: 'x' } }, headers: { 'x-own': 'kept' } }])),
      );
      request.end();
      const traceId = request.spanContext().traceId;
      await eventually(async () => exporter.getFinishedSpans().map((s) => s.name), (names) => names.includes('process runs'), 60_000, 100);
      const spans = exporter.getFinishedSpans();
      const publish = spans.find((s) => s.name === 'publish runs')!;
      const consume = spans.find((s) => s.name === 'process runs')!;
      expect(publish.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
      expect(consume.spanContext().traceId).toBe(traceId);
      expect(consume.parentSpanContext?.spanId).toBe(publish.spanContext().spanId);
      expect(seen).toEqual([
        {
          headers: { 'x-own': 'kept', 'x-request-id': 'req-kafka', traceparent: `00-${traceId}-${publish.spanContext().spanId}-01` },
          spanId: consume.spanContext().spanId,
          requestId: 'req-kafka',
        },
      ]);
    } finally {
      await bus.close();
      await tracing.shutdown();
    }
  });
});

describe('self-tracing in the standalone service: the in-process bus and the writer in the request\'s trace', () => {
  let receiver: Receiver;
  let standalone: AppProcess;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const work = mkdtempSync(join(tmpdir(), 'th-self-tracing-'));
  const apiKey = `th_${randomBytes(12).toString('hex')}`;

  beforeAll(async () => {
    receiver = await startReceiver();
    db = await createTestDatabase('th_self_tracing');
    standalone = await startAppProcess(
      'standalone',
      { DATA_DIR: work, DATABASE_URL: db.url, BOOTSTRAP_API_KEY: apiKey, PRINT_BANNER: 'false', WEB_LINK_PORT: '0', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_SERVICE_NAME: 'tracehouse-standalone' },
      { timeoutMs: 300_000 },
    );
  });
  afterAll(async () => {
    await standalone?.stop();
    await db?.drop();
    await new Promise((r) => receiver?.server.close(r));
    rmSync(work, { recursive: true, force: true });
  });

  it('server span, publish, process and insert in one trace, with the request id in the answer', async () => {
    const traceId = randomBytes(16).toString('hex');
    const run = makeRun('self-tracing-standalone', 1);
    const res = await api(standalone.url, apiKey)('/api/v1/runs/batch', { method: 'POST', json: { post: [run.post] }, headers: { traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` } });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const spans = await eventually(
      async () => receiver.spans.filter((s) => s.traceId === traceId),
      (list) => list.some((s) => s.name === 'insert runs') && list.some((s) => s.kind === KIND.server),
      60_000,
      250,
    );
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['tracehouse-standalone']));
    const server = spans.find((s) => s.kind === KIND.server)!;
    expect(server.name).toBe('POST /api/v1/runs/batch');
    const publish = spans.find((s) => s.name === 'publish runs')!;
    expect(publish.parentSpanId).toBe(server.spanId);
    const consume = spans.find((s) => s.name === 'process runs')!;
    expect(consume.parentSpanId).toBe(publish.spanId);
    const insert = spans.find((s) => s.name === 'insert runs')!;
    expect(insert.parentSpanId).toBe(consume.spanId);
    // The embedded engine's statements are spans too, under the insert (in process, rows go in by `INSERT ... FROM INFILE`, a command).
    expect(spans.filter((s) => s.parentSpanId === insert.spanId).map((s) => s.name)).toContain('clickhouse command');

    // Creating a project: PostgreSQL statements under the request's span.
    const projectTrace = randomBytes(16).toString('hex');
    const created = await api(standalone.url, apiKey)('/api/v1/sessions', { method: 'POST', json: { name: `p-${randomBytes(4).toString('hex')}` }, headers: { traceparent: `00-${projectTrace}-${randomBytes(8).toString('hex')}-01` } });
    expect(created.status).toBe(200);
    const projectSpans = await eventually(
      async () => receiver.spans.filter((s) => s.traceId === projectTrace),
      (list) => list.some((s) => s.kind === KIND.server) && list.some((s) => s.name === 'postgres query'),
      30_000,
      250,
    );
    const projectServer = projectSpans.find((s) => s.kind === KIND.server)!;
    expect(projectServer.name).toBe('POST /api/v1/sessions');
    const pg = projectSpans.filter((s) => s.name === 'postgres query');
    expect(pg.length).toBeGreaterThan(0);
    for (const q of pg) expect(q).toMatchObject({ kind: KIND.client, attributes: { 'db.system.name': 'postgresql' } });
  });
});
