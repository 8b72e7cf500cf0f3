import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, context, createContextKey, diag, propagation, trace, type Attributes, type Context, type Link, type Span, type Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, type SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { routeTemplateOf } from './route-template';
import { maskUrlCredentials } from './url-credentials';

/**
 * The services tracing themselves with OpenTelemetry (docs/self-tracing.md). Off unless an OTLP endpoint is
 * configured: then nothing is registered (the API's no-op context and tracer), no span is made and no header
 * is read or written, and every function here returns after one check. The tracer is per process, like the
 * metrics registry: the bus, the ClickHouse client and the writer that make spans are built outside Nest's
 * container, and OpenTelemetry's own API is process-global.
 */
let tracer: Tracer | null = null;
let provider: NodeTracerProvider | null = null;

/** The request id, beside the span in the active context (logs and the bus's headers read it). */
const REQUEST_ID = createContextKey('tracehouse.request_id');
/** The header that carries the request id between the services and back to the caller. */
export const REQUEST_ID_HEADER = 'x-request-id';
/** A caller's request id is kept when it is this short and plain; anything else is replaced. */
const VALID_REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;
/** At most this many links from a consumer span to the other messages of its batch. */
const MAX_LINKS = 64;

export interface SelfTracingSettings {
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_PROTOCOL?: 'http/protobuf' | 'http/json';
  OTEL_EXPORTER_OTLP_HEADERS?: string;
  OTEL_SERVICE_NAME?: string;
  SERVICE_VERSION?: string;
}

/** Where spans go: the traces endpoint, else `<OTEL_EXPORTER_OTLP_ENDPOINT>/v1/traces`; null: self-tracing is off. */
export function tracesUrlOf(c: SelfTracingSettings): string | null {
  if (c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return c.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (c.OTEL_EXPORTER_OTLP_ENDPOINT) return `${c.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces`;
  return null;
}

/** `name=value,name2=value2` (values URL-encoded), the OTEL_EXPORTER_OTLP_HEADERS form. */
export function parseOtlpHeaders(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (text ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq <= 0) continue;
    out[pair.slice(0, eq).trim().toLowerCase()] = decodeURIComponent(pair.slice(eq + 1).trim());
  }
  return out;
}

export interface SelfTracing {
  /** Exports the spans still buffered, then unregisters (self-tracing is off again). */
  shutdown(): Promise<void>;
}

/** Starts self-tracing when an endpoint is configured (null otherwise): spans of `service` batched to OTLP/HTTP. */
export function startSelfTracing(c: SelfTracingSettings, service: string): SelfTracing | null {
  const url = tracesUrlOf(c);
  if (url === null) return null;
  const headers = parseOtlpHeaders(c.OTEL_EXPORTER_OTLP_HEADERS);
  const exporter = c.OTEL_EXPORTER_OTLP_PROTOCOL === 'http/json' ? new OtlpJsonExporter({ url, headers }) : new OtlpProtoExporter({ url, headers });
  // Exported each second (the SDK's default is 5 s): a request's spans are visible about as soon as its runs are.
  return registerSelfTracing(new BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000 }), c.OTEL_SERVICE_NAME ?? service, c.SERVICE_VERSION);
}

/** Registers a tracer provider with `processor` for this process (startSelfTracing; tests pass an in-memory one). */
export function registerSelfTracing(processor: SpanProcessor, serviceName: string, serviceVersion?: string): SelfTracing {
  if (provider) throw new Error('self-tracing is already started in this process');
  const p = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName, ...(serviceVersion ? { 'service.version': serviceVersion } : {}) }),
    spanProcessors: [processor],
  });
  // The default context manager (AsyncLocalStorage) and propagator (W3C trace context and baggage).
  p.register();
  // The SDK's own warnings and errors (an export that failed: the receiver down, refused, too slow) as log lines.
  const line = (level: 'warn' | 'error') => (message: string, ...args: unknown[]) =>
    process.stdout.write(maskUrlCredentials(JSON.stringify({ time: new Date().toISOString(), level, service: serviceName, context: 'self-tracing', msg: message, detail: args.map((a) => (a instanceof Error ? a.message : String(a))).join(' ') })) + '\n');
  diag.setLogger({ error: line('error'), warn: line('warn'), info: () => undefined, debug: () => undefined, verbose: () => undefined }, DiagLogLevel.WARN);
  provider = p;
  tracer = p.getTracer('tracehouse');
  return {
    async shutdown() {
      if (provider === p) await shutdownSelfTracing();
    },
  };
}

/** Exports what is buffered and turns self-tracing off (last in an app's ordered close; nothing when off). */
export async function shutdownSelfTracing(): Promise<void> {
  const p = provider;
  if (p === null) return;
  tracer = null;
  provider = null;
  try {
    await p.shutdown();
  } catch (err) {
    // The last spans could not be exported: said in the logs, and the close goes on.
    diag.error('the last spans were not exported', err);
  }
  trace.disable();
  context.disable();
  propagation.disable();
  diag.disable();
}

/** True when this process traces itself. */
export function selfTracingOn(): boolean {
  return tracer !== null;
}

/** The ids logs carry inside a request or a message's handling (empty when self-tracing is off or outside one). */
export function logCorrelation(): { trace_id?: string; span_id?: string; request_id?: string } {
  if (tracer === null) return {};
  const active = context.active();
  const span = trace.getSpan(active)?.spanContext();
  const requestId = active.getValue(REQUEST_ID) as string | undefined;
  const out: { trace_id?: string; span_id?: string; request_id?: string } = {};
  if (span) {
    out.trace_id = span.traceId;
    out.span_id = span.spanId;
  }
  if (requestId !== undefined) out.request_id = requestId;
  return out;
}

/** The active request id (undefined when self-tracing is off or outside a request). */
export function currentRequestId(): string | undefined {
  return tracer === null ? undefined : (context.active().getValue(REQUEST_ID) as string | undefined);
}

/** Runs `fn` with `requestId` as the active request id (self-tracing on; off: just `fn()`). */
export function withRequestId<T>(requestId: string, fn: () => T): T {
  if (tracer === null) return fn();
  return context.with(context.active().setValue(REQUEST_ID, requestId), fn);
}

function requestIdOf(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && VALID_REQUEST_ID.test(header) ? header : undefined;
}

function endWithStatus(span: Span, status: number): void {
  span.setAttribute('http.response.status_code', status);
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/**
 * Traces every request `server` answers (call once its request listeners are in place, before it listens): a
 * SERVER span named by method and route template, child of the caller's `traceparent`, active while the
 * request is handled (its stream events included), and a request id (the caller's `x-request-id` when valid,
 * else a new one) put on the request's headers for the handlers and the proxy to pass on.
 */
export function traceHttpServer(server: Server): void {
  const t = tracer;
  if (t === null) return;
  const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const method = req.method ?? 'GET';
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
    const requestId = requestIdOf(req.headers[REQUEST_ID_HEADER]) ?? randomUUID();
    req.headers[REQUEST_ID_HEADER] = requestId;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const span = t.startSpan(method, { kind: SpanKind.SERVER, attributes: { 'http.request.method': method, 'url.path': q < 0 ? url : url.slice(0, q), 'tracehouse.request_id': requestId } }, parent);
    const active = trace.setSpan(parent, span).setValue(REQUEST_ID, requestId);
    context.bind(active, req);
    context.bind(active, res);
    res.once('close', () => {
      const route = routeTemplateOf(req);
      span.updateName(`${method} ${route}`);
      span.setAttribute('http.route', route);
      if (!res.writableFinished) span.setAttribute('tracehouse.aborted', true);
      endWithStatus(span, res.statusCode);
    });
    context.with(active, () => {
      for (const l of listeners) l.call(server, req, res);
    });
  });
}

/** Express middleware: the answer carries the request id (when self-tracing is on). */
export function requestIdResponseHeader(req: IncomingMessage, res: ServerResponse, next: () => void): void {
  const id = req.headers[REQUEST_ID_HEADER];
  if (typeof id === 'string') res.setHeader(REQUEST_ID_HEADER, id);
  next();
}

/** An outgoing HTTP call's CLIENT span and the header lines that carry it (and the request id) to the service. */
export function startClientSpan(name: string, attributes: Attributes): { span: Span; headerLines: string } | null {
  const t = tracer;
  if (t === null) return null;
  const span = t.startSpan(name, { kind: SpanKind.CLIENT, attributes });
  const headers: Record<string, string> = {};
  const active = context.active();
  propagation.inject(trace.setSpan(active, span), headers);
  const requestId = active.getValue(REQUEST_ID) as string | undefined;
  if (requestId !== undefined) headers[REQUEST_ID_HEADER] = requestId;
  let lines = '';
  for (const k in headers) lines += `${k}: ${headers[k]}\r\n`;
  return { span, headerLines: lines };
}

/** Ends a CLIENT span with the service's status (0: the call failed before an answer). */
export function endClientSpan(span: Span, status: number, error?: Error): void {
  if (error) {
    span.recordException(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
  }
  if (status > 0) endWithStatus(span, status);
  else span.end();
}

/** Headers of a message published on the bus. */
export type MessageHeaders = Record<string, string>;

/**
 * Publishes inside a PRODUCER span (`publish <topic>`): `send` gets the headers each message should carry
 * (trace context and request id) and merges them into its own. Off: `send(undefined)`.
 */
export async function tracedPublish<T>(topic: string, count: number, send: (headers: MessageHeaders | undefined) => Promise<T>): Promise<T> {
  if (tracer === null) return send(undefined);
  const attributes = { 'messaging.system': 'kafka', 'messaging.destination.name': topic, 'messaging.batch.message_count': count };
  return inSpan(
    `publish ${topic}`,
    attributes,
    () => {
      const headers: MessageHeaders = {};
      const active = context.active();
      propagation.inject(active, headers);
      const requestId = active.getValue(REQUEST_ID) as string | undefined;
      if (requestId !== undefined) headers[REQUEST_ID_HEADER] = requestId;
      return send(headers);
    },
    SpanKind.PRODUCER,
  );
}

/**
 * Handles a batch inside a CONSUMER span (`process <topic>`): child of the first message's producer, linked to
 * the other messages' (at most 64), with the first message's request id. Off: `handle()`.
 */
export function tracedConsume<T>(topic: string, group: string, headers: readonly MessageHeaders[], handle: () => Promise<T>): Promise<T> {
  const t = tracer;
  if (t === null) return handle();
  const first = headers.length > 0 ? headers[0] : {};
  let parent: Context = propagation.extract(ROOT_CONTEXT, first);
  const requestId = requestIdOf(first[REQUEST_ID_HEADER]);
  if (requestId !== undefined) parent = parent.setValue(REQUEST_ID, requestId);
  const links: Link[] = [];
  const firstTrace = trace.getSpanContext(parent)?.traceId;
  for (let i = 1; i < headers.length && links.length < MAX_LINKS; i++) {
    const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, headers[i]));
    if (linked && linked.traceId !== firstTrace) links.push({ context: linked });
  }
  return t.startActiveSpan(
    `process ${topic}`,
    { kind: SpanKind.CONSUMER, links, attributes: { 'messaging.system': 'kafka', 'messaging.destination.name': topic, 'messaging.consumer.group.name': group, 'messaging.batch.message_count': headers.length } },
    parent,
    async (span) => {
      try {
        return await handle();
      } catch (err) {
        failed(span, err);
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** A span, child of the active one, for work that is not one promise (end it with endSpan); null when off. */
export function startSpan(name: string, kind: SpanKind, attributes: Attributes): Span | null {
  return tracer === null ? null : tracer.startSpan(name, { kind, attributes });
}

/** Ends a span from startSpan, as failed when `err` is given. */
export function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined) failed(span, err);
  span.end();
}

/** Runs `fn` inside an INTERNAL (or CLIENT) span, child of the active one; off: `fn(null)`. */
export function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span | null) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  const t = tracer;
  if (t === null) return fn(null);
  return t.startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      failed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function failed(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

export { SpanKind };
export type { Span };
