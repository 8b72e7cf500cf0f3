import * as http from 'node:http';
import { IDENTITY_HEADER, IdentitySigner, type IdentityResolver } from '@th/auth';
import { DomainError, HTTP_STATUS } from '@th/platform';
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

const stripApiPrefix = (path: string) => path.replace(/^\/api(?:\/v1)?(?=\/)/, '');

/**
 * Which service serves a (method, path) of the public API; null when the gateway serves it itself,
 * UNCONFIGURED_UPSTREAM when its service is not configured.
 */
export function routeFor(method: string, path: string, up: Upstreams): string | null {
  const p = stripApiPrefix(path);
  const optional = (url: string | undefined) => url ?? UNCONFIGURED_UPSTREAM;
  if (p === '/runs/query' || p === '/runs/stats') return up.query;
  if (V2_QUERY_RE.test(p) || RUN_SHARE_RE.test(p) || PUBLIC_RUNS_QUERY_RE.test(p)) return up.query;
  if (p === '/runs' || p.startsWith('/runs/')) return method === 'GET' ? up.query : up.ingest;
  if (p === '/sessions' || p.startsWith('/sessions/')) return up.query;
  if (p === '/datasets' || p.startsWith('/datasets/') || p === '/examples' || p.startsWith('/examples/')) return up.query;
  if (/^\/(?:v1\/)?platform\/datasets(?:\/|$)/.test(p)) return up.query;
  // Shared datasets (and example attachments) read by their token: public, see isPublicRoute.
  if (p.startsWith('/public/') && (method === 'GET' || method === 'HEAD')) return up.query;
  // The deployment control plane; the upload PUT and the push webhook are public (see isPublicRoute).
  if (p === '/v2/deployments' || p.startsWith('/v2/deployments/') || p === '/v2/listeners' || p === '/v2/openapi.json') return optional(up.controlPlane);
  if (p === '/v1/integrations/git_host/install') return optional(up.controlPlane);
  if (/^\/deployments\/[^/]+\/upload-url$/.test(p)) return optional(up.controlPlane);
  if (method === 'PUT' && p.startsWith('/v2/uploads/')) return optional(up.controlPlane);
  if (method === 'POST' && WEBHOOK_RE.test(p)) return optional(up.controlPlane);
  if (p === '/bulk-exports' || p.startsWith('/bulk-exports/')) return optional(up.exportWorker);
  if (p === '/audit-logs' || p.startsWith('/audit-logs/')) return optional(up.audit);
  if (p === '/feedback' || p.startsWith('/feedback/')) return method === 'GET' ? up.query : up.ingest;
  if (p === '/feedback-configs') return up.ingest; // stored and enforced where feedback is written
  // The prompt hub (query service): repos, commits, likes, prompt webhooks, the hub handle, agent and skill directories.
  if (/^\/(?:repos|commits|likes|settings|prompt-webhooks)(?:\/|$)/.test(p) || /^\/(?:v1\/)?platform\/hub\/repos\//.test(p)) return up.query;
  if (p === '/otel/v1/traces' || p === '/otel' || p === '/model-price-map' || p.startsWith('/model-price-map/')) return up.ingest;
  return null;
}

const WEBHOOK_RE = /^\/v1\/integrations\/git_host\/[^/]+\/webhook$/;
/**
 * The SDKs' generated (v2) client and run sharing, all served by the query service: /api/v2/{runs,traces,threads,
 * sessions,datasets,public}/..., the classic PUT/GET/DELETE /runs/{id}/share, and the public
 * POST /public/{token}/runs/query (unauthenticated, like the v2 public reads: see isPublicRoute).
 */
const V2_QUERY_RE = /^\/v2\/(?:runs|traces|threads|sessions|datasets|public)(?:\/|$)/;
const RUN_SHARE_RE = /^\/runs\/[^/]+\/share$/;
const PUBLIC_RUNS_QUERY_RE = /^\/public\/[^/]+\/runs\/query$/;
const V2_PUBLIC_RE = /^\/v2\/public\//;

/**
 * The proxied routes the gateway forwards without an API key and without an identity header; the
 * service authenticates each itself: a dataset, run or thread share token (query), the unguessable issued object path
 * of an upload URL (control plane), the HMAC signature of a push webhook (control plane). They are
 * still rate-limited (by client IP when no API key is sent).
 */
export function isPublicRoute(method: string, path: string): boolean {
  const p = stripApiPrefix(path);
  if (V2_PUBLIC_RE.test(p)) return method === 'GET' || method === 'HEAD' || method === 'POST';
  if (method === 'GET' || method === 'HEAD') return p.startsWith('/public/');
  if (method === 'PUT') return p.startsWith('/v2/uploads/');
  if (method === 'POST') return WEBHOOK_RE.test(p) || PUBLIC_RUNS_QUERY_RE.test(p);
  return false;
}

const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', IDENTITY_HEADER]);
/**
 * Hop-by-hop headers, the identity header (only the gateway sets it) and the caller's credentials: the
 * services trust the signed identity alone and never see an API key, a bearer token or the web app's
 * session cookie.
 */
const NOT_FORWARDED = new Set([...HOP_HEADERS, 'x-api-key', 'authorization', 'cookie']);
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
  private status = 0;
  private headers: string[] | null = null;
  private chunks: Buffer[] | null = null;
  private readonly onDrain = () => this.exchange?.resume();

  constructor(
    private readonly res: http.ServerResponse,
    private readonly extra: ExtraHeaders | undefined,
  ) {}

  onHead(status: number, upstream: string[], bodyLength: number): void {
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
    const res = this.res;
    res.removeListener('close', this.onClose);
    if (!res.headersSent) sendJson(res, 502, { detail: `Upstream unavailable: ${err.message}` }, this.extra);
    else res.destroy();
  }

  /** The caller's connection closed before the answer ended: the service's answer is not wanted. */
  readonly onClose = () => this.exchange?.abort();

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

  const forward = (req: ProxyRequest, res: http.ServerResponse, base: string, url: string, identityToken: string | null, extra: ExtraHeaders | undefined) => {
    if (!VALID_PATH.test(url)) {
      sendJson(res, 400, { detail: 'Invalid request target' }, extra);
      req.resume();
      return;
    }
    const pool = poolOf(pools, base);
    // The forwarded headers as the head's lines (latin1, as node:http parsed them).
    let lines = '';
    const inbound = req.headers;
    for (const k in inbound) {
      if (NOT_FORWARDED.has(k)) continue;
      const v = inbound[k];
      if (v === undefined) continue;
      if (typeof v === 'string') lines += `${k}: ${v}\r\n`;
      else for (const one of v) lines += `${k}: ${one}\r\n`;
    }
    if (identityToken !== null) lines += `${IDENTITY_HEADER}: ${identityToken}\r\n`;
    // The public base URL the caller used (the control plane builds upload URLs from it).
    if (inbound['x-forwarded-host'] === undefined && inbound.host !== undefined) lines += `x-forwarded-host: ${inbound.host}\r\n`;
    const length = inbound['content-length'];
    const bodyKind = inbound['transfer-encoding'] !== undefined ? 'chunked' : length === undefined || length === '0' ? 'none' : 'length';
    const relay = new Relay(res, extra);
    res.on('close', relay.onClose);
    relay.exchange = pool.request({ method: req.method ?? 'GET', path: url, headerLines: lines, bodyKind, body: bodyKind === 'none' ? null : req }, relay);
    if (bodyKind === 'none') req.resume();
  };

  return (req: ProxyRequest, res: http.ServerResponse, next: Next, extra?: ExtraHeaders): void => {
    const url = req.originalUrl ?? req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const method = req.method ?? 'GET';
    const target = routeFor(method, path, opts.upstreams);
    if (target === null) return next();
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
    if (isPublicRoute(method, path)) {
      forward(req, res, target, url, null, extra);
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
        forward(req, res, target, url, signer.sign(identity), extra);
      })
      .catch((err: unknown) => {
        if (err instanceof DomainError) sendJson(res, HTTP_STATUS[err.code], { detail: err.message }, extra);
        else sendJson(res, 500, { detail: 'Internal Server Error' }, extra);
        req.resume();
      });
  };
}
