import * as http from 'node:http';
import { IDENTITY_HEADER, IdentitySigner, type IdentityResolver } from '@th/auth';
import { DomainError, HTTP_STATUS } from '@th/platform';

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
  if (p === '/otel/v1/traces' || p === '/model-price-map' || p.startsWith('/model-price-map/')) return up.ingest;
  return null;
}

const WEBHOOK_RE = /^\/v1\/integrations\/git_host\/[^/]+\/webhook$/;

/**
 * The proxied routes the gateway forwards without an API key and without an identity header; the
 * service authenticates each itself: a dataset share token (query), the unguessable issued object path
 * of an upload URL (control plane), the HMAC signature of a push webhook (control plane). They are
 * still rate-limited (by client IP when no API key is sent).
 */
export function isPublicRoute(method: string, path: string): boolean {
  const p = stripApiPrefix(path);
  if (method === 'GET' || method === 'HEAD') return p.startsWith('/public/');
  if (method === 'PUT') return p.startsWith('/v2/uploads/');
  if (method === 'POST') return WEBHOOK_RE.test(p);
  return false;
}

/** Upstream connections: kept alive, the most recently used socket first (fewer idle sockets to expire). */
const agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 256, scheduling: 'lifo' });
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', IDENTITY_HEADER]);
/**
 * Hop-by-hop headers, the identity header (only the gateway sets it) and the caller's credentials: the
 * services trust the signed identity alone and never see an API key or a bearer token.
 */
const NOT_FORWARDED = new Set([...HOP_HEADERS, 'x-api-key', 'authorization']);
/** Responses up to this size (by Content-Length) are read whole and sent with their headers in one write. */
const BUFFERED_RESPONSE_BYTES = 64 * 1024;

type ProxyRequest = http.IncomingMessage & { originalUrl?: string };
type Next = (err?: unknown) => void;

/** Headers the caller's answer carries whatever it is (the rate limiter's RateLimit-* fields). */
export type ExtraHeaders = Record<string, string>;

function sendJson(res: http.ServerResponse, status: number, body: unknown, extra?: ExtraHeaders): void {
  const json = JSON.stringify(body);
  res.writeHead(status, { ...extra, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
  res.end(json);
}

interface Target {
  hostname: string;
  port: number;
  /** The Host header the service gets (Node's own form: the port unless it is 80). */
  host: string;
}

function targetOf(cache: Map<string, Target>, base: string): Target {
  let t = cache.get(base);
  if (!t) {
    const u = new URL(base);
    if (u.protocol !== 'http:') throw new Error(`upstream ${base}: only http:// upstreams are supported`);
    const port = Number(u.port || 80);
    t = { hostname: u.hostname, port, host: port === 80 ? u.hostname : `${u.hostname}:${port}` };
    cache.set(base, t);
  }
  return t;
}

/**
 * The cluster gateway: authenticates, signs the caller's identity for the service, and streams the
 * request (still compressed, still chunked) to the service that owns the route. Works on plain Node
 * requests and responses, so it can serve as Express middleware or straight from the HTTP server.
 * The signed identity header is reused per resolved identity for `signatureReuseMs` (default 30 s,
 * well inside the 5-minute token age). `extra` headers (the rate limiter's) go on whatever the caller
 * gets: the service's answer or the gateway's own.
 */
export function gatewayProxy(opts: { upstreams: Upstreams; resolver: IdentityResolver; signingKey: string; maxBodyBytes: number; signatureReuseMs?: number }) {
  const signer = new IdentitySigner(opts.signingKey, opts.signatureReuseMs ?? 30_000);
  const targets = new Map<string, Target>();

  const forward = (req: ProxyRequest, res: http.ServerResponse, base: string, url: string, identityToken: string | null, extra: ExtraHeaders | undefined) => {
    // Headers as a flat [name, value, ...] list: Node writes them as given, with no per-header bookkeeping
    // (an object would be copied header by header into the request's own map, then serialized).
    const { hostname, port, host } = targetOf(targets, base);
    const headers: (string | string[])[] = ['host', host];
    const inbound = req.headers;
    for (const k in inbound) {
      if (NOT_FORWARDED.has(k)) continue;
      const v = inbound[k];
      if (v !== undefined) headers.push(k, v);
    }
    if (identityToken !== null) headers.push(IDENTITY_HEADER, identityToken);
    // The public base URL the caller used (the control plane builds upload URLs from it).
    if (inbound['x-forwarded-host'] === undefined && inbound.host !== undefined) headers.push('x-forwarded-host', inbound.host);
    const chunked = inbound['transfer-encoding'] !== undefined;
    if (chunked) headers.push('transfer-encoding', 'chunked');
    const upstream = http.request({ hostname, port, path: url, method: req.method, headers: headers as unknown as http.OutgoingHttpHeaders, agent }, (up) => {
      // The answer's headers in one object, so writeHead serializes them at once. Copied key by key: an
      // object spread here ({ ...extra }) made V8 keep these objects past scavenges (the old space grew to
      // ~100 MB between full collections, with page faults): ~30 µs of gateway CPU per request.
      const out: http.OutgoingHttpHeaders = {};
      if (extra !== undefined) for (const k in extra) out[k] = extra[k];
      const upHeaders = up.headers;
      for (const k in upHeaders) if (!HOP_HEADERS.has(k)) out[k] = upHeaders[k];
      const status = up.statusCode ?? 502;
      const length = Number(upHeaders['content-length']);
      if (upHeaders['transfer-encoding'] === undefined && length >= 0 && length <= BUFFERED_RESPONSE_BYTES) {
        const chunks: Buffer[] = [];
        up.on('data', (c: Buffer) => chunks.push(c));
        up.on('end', () => {
          res.writeHead(status, out);
          res.end(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks));
        });
        up.on('error', () => res.destroy());
        return;
      }
      res.writeHead(status, out);
      up.pipe(res);
    });
    upstream.on('error', (err) => {
      if (!res.headersSent) sendJson(res, 502, { detail: `Upstream unavailable: ${err.message}` }, extra);
      else res.destroy();
    });
    const length = inbound['content-length'];
    if (!chunked && (length === undefined || length === '0')) {
      upstream.end();
      req.resume();
    } else req.pipe(upstream);
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
