import * as http from 'node:http';
import { IDENTITY_HEADER, IdentitySigner, type IdentityResolver } from '@th/auth';
import type { RouteSpec, ServiceName } from '@th/contracts';
import { DomainError, HTTP_STATUS, endClientSpan, selfTracingOn, setRouteTemplate, startClientSpan, type Span } from '@th/platform';
import { RouteMatcher } from '../routes/route-matcher';
import { UpstreamPool, type UpstreamExchange, type UpstreamResponseHandler } from './upstream-client';

export interface Upstreams {
  ingest: string;
  query: string;
  /** Services that own later parts of the API; a route to an unconfigured one is answered 503 by the gateway. */
  exportWorker?: string;
  audit?: string;
  controlPlane?: string;
  agentServer?: string;
}

/** A route owned by a service this gateway has no URL for. */
export const UNCONFIGURED_UPSTREAM = '';

/** The Upstreams entry of each service the gateway forwards to (the gateway serves its own routes). */
const UPSTREAM_OF: Record<Exclude<ServiceName, 'gateway'>, keyof Upstreams> = {
  ingest: 'ingest',
  query: 'query',
  'export-worker': 'exportWorker',
  audit: 'audit',
  'control-plane': 'controlPlane',
  'agent-server': 'agentServer',
};

const ROUTES = new RouteMatcher();

/**
 * Which service serves a (method, path) of the public API, from the route table (libs/contracts/src/routes): null
 * when the gateway serves it itself or no route matches, UNCONFIGURED_UPSTREAM when its service is not configured.
 */
export function routeFor(method: string, path: string, up: Upstreams): string | null {
  return upstreamOf(ROUTES.match(method, path), up);
}

/** The route table's entry of a request the gateway forwards (null: served by the gateway itself, or no route). */
export function proxiedRoute(method: string, path: string, up: Upstreams): RouteSpec | null {
  const route = ROUTES.match(method, path);
  return upstreamOf(route, up) === null ? null : route;
}

function upstreamOf(route: RouteSpec | null, up: Upstreams): string | null {
  if (route === null || route.service === 'gateway') return null;
  return up[UPSTREAM_OF[route.service]] ?? UNCONFIGURED_UPSTREAM;
}

/**
 * The proxied routes the gateway forwards without an API key and without an identity header (`public` in the
 * route table); the service authenticates each itself: a dataset share token (query), the unguessable issued
 * object path of an upload URL (control plane), the HMAC signature of a push webhook (control plane). They are
 * still rate-limited (by client IP when no API key is sent).
 */
export function isPublicRoute(method: string, path: string): boolean {
  return ROUTES.match(method, path)?.public === true;
}

const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', IDENTITY_HEADER]);
/**
 * Hop-by-hop headers, the identity header (only the gateway sets it) and the caller's credentials: the
 * services trust the signed identity alone and never see an API key, a bearer token or the web app's
 * session cookie.
 */
const NOT_FORWARDED = new Set([...HOP_HEADERS, 'x-api-key', 'authorization', 'cookie']);
/** What startClientSpan writes instead of the caller's (the request id is the gateway's, already on the request). */
const TRACE_HEADERS = new Set(['traceparent', 'tracestate', 'x-request-id']);
/** Responses up to this size (by Content-Length) are read whole and sent with their headers in one write. */
const BUFFERED_RESPONSE_BYTES = 64 * 1024;
/** A request target node:http would send (it refuses anything else); the server's parser admits no other. */
const VALID_PATH = /^[\u0021-\u00ff]+$/;
/**
 * Response headers of which node:http keeps the first when repeated (its IncomingMessage.headers rules);
 * set-cookie lines stay separate; any other repeated header is joined with ", ".
 */
const SINGLE_VALUED = new Set([
  'age', 'authorization', 'content-length', 'content-type', 'etag', 'expires', 'from', 'host', 'if-modified-since', 'if-unmodified-since',
  'last-modified', 'location', 'max-forwards', 'proxy-authorization', 'referer', 'retry-after', 'server', 'user-agent',
]);

type ProxyRequest = http.IncomingMessage & { originalUrl?: string };
type Next = (err?: unknown) => void;

/** Headers the caller's answer carries whatever it is (the rate limiter's RateLimit-* fields). */
export type ExtraHeaders = Record<string, string>;

function sendJson(res: http.ServerResponse, status: number, body: unknown, extra?: ExtraHeaders): void {
  const json = JSON.stringify(body);
  const headers: string[] = [];
  if (extra !== undefined) for (const k in extra) headers.push(k, extra[k]);
  headers.push('content-type', 'application/json; charset=utf-8', 'content-length', String(Buffer.byteLength(json)));
  res.writeHead(status, headers);
  res.end(json);
}

/**
 * The service's answer to one proxied request, relayed to the caller: a small answer with a
 * Content-Length is read whole and written with its headers at once; any other streams as it comes,
 * paced by the caller. The caller leaving drops the request to the service.
 */
class Relay implements UpstreamResponseHandler {
  exchange: UpstreamExchange | null = null;
  /** The proxy hop's CLIENT span (self-tracing on). */
  span: Span | null = null;
  private status = 0;
  private headers: string[] | null = null;
  private chunks: Buffer[] | null = null;
  private readonly onDrain = () => this.exchange?.resume();

  constructor(
    private readonly res: http.ServerResponse,
    private readonly extra: ExtraHeaders | undefined,
  ) {}

  onHead(status: number, upstream: string[], bodyLength: number): void {
    if (this.span !== null) this.span.setAttribute('http.response.status_code', status);
    // A flat [name, value, ...] list: writeHead serializes it as given.
    const out: string[] = [];
    const extra = this.extra;
    if (extra !== undefined) for (const k in extra) out.push(k, extra[k]);
    const first = out.length;
    for (let i = 0; i < upstream.length; i += 2) {
      const name = upstream[i];
      if (HOP_HEADERS.has(name)) continue;
      let j = first;
      while (j < out.length && out[j] !== name) j += 2;
      if (j === out.length || name === 'set-cookie') out.push(name, upstream[i + 1]);
      else if (!SINGLE_VALUED.has(name)) out[j + 1] += `, ${upstream[i + 1]}`;
    }
    if (bodyLength >= 0 && bodyLength <= BUFFERED_RESPONSE_BYTES) {
      this.status = status;
      this.headers = out;
      this.chunks = [];
      return;
    }
    if (!this.writeHead(status, out)) return;
    this.res.on('drain', this.onDrain);
  }

  onData(chunk: Buffer): boolean {
    if (this.chunks !== null) {
      this.chunks.push(chunk);
      return true;
    }
    return this.res.write(chunk);
  }

  onEnd(): void {
    this.endSpan(this.status || this.res.statusCode);
    const res = this.res;
    res.removeListener('close', this.onClose);
    if (this.chunks === null) {
      res.removeListener('drain', this.onDrain);
      res.end();
      return;
    }
    if (!this.writeHead(this.status, this.headers!)) return;
    const chunks = this.chunks;
    res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
  }

  onError(err: Error): void {
    this.endSpan(0, err);
    const res = this.res;
    res.removeListener('close', this.onClose);
    if (!res.headersSent) sendJson(res, 502, { detail: `Upstream unavailable: ${err.message}` }, this.extra);
    else res.destroy();
  }

  /** The caller's connection closed before the answer ended: the service's answer is not wanted. */
  readonly onClose = () => {
    if (this.span !== null) this.endSpan(0, new Error('the caller left before the answer'));
    this.exchange?.abort();
  };

  private endSpan(status: number, err?: Error): void {
    if (this.span === null) return;
    endClientSpan(this.span, status, err);
    this.span = null;
  }

  /** writeHead, or 502 when the service's headers are not valid to send on. */
  private writeHead(status: number, headers: string[]): boolean {
    try {
      this.res.writeHead(status, headers);
      return true;
    } catch (err) {
      this.exchange?.abort();
      if (!this.res.headersSent) sendJson(this.res, 502, { detail: `Upstream unavailable: invalid response (${(err as Error).message})` }, this.extra);
      return false;
    }
  }
}

function poolOf(pools: Map<string, UpstreamPool>, base: string): UpstreamPool {
  let pool = pools.get(base);
  if (!pool) {
    const u = new URL(base);
    if (u.protocol !== 'http:') throw new Error(`upstream ${base}: only http:// upstreams are supported`);
    pool = new UpstreamPool(u.hostname, Number(u.port || 80));
    pools.set(base, pool);
  }
  return pool;
}

/**
 * The cluster gateway: authenticates, signs the caller's identity for the service, and streams the
 * request (still compressed, still chunked) to the service that owns the route over pooled keep-alive
 * connections (UpstreamPool). Works on plain Node requests and responses, so it can serve as Express
 * middleware or straight from the HTTP server. The signed identity header is reused per resolved
 * identity for `signatureReuseMs` (default 30 s, well inside the 5-minute token age). `extra` headers
 * (the rate limiter's) go on whatever the caller gets: the service's answer or the gateway's own.
 */
export function gatewayProxy(opts: { upstreams: Upstreams; resolver: IdentityResolver; signingKey: string; maxBodyBytes: number; signatureReuseMs?: number }) {
  const signer = new IdentitySigner(opts.signingKey, opts.signatureReuseMs ?? 30_000);
  const pools = new Map<string, UpstreamPool>();

  const forward = (req: ProxyRequest, res: http.ServerResponse, base: string, route: RouteSpec, url: string, identityToken: string | null, extra: ExtraHeaders | undefined) => {
    if (!VALID_PATH.test(url)) {
      sendJson(res, 400, { detail: 'Invalid request target' }, extra);
      req.resume();
      return;
    }
    const pool = poolOf(pools, base);
    // The forwarded headers as the head's lines (latin1, as node:http parsed them).
    let lines = '';
    const inbound = req.headers;
    // Self-tracing on: the service's parent is this hop's span, not the caller's.
    const traced = selfTracingOn() ? startClientSpan(`${req.method ?? 'GET'} ${route.path}`, { 'http.request.method': req.method ?? 'GET', 'http.route': route.path, 'server.address': base, 'tracehouse.service': route.service }) : null;
    for (const k in inbound) {
      if (NOT_FORWARDED.has(k)) continue;
      if (traced !== null && TRACE_HEADERS.has(k)) continue;
      const v = inbound[k];
      if (v === undefined) continue;
      if (typeof v === 'string') lines += `${k}: ${v}\r\n`;
      else for (const one of v) lines += `${k}: ${one}\r\n`;
    }
    if (identityToken !== null) lines += `${IDENTITY_HEADER}: ${identityToken}\r\n`;
    if (traced !== null) lines += traced.headerLines;
    // The public base URL the caller used (the control plane builds upload URLs from it).
    if (inbound['x-forwarded-host'] === undefined && inbound.host !== undefined) lines += `x-forwarded-host: ${inbound.host}\r\n`;
    const length = inbound['content-length'];
    const bodyKind = inbound['transfer-encoding'] !== undefined ? 'chunked' : length === undefined || length === '0' ? 'none' : 'length';
    const relay = new Relay(res, extra);
    if (traced !== null) relay.span = traced.span;
    res.on('close', relay.onClose);
    relay.exchange = pool.request({ method: req.method ?? 'GET', path: url, headerLines: lines, bodyKind, body: bodyKind === 'none' ? null : req }, relay);
    if (bodyKind === 'none') req.resume();
  };

  return (req: ProxyRequest, res: http.ServerResponse, next: Next, extra?: ExtraHeaders): void => {
    const url = req.originalUrl ?? req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const route = ROUTES.match(method, path);
    const target = upstreamOf(route, opts.upstreams);
    if (target === null) return next();
    setRouteTemplate(req, route!.path);
    if (target === UNCONFIGURED_UPSTREAM) {
      sendJson(res, 503, { detail: `No service is configured for ${method} ${path}` }, extra);
      req.resume();
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > opts.maxBodyBytes) {
      sendJson(res, 413, { detail: `Request body exceeds the limit of ${opts.maxBodyBytes} bytes` }, extra);
      req.resume();
      return;
    }
    if (route!.public === true) {
      forward(req, res, target, route!, url, null, extra);
      return;
    }
    opts.resolver
      .resolve(req as Parameters<IdentityResolver['resolve']>[0])
      .then((identity) => {
        if (!identity) {
          sendJson(res, 401, { detail: 'Missing or invalid API key' }, extra);
          req.resume();
          return;
        }
        forward(req, res, target, route!, url, signer.sign(identity), extra);
      })
      .catch((err: unknown) => {
        if (err instanceof DomainError) sendJson(res, HTTP_STATUS[err.code], { detail: err.message }, extra);
        else sendJson(res, 500, { detail: 'Internal Server Error' }, extra);
        req.resume();
      });
  };
}
