import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Body, Controller, Logger, Module, Post } from '@nestjs/common';
import type { INestApplication } from '@nestjs/common';
import { trace } from '@opentelemetry/api';
import { createHttpApp, listen } from './http-app';
import { inSpan, parseOtlpHeaders, selfTracingOn, tracesUrlOf } from './self-tracing';

@Controller()
class EchoController {
  private readonly log = new Logger('echo');

  /** Logs after the body was read (the request's stream events are behind it) and inside a span of its own. */
  @Post('echo')
  async echo(@Body() body: unknown): Promise<unknown> {
    this.log.log({ msg: 'echo handled' });
    await inSpan('child work', { n: 1 }, async () => {
      await new Promise((r) => setTimeout(r, 5));
      this.log.log({ msg: 'inside child' });
    });
    return { body, active: trace.getActiveSpan() !== undefined };
  }
}

@Module({ controllers: [EchoController] })
class EchoModule {}

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: { stringValue?: string; intValue?: number | string } }[];
}

/** An OTLP/HTTP JSON receiver on 127.0.0.1 (what OTEL_EXPORTER_OTLP_PROTOCOL=http/json sends). */
async function receiver() {
  const spans: (JsonSpan & { service: string })[] = [];
  const requests: IncomingMessage['headers'][] = [];
  const server: Server = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => {
      requests.push(req.headers);
      const body = JSON.parse(text) as { resourceSpans: { resource: { attributes: JsonSpan['attributes'] }; scopeSpans: { spans: JsonSpan[] }[] }[] };
      for (const rs of body.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const ss of rs.scopeSpans) for (const s of ss.spans) spans.push({ ...s, service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, requests, close: () => new Promise((r) => server.close(r)) };
}

const attr = (s: JsonSpan, key: string) => {
  const v = s.attributes.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : undefined);
};

function captureStdout(): { lines: () => Record<string, unknown>[]; restore: () => void } {
  const out: string[] = [];
  const spy = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  return {
    lines: () =>
      out
        .join('')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    restore: () => spy.mockRestore(),
  };
}

describe('self-tracing settings', () => {
  it('traces go to the traces endpoint, else <endpoint>/v1/traces; neither: off', () => {
    expect(tracesUrlOf({})).toBeNull();
    expect(tracesUrlOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })).toBe('http://collector:4318/v1/traces');
    expect(tracesUrlOf({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b/otel/v1/traces' })).toBe('http://b/otel/v1/traces');
  });

  it('OTEL_EXPORTER_OTLP_HEADERS: comma-separated name=value pairs, values URL-decoded, names lower-cased', () => {
    expect(parseOtlpHeaders('X-Api-Key=abc%3D%3D, Langsmith-Project=my%20proj,broken,=x')).toEqual({ 'x-api-key': 'abc==', 'langsmith-project': 'my proj' });
    expect(parseOtlpHeaders(undefined)).toEqual({});
  });
});

describe('an HTTP app with self-tracing off', () => {
  it('adds no request id, no span and no log fields', async () => {
    const app = await createHttpApp(EchoModule, { service: 'probe', logLevel: 'info', maxBodyBytes: 4096 });
    const { url, close } = await listen(app, '127.0.0.1', 0);
    const out = captureStdout();
    try {
      expect(selfTracingOn()).toBe(false);
      const res = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'r1' }, body: '{"a":1}' });
      expect(await res.json()).toEqual({ body: { a: 1 }, active: false });
      expect(res.headers.get('x-request-id')).toBeNull();
    } finally {
      out.restore();
      await close();
    }
    const handled = out.lines().filter((l) => l.msg === 'echo handled');
    expect(handled).toHaveLength(1);
    expect(handled[0]).not.toHaveProperty('trace_id');
    expect(handled[0]).not.toHaveProperty('request_id');
  });
});

describe('an HTTP app with self-tracing on (OTLP/JSON to a real receiver)', () => {
  let app: INestApplication;
  let rx: Awaited<ReturnType<typeof receiver>>;

  beforeAll(async () => {
    rx = await receiver();
    app = await createHttpApp(EchoModule, {
      service: 'probe',
      logLevel: 'info',
      maxBodyBytes: 4096,
      tracing: { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=k1', OTEL_SERVICE_NAME: 'probe-svc', SERVICE_VERSION: '9.9.9' },
    });
  });
  afterAll(async () => {
    await rx.close();
  });

  it('a server span per request (child of the caller), a child span, the request id in the answer and in every log line', async () => {
    const { url, close } = await listen(app, '127.0.0.1', 0);
    const traceId = 'a'.repeat(32);
    const callerSpan = 'b'.repeat(16);
    const out = captureStdout();
    let generated: string | null;
    try {
      expect(selfTracingOn()).toBe(true);
      const res = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': 'req-7', traceparent: `00-${traceId}-${callerSpan}-01` }, body: '{"a":1}' });
      expect(await res.json()).toEqual({ body: { a: 1 }, active: true });
      expect(res.headers.get('x-request-id')).toBe('req-7');
      // An id that is not plain text is replaced; an unknown route is a span too (404, unmatched).
      const other = await fetch(`${url}/nowhere`, { headers: { 'x-request-id': 'bad id\twith tab' } });
      expect(other.status).toBe(404);
      generated = other.headers.get('x-request-id');
      expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    } finally {
      out.restore();
      await close(); // exports what is buffered and turns self-tracing off
    }
    expect(selfTracingOn()).toBe(false);

    const server = rx.spans.find((s) => s.name === 'POST /echo')!;
    expect(server).toBeDefined();
    expect(server).toMatchObject({ service: 'probe-svc', traceId, parentSpanId: callerSpan, kind: 2 });
    expect(attr(server, 'http.response.status_code')).toBe(201);
    expect(attr(server, 'http.route')).toBe('/echo');
    expect(attr(server, 'tracehouse.request_id')).toBe('req-7');
    const child = rx.spans.find((s) => s.name === 'child work')!;
    expect(child).toMatchObject({ traceId, parentSpanId: server.spanId, kind: 1 });
    const unmatched = rx.spans.find((s) => s.name === 'GET unmatched')!;
    expect(attr(unmatched, 'http.response.status_code')).toBe(404);
    expect(attr(unmatched, 'tracehouse.request_id')).toBe(generated);
    expect(rx.requests.every((h) => h['x-api-key'] === 'k1' && h['content-type'] === 'application/json')).toBe(true);

    const lines = out.lines();
    expect(lines.find((l) => l.msg === 'echo handled')).toMatchObject({ trace_id: traceId, span_id: server.spanId, request_id: 'req-7' });
    expect(lines.find((l) => l.msg === 'inside child')).toMatchObject({ trace_id: traceId, span_id: child.spanId, request_id: 'req-7' });
  });
});

describe('an export the receiver refuses', () => {
  it('is logged as a JSON line (the SDK\'s own errors), and the app keeps answering', async () => {
    const refusing = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(400, { 'content-type': 'application/json' }).end('{"error":"no"}'));
    });
    await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
    const app = await createHttpApp(EchoModule, {
      service: 'probe',
      logLevel: 'warn',
      maxBodyBytes: 4096,
      tracing: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${(refusing.address() as AddressInfo).port}/v1/traces`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    });
    const { url, close } = await listen(app, '127.0.0.1', 0);
    const out = captureStdout();
    try {
      const res = await fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(res.status).toBe(201);
    } finally {
      await close(); // flushes: the export is refused
      out.restore();
      await new Promise((r) => refusing.close(r));
    }
    const errors = out.lines().filter((l) => l.context === 'self-tracing');
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatchObject({ level: 'error', service: 'probe' });
  });
});
